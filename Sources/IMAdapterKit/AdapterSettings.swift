import Foundation
import IMCore

/// One setting an adapter takes under `backends.<name>` in `bridge.yaml`.
public struct SettingSpec: Sendable {
    public enum Kind: Sendable {
        /// Any text.
        case text
        /// A secret: never printed (`imbridge check` shows it as `***`).
        case secret
        /// One http(s) URL, or with `list` several separated by commas.
        case url(list: Bool)
        /// A whole number ≥ `minimum`.
        case integer(minimum: Int64)
        /// true/false (also yes/no, 1/0).
        case flag
        /// `key=value,key=value` pairs.
        case pairs
    }

    public var key: String
    public var kind: Kind
    public var required: Bool
    /// What it is for, one line (`imbridge check --explain`, docs).
    public var help: String

    public init(_ key: String, _ kind: Kind = .text, required: Bool = false, help: String) {
        self.key = key
        self.kind = kind
        self.required = required
        self.help = help
    }

    public var isSecret: Bool { if case .secret = kind { true } else { false } }
}

/// A backend's settings checked against its adapter's schema, with typed readers. Every problem is an
/// `invalid_argument` whose `details["setting"]` names the key, so the bridge can point at its line.
public struct AdapterSettings: Sendable {
    public let backend: BackendID
    public let values: [String: String]
    public let schema: [SettingSpec]
    /// How errors name the values they must not quote, by key: `the value of ${NAME}` for a value
    /// that came from the environment (docs/architecture.md, "Secrets in errors and logs").
    public let described: [String: String]

    /// Checks every key is known and every value has its kind; throws the first problem.
    public init(backend: BackendID, values: [String: String], schema: [SettingSpec], described: [String: String] = [:]) throws {
        self.backend = backend
        self.values = values
        self.schema = schema
        self.described = described
        if let problem = Self.problems(values, schema: schema, described: described).first { throw problem }
    }

    /// How an error may show `part` of the value of `key` (the value itself, an item of a list or of
    /// pairs): quoted, with a URL's credentials hidden (`Redaction.url`); `***` for a secret setting;
    /// `an item of the value of ${NAME}` (or `the value of ${NAME}`) for a value from the environment.
    public func quoted(_ key: String, _ part: String) -> String {
        Self.quoted(key, part, whole: part == values[key], schema: schema, described: described)
    }

    /// A value read from `key` (a number) unquoted as errors show it, or `the value of ${NAME}` as `quoted`.
    public func shown(_ key: String, _ value: some CustomStringConvertible) -> String {
        if schema.first(where: { $0.key == key })?.isSecret == true { return "***" }
        return described[key] ?? value.description
    }

    static func quoted(_ key: String, _ part: String, whole: Bool, schema: [SettingSpec], described: [String: String]) -> String {
        if schema.first(where: { $0.key == key })?.isSecret == true { return "***" }
        if let description = described[key] { return whole ? description : "an item of \(description)" }
        return part.contains("://") || part.contains("@") ? "'\(Redaction.url(part))'" : "'\(part)'"
    }

    /// Every problem of these values against `schema`, in key order. No message quotes the value of a
    /// secret setting or one named in `described`.
    public static func problems(_ values: [String: String], schema: [SettingSpec], described: [String: String] = [:]) -> [IMError] {
        var problems: [IMError] = []
        let known = Dictionary(schema.map { ($0.key, $0) }, uniquingKeysWith: { first, _ in first })
        for key in values.keys.sorted() where known[key] == nil {
            problems.append(refusal(key, "unknown setting (known: \(schema.map(\.key).sorted().joined(separator: ", ")))"))
        }
        for spec in schema {
            guard let value = values[spec.key], !value.isEmpty else {
                if spec.required { problems.append(refusal(spec.key, "is required: \(spec.help)")) }
                continue
            }
            switch spec.kind {
            case .text, .secret:
                break
            case .url(let list):
                let urls = list ? splitList(value) : [value]
                for url in urls where !(url.hasPrefix("http://") || url.hasPrefix("https://")) {
                    let shown = quoted(spec.key, url, whole: url == value, schema: schema, described: described)
                    problems.append(refusal(spec.key, "\(shown) is not an http(s) URL"))
                }
            case .integer(let minimum):
                if Int64(value.trimmingCharacters(in: .whitespaces)).map({ $0 < minimum }) ?? true {
                    problems.append(refusal(spec.key, "expected a whole number ≥ \(minimum), got \(quoted(spec.key, value, whole: true, schema: schema, described: described))"))
                }
            case .flag:
                if parseFlag(value) == nil {
                    problems.append(refusal(spec.key, "expected true or false, got \(quoted(spec.key, value, whole: true, schema: schema, described: described))"))
                }
            case .pairs:
                if case .failure(let error) = parsePairs(spec.key, value) { problems.append(error) }
            }
        }
        return problems
    }

    public static func refusal(_ key: String, _ message: String) -> IMError {
        IMError(.invalidArgument, message, details: ["setting": key])
    }

    // MARK: readers (values were checked at init)

    public subscript(key: String) -> String? {
        guard let value = values[key], !value.isEmpty else { return nil }
        return value
    }

    public func string(_ key: String, default fallback: String) -> String { self[key] ?? fallback }

    public func required(_ key: String) throws -> String {
        guard let value = self[key] else { throw Self.refusal(key, "is required") }
        return value
    }

    public func integer(_ key: String) -> Int64? { self[key].flatMap { Int64($0.trimmingCharacters(in: .whitespaces)) } }

    public func integer(_ key: String, default fallback: Int64) -> Int64 { integer(key) ?? fallback }

    public func flag(_ key: String, default fallback: Bool) -> Bool { self[key].flatMap(Self.parseFlag) ?? fallback }

    public func list(_ key: String) -> [String] { self[key].map(Self.splitList) ?? [] }

    /// `k=v,k=v` in order (later duplicates win in a dictionary built from it).
    public func pairs(_ key: String) -> [(String, String)] {
        guard let value = self[key], case .success(let pairs) = Self.parsePairs(key, value) else { return [] }
        return pairs
    }

    /// A value that the schema's kinds do not cover was wrong: the same error shape as the schema's.
    public func refuse(_ key: String, _ message: String) -> IMError { Self.refusal(key, message) }

    static func splitList(_ value: String) -> [String] {
        value.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
    }

    static func parseFlag(_ value: String) -> Bool? {
        switch value.lowercased().trimmingCharacters(in: .whitespaces) {
        case "true", "yes", "1", "on": true
        case "false", "no", "0", "off": false
        default: nil
        }
    }

    static func parsePairs(_ key: String, _ value: String) -> Result<[(String, String)], IMError> {
        var pairs: [(String, String)] = []
        let items = value.split(separator: ",").filter { !$0.trimmingCharacters(in: .whitespaces).isEmpty }
        for (index, item) in items.enumerated() {
            let parts = item.split(separator: "=", maxSplits: 1).map { $0.trimmingCharacters(in: .whitespaces) }
            guard parts.count == 2, !parts[0].isEmpty, !parts[1].isEmpty else {
                // The item is not quoted back: `session_tokens` pairs hold tokens.
                return .failure(refusal(key, "expected key=value pairs separated by commas; item \(index + 1) is not one"))
            }
            pairs.append((parts[0], parts[1]))
        }
        return .success(pairs)
    }
}
