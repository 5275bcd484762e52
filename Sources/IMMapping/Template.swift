import Foundation
import IMCore

/// A text template over neutral fields: `[订单] {order_id} ¥{amount_cents|yuan}`.
///
/// Placeholders name a neutral field, optionally piped through a filter: `yuan` (cents → `12.50`),
/// `seconds` (milliseconds → whole seconds). `{expansion.KEY}` reads the message's expansion value.
/// A missing value renders as an empty text; unknown fields and filters are load-time errors.
public struct Template: Hashable, Sendable {
    enum Part: Hashable, Sendable {
        case literal(String)
        case field(String, filter: String?)
    }

    public static let filters: Set<String> = ["yuan", "seconds"]
    public let source: String
    let parts: [Part]

    /// Parses a template; `validField` says whether a placeholder's field exists. Throws a plain
    /// message (the loader adds file and line).
    public init(_ source: String, validField: (String) -> Bool) throws {
        self.source = source
        var parts: [Part] = []
        var rest = Substring(source)
        while let open = rest.firstIndex(of: "{") {
            if open > rest.startIndex { parts.append(.literal(String(rest[..<open]))) }
            guard let close = rest[open...].firstIndex(of: "}") else { throw TemplateError("unclosed '{' in template '\(source)'") }
            let inner = rest[rest.index(after: open)..<close].split(separator: "|", maxSplits: 1).map {
                $0.trimmingCharacters(in: .whitespaces)
            }
            guard let name = inner.first, !name.isEmpty else { throw TemplateError("empty placeholder in template '\(source)'") }
            let filter = inner.count > 1 ? inner[1] : nil
            if let filter, !Self.filters.contains(filter) {
                throw TemplateError("unknown filter '\(filter)' in template '\(source)' (known: \(Self.filters.sorted().joined(separator: ", ")))")
            }
            if !name.hasPrefix("expansion."), !validField(name) {
                throw TemplateError("template '\(source)' names '\(name)', which is not a field here")
            }
            parts.append(.field(name, filter: filter))
            rest = rest[rest.index(after: close)...]
        }
        if !rest.isEmpty { parts.append(.literal(String(rest))) }
        self.parts = parts
    }

    public func render(_ fields: [String: JSONValue], expansion: [String: String] = [:]) -> String {
        parts.map { part in
            switch part {
            case .literal(let text): return text
            case .field(let name, let filter):
                if name.hasPrefix("expansion.") { return expansion[String(name.dropFirst("expansion.".count))] ?? "" }
                guard let value = fields[name] else { return "" }
                switch filter {
                case "yuan":
                    guard let cents = value.int64Value else { return value.stringValue ?? "" }
                    let sign = cents < 0 ? "-" : ""
                    let absolute = cents.magnitude
                    return "\(sign)\(absolute / 100)." + String(format: "%02d", Int(absolute % 100))
                case "seconds":
                    return value.int64Value.map { String(($0 + 500) / 1000) } ?? ""
                default:
                    if case .string(let text) = value { return text }
                    return value.stringValue ?? value.jsonString()
                }
            }
        }.joined()
    }
}

struct TemplateError: Error {
    let message: String
    init(_ message: String) { self.message = message }
}
