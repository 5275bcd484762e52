import Foundation
import IMCore
import Logging

/// How log lines are written (`log.format` in `bridge.yaml`).
public enum LogFormat: String, Sendable, CaseIterable {
    /// `2026-11-24T11:50:00.123Z warning imbridge.relay: message backend=wk lane=wk:group:ops`
    case text
    /// One JSON object per line: `time`, `level`, `label`, `message`, `metadata` (for log shippers).
    case json
}

/// Replaces every configured secret (app secrets, tokens, the store password …) by `***` wherever it
/// occurs in a log line's message or metadata. Applied by `BridgeLogHandler` itself, so no call site
/// can leak a secret by quoting an error, a URL or a vendor's answer.
public struct SecretRedactor: Sendable {
    /// Longest first, so a secret that contains another is replaced whole.
    public let secrets: [String]

    /// Values shorter than 4 characters are not treated as secrets (they would blank out ordinary words).
    public init(_ secrets: some Sequence<String>) {
        self.secrets = Set(secrets.filter { $0.count >= 4 }).sorted { $0.count > $1.count }
    }

    /// `text` with every secret, and the credentials of any URL in it (`Redaction.text`), as `***`.
    public func redact(_ text: String) -> String {
        var text = text
        for secret in secrets where text.contains(secret) { text = text.replacingOccurrences(of: secret, with: "***") }
        return text.contains("://") || text.contains("=") ? Redaction.text(text) : text
    }

    public func redact(_ value: Logger.MetadataValue) -> Logger.MetadataValue {
        switch value {
        case .string(let text): .string(redact(text))
        case .stringConvertible(let convertible): .string(redact(convertible.description))
        case .array(let items): .array(items.map(redact))
        case .dictionary(let entries): .dictionary(entries.mapValues(redact))
        }
    }
}

/// The bridge's one `LogHandler` (bootstrapped once by the `imbridge` binary; Hummingbird's logs go
/// through it too). Written here because swift-log ships only `StreamLogHandler`, which writes text
/// without JSON and cannot redact; this one adds the JSON line format for log shippers and the secret
/// redaction, and writes each line with one `write` so concurrent lines do not interleave.
public struct BridgeLogHandler: LogHandler {
    public var logLevel: Logger.Level
    public var metadata: Logger.Metadata = [:]
    public let label: String
    let format: LogFormat
    let redactor: SecretRedactor
    let output: @Sendable (String) -> Void

    /// `output` receives each finished line, newline included (default: standard error).
    public init(label: String, level: Logger.Level, format: LogFormat, redactor: SecretRedactor,
                output: @escaping @Sendable (String) -> Void = BridgeLogHandler.standardError) {
        self.label = label
        self.logLevel = level
        self.format = format
        self.redactor = redactor
        self.output = output
    }

    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    public func log(event: LogEvent) {
        var merged = self.metadata
        if let explicit = event.metadata { merged.merge(explicit) { _, new in new } }
        if let error = event.error { merged["error"] = "\(error)" }
        let text = redactor.redact(event.message.description)
        let fields = merged.mapValues(redactor.redact)
        output(Self.render(time: Date(), level: event.level, label: label, message: text, metadata: fields, format: format))
    }

    /// One line (newline included) in `format`.
    public static func render(time: Date, level: Logger.Level, label: String, message: String, metadata: Logger.Metadata,
                              format: LogFormat) -> String {
        let stamp = timeStyle.format(time)
        switch format {
        case .text:
            let fields = metadata.sorted { $0.key < $1.key }.map { "\($0.key)=\(textValue($0.value))" }
            return ([stamp, level.rawValue, "\(label):", message] + fields).joined(separator: " ") + "\n"
        case .json:
            let object: [String: Any] = ["time": stamp, "level": level.rawValue, "label": label, "message": message,
                                         "metadata": metadata.mapValues(jsonValue)]
            let data = (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys, .withoutEscapingSlashes])) ?? Data("{}".utf8)
            return String(decoding: data, as: UTF8.self) + "\n"
        }
    }

    static let timeStyle = Date.ISO8601FormatStyle(includingFractionalSeconds: true)

    /// A metadata value in a text line: quoted when it has spaces (or is empty).
    static func textValue(_ value: Logger.MetadataValue) -> String {
        let text = "\(value)"
        return text.isEmpty || text.contains(where: { $0 == " " || $0 == "\"" || $0 == "\n" }) ? "\"" + text.replacingOccurrences(of: "\"", with: "\\\"")
            .replacingOccurrences(of: "\n", with: "\\n") + "\"" : text
    }

    static func jsonValue(_ value: Logger.MetadataValue) -> Any {
        switch value {
        case .string(let text): text
        case .stringConvertible(let convertible): convertible.description
        case .array(let items): items.map(jsonValue)
        case .dictionary(let entries): entries.mapValues(jsonValue)
        }
    }

    public static let standardError: @Sendable (String) -> Void = { line in
        FileHandle.standardError.write(Data(line.utf8))
    }

    /// Bootstraps swift-log's `LoggingSystem` with this handler: once per process (the binary does it
    /// first thing; a second call traps, as swift-log's does).
    public static func bootstrap(level: Logger.Level, format: LogFormat, secrets: some Sequence<String>) {
        let redactor = SecretRedactor(secrets)
        LoggingSystem.bootstrap { label in BridgeLogHandler(label: label, level: level, format: format, redactor: redactor) }
    }
}
