import IMAdapterKit
import IMCore
import IMConfig
import IMMapping

/// The `rongcloud` adapter as the registry lists it. `settings` is the one list of keys a backend of
/// adapter `rongcloud` may carry under `backends.<name>` (docs/adapters/rongcloud.md), decoded into `RongCloudSettings`.
public enum RongCloudAdapter {
    /// The defaults the schema's help names.
    static let defaults = RongCloudSettings(appKey: "", appSecret: "")

    public static let settings: [SettingSpec] = [
        SettingSpec("app_key", required: true, help: "the app's App Key"),
        SettingSpec("app_secret", .secret, required: true, help: "the app's App Secret (signs requests, verifies callbacks)"),
        SettingSpec("api_url", .url(list: true), help: "API hosts tried in order (default: the China primary and backup)"),
        .timeout(default: defaults.timeout),
        SettingSpec("history_viewer", help: "whose view group history is read as"),
        SettingSpec("object_names", .pairs, help: "custom types, a map of contentType to objectName (gift: \"App:GiftMsg\")"),
        SettingSpec("callback_max_skew", .duration(DurationRange(minimum: .milliseconds(1), zero: "off")),
                    legacy: .init("callback_max_skew_ms", .milliseconds),
                    help: "routing-callback freshness window (default \(ConfigDuration(defaults.callbackMaxSkew)), at most half of retention; "
                        + "0s turns it off, only when retention is 0s)"),
    ]

    public static let descriptor = AdapterDescriptor(
        name: "rongcloud", displayName: "RongCloud", capabilities: .rongCloud, settings: settings,
        contentCodec: { RongCloudContentCodec(registry: $0, mapping: $1) },
        errors: RongCloudErrors.table,
        make: { values, context in
            RongCloudBackend(id: values.backend, settings: try RongCloudSettings(values, freshnessLimitMs: context.freshnessLimitMs),
                             registry: context.registry, clock: context.clock, mapping: context.mapping, secrets: context.secrets)
        })
}
