import IMAdapterKit
import IMCore

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
            SettingSpec("poll_interval_ms", .integer(minimum: 0), help: "report v2 polling interval, 0 turns the poller off"),
            SettingSpec("poll_overlap_ms", .integer(minimum: 0), help: "how far each poll window reaches back"),
            SettingSpec("routing_push", .flag, help: "the app has the paid routing push: no polling"),
            SettingSpec("timeout_seconds", .integer(minimum: 1), help: "per-request timeout (default 15)"),
        ],
        contentCodec: { JMessageContentCodec(registry: $0, mapping: $1) },
        make: { settings, context in
            // A poll re-reads the last `poll_overlap_ms` of reports; what it re-reads must still be in the
            // ledger, or it would relay again (docs/configuration.md, "What `check` and `run` refuse").
            if let overlap = settings.integer("poll_overlap_ms"), let limit = context.freshnessLimitMs, overlap > limit {
                throw settings.refuse("poll_overlap_ms", "expected at most \(limit) (half of retention_hours), got \(settings.shown("poll_overlap_ms", overlap)): "
                                      + "messages re-read after the ledger forgot them would relay again")
            }
            let config = JMessageConfig(appKey: try settings.required("app_key"), masterSecret: try settings.required("master_secret"),
                                        apiBaseURL: settings.string("api_url", default: "https://api.im.jpush.cn"),
                                        reportBaseURL: settings.string("report_url", default: "https://report.im.jpush.cn"),
                                        admin: try settings.required("admin"), adminPassword: settings["admin_password"],
                                        timeoutSeconds: settings.integer("timeout_seconds", default: 15))
            let backend = JMessageBackend(id: settings.backend, config: config, registry: context.registry,
                                          checkpoints: context.checkpoints, clock: context.clock,
                                          pollerSettings: .init(overlapMs: settings.integer("poll_overlap_ms", default: 5000)),
                                          mapping: context.mapping)
            let interval = settings.integer("poll_interval_ms", default: 2000)
            backend.setPollInterval(settings.flag("routing_push", default: false) || interval == 0 ? nil : interval)
            // The admin is registered when the backend is built (migration sends without intake).
            if !context.validateOnly { try await backend.start(pollIntervalMs: nil) }
            return backend
        })
}
