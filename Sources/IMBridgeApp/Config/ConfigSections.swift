import IMConfig
import IMCore
import IMHTTP
import IMRelay
import IMStore
import Logging

// The sections of `bridge.yaml` that belong to running the bridge (several instances, logging, shutdown,
// the listeners' limits), each decoded by its own `decode(_:)` (docs/configuration.md). The engine's
// sections are decoded where their types live (`RetryPolicy`, `ReadinessPolicy`, `CatchUpSettings`,
// `ProfileSettings`, `GroupSettings`, `VerifySettings`, in IMRelay). Each default is written once, in the
// section's type.

/// `ha:` in `bridge.yaml`: several instances on one store (docs/high-availability.md).
public struct HASettings: Sendable, Equatable {
    /// How long a lane or leader lease lasts unrenewed (`lease`, at least 300ms).
    public var lease = ConfigDuration(milliseconds: LeaseSettings.defaultTTLMs)
    /// This instance's name in lease owners (default: the host name).
    public var instance: String?

    public init(lease: ConfigDuration = ConfigDuration(milliseconds: LeaseSettings.defaultTTLMs), instance: String? = nil) {
        self.lease = lease
        self.instance = instance
    }

    static func decode(_ section: ConfigSection) -> HASettings {
        var ha = HASettings()
        if let lease = section.duration("lease", range: DurationRange(minimum: .milliseconds(300)), legacy: .init("lease_ms", .milliseconds)) {
            ha.lease = lease.value
        }
        ha.instance = section.read("instance") { try $0.optionalString() }
        return ha
    }
}

/// `log:` in `bridge.yaml`: lines on standard error.
public struct LogSettings: Sendable, Equatable {
    /// `level` (default info; `imbridge run --log-level` wins).
    public var level: Logger.Level = .info
    /// `format`: text or json.
    public var format: LogFormat = .text

    public init(level: Logger.Level = .info, format: LogFormat = .text) {
        self.level = level
        self.format = format
    }

    static func decode(_ section: ConfigSection) -> LogSettings {
        var log = LogSettings()
        if let level = section.read("level", { node -> Logger.Level? in
            guard let text = try node.optionalString() else { return nil }
            guard let level = Logger.Level(rawValue: text) else {
                throw node.error("expected one of \(BridgeConfig.logLevelNames.joined(separator: ", ")), got \(node.quoted(text))")
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

/// `shutdown:` in `bridge.yaml`.
public struct ShutdownSettings: Sendable, Equatable {
    /// How long the first SIGTERM/SIGINT lets in-flight sends finish before the bridge stops anyway
    /// (unfinished entries stay in the outbox for the next start): `drain`, 0s (stop at once) to 1h.
    public var drain = ConfigDuration.seconds(10)

    public init(drain: ConfigDuration = .seconds(10)) { self.drain = drain }

    static func decode(_ section: ConfigSection) -> ShutdownSettings {
        var shutdown = ShutdownSettings()
        if let drain = section.duration("drain", range: DurationRange(minimum: .zero, maximum: .hours(1)),
                                        legacy: .init("drain_seconds", .seconds)) {
            shutdown.drain = drain.value
        }
        return shutdown
    }
}

extension ListenerLimits {
    /// `listener:` — the three timeouts (1s to 1h) and `max_connections` (1–60000).
    static func decode(_ section: ConfigSection) -> ListenerLimits {
        var limits = ListenerLimits()
        let range = DurationRange(minimum: .seconds(1), maximum: .hours(1))
        if let value = section.duration("header_timeout", range: range, legacy: .init("header_timeout_seconds", .seconds)) {
            limits.headerTimeout = value.value.duration
        }
        if let value = section.duration("body_timeout", range: range, legacy: .init("body_timeout_seconds", .seconds)) {
            limits.bodyTimeout = value.value.duration
        }
        if let value = section.duration("idle_timeout", range: range, legacy: .init("idle_timeout_seconds", .seconds)) {
            limits.idleTimeout = value.value.duration
        }
        if let value = section.read("max_connections", { node -> Int? in
            guard let value = try node.optionalInt() else { return nil }
            guard (1...60_000).contains(value) else { throw node.error("expected connections from 1 to 60000, got \(node.shown(value))") }
            return value
        }) { limits.maxConnections = value }
        return limits
    }
}
