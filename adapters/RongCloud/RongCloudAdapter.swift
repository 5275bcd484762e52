import IMAdapterKit
import IMCore

/// The `rongcloud` adapter as the registry lists it.
public enum RongCloudAdapter {
    public static let descriptor = AdapterDescriptor(
        name: "rongcloud", displayName: "RongCloud", capabilities: .rongCloud,
        settings: [
            SettingSpec("app_key", required: true, help: "the app's App Key"),
            SettingSpec("app_secret", .secret, required: true, help: "the app's App Secret (signs requests, verifies callbacks)"),
            SettingSpec("api_url", .url(list: true), help: "API hosts tried in order (default: the China primary and backup)"),
            SettingSpec("timeout_seconds", .integer(minimum: 1), help: "per-request timeout"),
            SettingSpec("history_viewer", help: "whose view group history is read as"),
            SettingSpec("object_names", .pairs, help: "custom types: contentType=objectName"),
            SettingSpec("callback_max_skew_ms", .integer(minimum: 0), help: "routing-callback freshness window, 0 disables"),
        ],
        make: { settings, context in
            RongCloudBackend(try .init(id: settings.backend, settings: settings.values, registry: context.registry,
                                       mapping: context.mapping))
        })
}
