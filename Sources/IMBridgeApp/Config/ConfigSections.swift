import IMConfig
import IMStore

// The sections of `bridge.yaml` that belong to running the bridge (several instances, shutdown), each
// decoded by its own `decode(_:)` (docs/configuration.md). The other sections are decoded where their
// types live: the engine's in IMRelay (`RetryPolicy`, `ReadinessPolicy`, `CatchUpSettings`,
// `ProfileSettings`, `GroupSettings`, `VerifySettings`), the server's in IMServer (`LogSettings`,
// `ListenerLimits`). Each default is written once, in the section's type.

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
