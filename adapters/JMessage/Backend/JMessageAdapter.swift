import IMAdapterKit
import IMCore
import IMConfig

/// The `jmessage` adapter as the registry lists it.
public enum JMessageAdapter {
    public static let descriptor = AdapterDescriptor(
        name: "jmessage", displayName: "JMessage", capabilities: .jMessage,
        settings: [
            SettingSpec("app_key", required: true, help: "the app's AppKey"),
            SettingSpec("master_secret", .secret, required: true, help: "the app's Master Secret"),
            SettingSpec("admin", required: true, help: "the admin account every message is sent as"),
            SettingSpec("admin_password", .secret, help: "registers the admin on start when given"),
            SettingSpec("api_url", .url(list: false), help: "REST v1 base URL"),
            SettingSpec("report_url", .url(list: false), help: "report v2 base URL"),
            SettingSpec("poll_interval", .duration(DurationRange(minimum: .milliseconds(1), zero: "no polling")),
                        legacy: .init("poll_interval_ms", .milliseconds), help: "report v2 polling interval (default 2s), 0s turns the poller off"),
            SettingSpec("poll_overlap", .duration(DurationRange(minimum: .zero)), legacy: .init("poll_overlap_ms", .milliseconds),
                        help: "how far each poll window reaches back (default 5s)"),
            SettingSpec("routing_push", .flag, help: "the app has the paid routing push: no polling"),
            .timeout(default: .seconds(15)),
        ],
        contentCodec: { JMessageContentCodec(registry: $0, mapping: $1) },
        errors: JMessageErrors.table,
        make: { settings, context in
            let decoded = try Settings(settings, freshnessLimitMs: context.freshnessLimitMs)
            let backend = JMessageBackend(id: settings.backend, config: decoded.config, registry: context.registry,
                                          checkpoints: context.checkpoints, clock: context.clock,
                                          pollerSettings: .init(overlapMs: decoded.pollOverlapMs), mapping: context.mapping)
            backend.setPollInterval(decoded.pollIntervalMs)
            // The admin is registered when the backend is built (migration sends without intake).
            if !context.validateOnly { try await backend.start(pollIntervalMs: nil) }
            return backend
        })

    /// A `jmessage` backend's settings, decoded from checked `AdapterSettings` (docs/configuration.md,
    /// "Reference: every key").
    public struct Settings: Sendable {
        public var config: JMessageConfig
        /// How often report v2 is polled; nil: no polling (`poll_interval: 0s`, or `routing_push`).
        public var pollIntervalMs: Int64?
        /// How far each poll re-reads (`poll_overlap`, default 5s).
        public var pollOverlapMs: Int64

        /// A poll re-reads the last `poll_overlap` of reports; what it re-reads must still be in the
        /// ledger, or it would relay again: an overlap over `freshnessLimitMs` (half the retention) is
        /// refused (docs/configuration.md, "What `check` and `run` refuse").
        public init(_ settings: AdapterSettings, freshnessLimitMs: Int64?) throws {
            let overlap = settings.duration("poll_overlap")
            if let overlap, let limit = freshnessLimitMs, overlap.milliseconds > limit {
                let key = settings.writtenKey("poll_overlap")
                throw settings.refuse(key, "expected at most \(ConfigDuration(milliseconds: limit)) (half of retention), got \(settings.shown(key, overlap)): "
                                      + "messages re-read after the ledger forgot them would relay again")
            }
            pollOverlapMs = overlap?.milliseconds ?? 5000
            config = JMessageConfig(appKey: try settings.required("app_key"), masterSecret: try settings.required("master_secret"),
                                    apiBaseURL: settings.string("api_url", default: "https://api.im.jpush.cn"),
                                    reportBaseURL: settings.string("report_url", default: "https://report.im.jpush.cn"),
                                    admin: try settings.required("admin"), adminPassword: settings["admin_password"],
                                    timeoutSeconds: settings.seconds("timeout", default: 15))
            let interval = settings.duration("poll_interval")?.milliseconds ?? 2000
            pollIntervalMs = settings.flag("routing_push", default: false) || interval == 0 ? nil : interval
        }
    }
}
