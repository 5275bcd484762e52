import Foundation
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

/// `tracing:` in `bridge.yaml`: the spans of each message's hops exported over OTLP/HTTP
/// (docs/operations.md, "Tracing"). Absent (the default): no tracer, no spans.
public struct TracingSettings: Sendable, Equatable {
    /// `otlp_endpoint`: the collector's base URL (`http://HOST:4318`); spans go to `<endpoint>/v1/traces`.
    public var otlpEndpoint: String?
    /// `service_name`: the spans' `service.name` (default `imbridge`).
    public var serviceName = "imbridge"
    /// `protocol`: `http/protobuf` (default) or `http/json`.
    public var otlpProtocol = "http/protobuf"

    public init() {}

    /// Whether this build has the exporter (the package's `OTLP` trait).
    public static var exporterBuilt: Bool {
        #if OTLP
        true
        #else
        false
        #endif
    }

    static func decode(_ section: ConfigSection) -> TracingSettings {
        var tracing = TracingSettings()
        tracing.otlpEndpoint = section.read("otlp_endpoint") { node -> String? in
            guard let url = try node.optionalString() else { return nil }
            guard url.hasPrefix("http://") || url.hasPrefix("https://"), URL(string: url)?.host != nil else {
                throw node.error("expected an http:// or https:// URL, got \(node.quoted(url))")
            }
            guard exporterBuilt else {
                throw node.error("this imbridge was built without the OTLP exporter: build it with `swift build --traits OTLP`")
            }
            return url
        }
        if let name = section.read("service_name", { try $0.optionalString() }) { tracing.serviceName = name }
        if let kind = section.read("protocol", { node -> String? in
            guard let kind = try node.optionalString() else { return nil }
            guard ["http/protobuf", "http/json"].contains(kind) else { throw node.error("expected http/protobuf or http/json, got \(node.quoted(kind))") }
            return kind
        }) { tracing.otlpProtocol = kind }
        return tracing
    }
}
