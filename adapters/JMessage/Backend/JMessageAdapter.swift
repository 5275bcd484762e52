import IMAdapterKit
import IMCore
import IMConfig

/// The `jmessage` adapter as the registry lists it; its settings are decoded into `JMessageSettings`.
public enum JMessageAdapter {
    /// The defaults the schema's help names.
    static let defaults = JMessageSettings(appKey: "", masterSecret: "", admin: "")

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
                        legacy: .init("poll_interval_ms", .milliseconds), help: "report v2 polling interval (default \(ConfigDuration(defaults.pollInterval))), 0s turns the poller off"),
            SettingSpec("poll_overlap", .duration(DurationRange(minimum: .zero)), legacy: .init("poll_overlap_ms", .milliseconds),
                        help: "how far each poll window reaches back (default \(ConfigDuration(defaults.pollOverlap)))"),
            SettingSpec("routing_push", .flag, help: "the app has the paid routing push: no polling"),
            .timeout(default: defaults.timeout),
        ],
        contentCodec: { JMessageContentCodec(registry: $0, mapping: $1) },
        errors: JMessageErrors.table,
        make: { settings, context in
            let backend = JMessageBackend(id: settings.backend, settings: try JMessageSettings(settings, freshnessLimitMs: context.freshnessLimitMs),
                                          registry: context.registry, checkpoints: context.checkpoints, notes: context.notes, clock: context.clock,
                                          mapping: context.mapping, secrets: context.secrets)
            // The admin is registered when the backend is built (migration sends without intake).
            if !context.validateOnly { try await backend.start(pollIntervalMs: nil) }
            return backend
        })
}
