import IMAdapterKit
import IMCore
import IMConfig
import IMMapping

/// The `nim` adapter as the registry lists it. Its settings (`backends.<name>` in `bridge.yaml`) are the
/// schema below, decoded into `NIMSettings` (which holds the defaults):
///
/// | key | default | meaning |
/// |---|---|---|
/// | `api_url` | `https://api-cn.yunxinapi.com/nimserver` | v1 base URL (the sandbox: `http://127.0.0.1:PORT`) |
/// | `app_key`, `app_secret` | required | signing credentials (also verify the message copies) |
/// | `team_query_accid` | none | member accid team history is read as when no viewer is given |
/// | `recall_window` | 2m | the console's recall window, if raised (≤ 7d); used only without `recall_ignore_time` |
/// | `recall_ignore_time` | true | recall with `ignoreTime=1`: any message up to 30 days old |
/// | `create_users` | true | create puppet accounts on first use |
/// | `custom_type_key`, `custom_data_key`, `custom_untyped_name` | `type`, `data`, `nim_custom` | the type-100 envelope (`NIMCustomFormat`) |
/// | `custom_aliases` | none | numeric app types → content type names, a mapping (`1: order_card`) |
/// | `callback_max_skew` | half the ledger retention | refuse message copies whose CurTime is further off than this (at most half of `retention`) |
/// | `timeout` | 15s | per-request timeout (≥ 1s) |
///
/// `recall_window_ms`, `callback_max_skew_ms` and `timeout_seconds` are the deprecated names (numbers of
/// milliseconds or seconds), still read with a warning.
public enum NIMAdapter {
    /// The longest recall window a NIM console allows (docs/adapters/nim.md, "Configuration").
    public static let maxRecallWindow = ConfigDuration.days(7)

    public static let settings: [SettingSpec] = [
        SettingSpec("api_url", .url(list: false), help: "v1 base URL"),
        SettingSpec("app_key", required: true, help: "the app's AppKey"),
        SettingSpec("app_secret", .secret, required: true, help: "the app's AppSecret (signs requests, verifies copies)"),
        SettingSpec("team_query_accid", help: "member accid team history is read as"),
        SettingSpec("recall_window", .duration(DurationRange(minimum: .milliseconds(1), maximum: maxRecallWindow)),
                    legacy: .init("recall_window_ms", .milliseconds), help: "the console's recall window, if raised (at most 7d)"),
        SettingSpec("recall_ignore_time", .flag, help: "recall with ignoreTime=1 (messages up to 30 days old, whatever the console's window)"),
        SettingSpec("create_users", .flag, help: "create puppet accounts on first use"),
        SettingSpec("custom_type_key", help: "type-100 envelope: the type field"),
        SettingSpec("custom_data_key", help: "type-100 envelope: the data field"),
        SettingSpec("custom_untyped_name", help: "type-100 envelope: name for bodies without a type"),
        SettingSpec("custom_aliases", .pairs, help: "numeric app types, a map of number to name (1: order_card)"),
        SettingSpec("callback_max_skew", .duration(.positive), legacy: .init("callback_max_skew_ms", .milliseconds),
                    help: "refuse copies whose CurTime is further off (default and maximum: half of retention)"),
        .timeout(default: NIMSettings(appKey: "", appSecret: "").timeout),
    ]

    public static let descriptor = AdapterDescriptor(
        name: "nim", displayName: "NetEase Yunxin (NIM)", capabilities: .nim, settings: settings,
        contentCodec: { NIMContentCodec(registry: $0, mapping: $1) },
        errors: NIMErrors.table,
        make: { settings, context in
            NIMBackend(id: settings.backend, settings: try NIMSettings(settings, freshnessLimitMs: context.freshnessLimitMs),
                       registry: context.registry, clock: context.clock, mapping: context.mapping, secrets: context.secrets)
        })
}
