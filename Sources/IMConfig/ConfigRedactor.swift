import Foundation
import IMCore

/// The values no configuration error may show, and what it shows instead: the value of every
/// environment variable the file names (`${NAME}` → `the value of ${NAME}`), and the values of secret
/// settings and passwords (→ `***`). The checks build their messages with `ConfigNode.quoted` and
/// quote no secret; this is the backstop behind them, applied to every problem before it is reported,
/// so a message built elsewhere (an adapter's, a parser's) cannot show one either
/// (docs/architecture.md, "Secrets in errors and logs").
public struct ConfigRedactor: Sendable {
    /// Shorter values are left alone: they would blank out ordinary words (as `SecretRedactor`).
    public static let minimumLength = 4

    /// (value, shown as), longest value first.
    public private(set) var replacements: [(value: String, shownAs: String)] = []

    public init() {}

    /// Every `${NAME}` in `yaml` whose variable is set in `environment`.
    public init(yaml: String, environment: [String: String]) {
        var rest = Substring(yaml)
        while let start = rest.range(of: "${") {
            guard let end = rest[start.upperBound...].firstIndex(of: "}") else { break }
            let name = String(rest[start.upperBound..<end])
            if let value = environment[name] { add(value, shownAs: "the value of ${\(name)}") }
            rest = rest[rest.index(after: end)...]
        }
    }

    /// A secret setting's value, a password: shown as `***`.
    public mutating func addSecret(_ value: String) { add(value, shownAs: "***") }

    /// `value`, and each item of it when it is a list or `key=value` pairs (an error may quote one
    /// item), shown as `shownAs`.
    public mutating func add(_ value: String, shownAs: String) {
        var values = [value.trimmingCharacters(in: .whitespaces)]
        if value.contains(",") || value.contains("=") {
            values += value.split(whereSeparator: { $0 == "," || $0 == "=" }).map { $0.trimmingCharacters(in: .whitespaces) }
        }
        for value in values where value.count >= Self.minimumLength && !replacements.contains(where: { $0.value == value }) {
            replacements.append((value, shownAs))
        }
        replacements.sort { $0.value.count > $1.value.count }
    }

    public mutating func merge(_ other: ConfigRedactor) {
        for (value, shownAs) in other.replacements where !replacements.contains(where: { $0.value == value }) {
            replacements.append((value, shownAs))
        }
        replacements.sort { $0.value.count > $1.value.count }
    }

    /// `text` with every value replaced (a quoted one with its quotes), and the credentials of any URL
    /// in it hidden (`Redaction.text`).
    public func redact(_ text: String) -> String {
        var text = text
        for (value, shownAs) in replacements where text.contains(value) {
            text = text.replacingOccurrences(of: "'\(value)'", with: shownAs).replacingOccurrences(of: value, with: shownAs)
        }
        return Redaction.text(text)
    }

    /// `error` with its message and details redacted.
    public func redact(_ error: IMError) -> IMError {
        var error = error
        error.message = redact(error.message)
        error.details = error.details.mapValues(redact)
        return error
    }
}
