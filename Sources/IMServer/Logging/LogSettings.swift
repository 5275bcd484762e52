import IMConfig
import Logging

/// `log:` in `bridge.yaml`: lines on standard error.
public struct LogSettings: Sendable, Equatable {
    /// `level` (default info; `imbridge run --log-level` wins).
    public var level: Logger.Level = .info
    /// `format`: text or json.
    public var format: LogFormat = .text

    /// The names `level` and `imbridge run --log-level` accept, quietest last.
    public static let levelNames = Logger.Level.allCases.map(\.rawValue)

    public init(level: Logger.Level = .info, format: LogFormat = .text) {
        self.level = level
        self.format = format
    }

    package static func decode(_ section: ConfigSection) -> LogSettings {
        var log = LogSettings()
        if let level = section.read("level", { node -> Logger.Level? in
            guard let text = try node.optionalString() else { return nil }
            guard let level = Logger.Level(rawValue: text) else {
                throw node.error("expected one of \(Self.levelNames.joined(separator: ", ")), got \(node.quoted(text))")
            }
            return level
        }) { log.level = level }
        if let format = section.read("format", { node -> LogFormat? in
            guard let text = try node.optionalString() else { return nil }
            guard let format = LogFormat(rawValue: text) else { throw node.error("expected text or json, got \(node.quoted(text))") }
            return format
        }) { log.format = format }
        return log
    }
}
