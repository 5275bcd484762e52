import IMAdapterKit
import IMCore

/// The `nim` adapter as the registry lists it.
public enum NIMAdapter {
    public static let descriptor = AdapterDescriptor(
        name: "nim", displayName: "NetEase Yunxin (NIM)", capabilities: .nim,
        settings: [
            SettingSpec("api_url", .url(list: false), help: "v1 base URL"),
            SettingSpec("app_key", required: true, help: "the app's AppKey"),
            SettingSpec("app_secret", .secret, required: true, help: "the app's AppSecret (signs requests, verifies copies)"),
            SettingSpec("team_query_accid", help: "member accid team history is read as"),
            SettingSpec("recall_window_ms", .integer(minimum: 0), help: "the console's recall window, if raised"),
            SettingSpec("create_users", .flag, help: "create puppet accounts on first use"),
            SettingSpec("custom_type_key", help: "type-100 envelope: the type field"),
            SettingSpec("custom_data_key", help: "type-100 envelope: the data field"),
            SettingSpec("custom_untyped_name", help: "type-100 envelope: name for bodies without a type"),
            SettingSpec("custom_aliases", .pairs, help: "numeric app types: 1=order_card"),
            SettingSpec("callback_max_skew_ms", .integer(minimum: 0), help: "refuse copies whose CurTime is further off"),
            SettingSpec("timeout_seconds", .integer(minimum: 0), help: "per-request timeout"),
        ],
        make: { settings, context in
            try NIMSettings.makeBackend(id: settings.backend, settings: settings.values, registry: context.registry,
                                        mapping: context.mapping)
        })
}
