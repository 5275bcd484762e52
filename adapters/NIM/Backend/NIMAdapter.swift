import IMAdapterKit
import IMCore
import IMConfig
import IMMapping

/// The `nim` adapter as the registry lists it. Its settings (`backends.<name>` in `bridge.yaml`, all
/// strings) are the schema below; defaults:
///
/// | key | default | meaning |
/// |---|---|---|
/// | `api_url` | `https://api-cn.yunxinapi.com/nimserver` | v1 base URL (the sandbox: `http://127.0.0.1:PORT`) |
/// | `app_key`, `app_secret` | required | signing credentials (also verify the message copies) |
/// | `team_query_accid` | none | member accid team history is read as when no viewer is given |
/// | `recall_window` | 2m | the console's recall window, if raised (≤ 7d) |
/// | `create_users` | true | create puppet accounts on first use |
/// | `custom_type_key`, `custom_data_key`, `custom_untyped_name` | `type`, `data`, `nim_custom` | the type-100 envelope (`NIMCustomFormat`) |
/// | `custom_aliases` | none | numeric app types → content type names: `1=order_card,2=photo_card` |
/// | `callback_max_skew` | half the ledger retention | refuse message copies whose CurTime is further off than this (at most half of `retention`) |
/// | `timeout` | 15s | per-request timeout (≥ 1s) |
///
/// `recall_window_ms`, `callback_max_skew_ms` and `timeout_seconds` are the deprecated names (numbers of
/// milliseconds or seconds), still read with a warning.
public enum NIMAdapter {
    public static let defaultBaseURL = "https://api-cn.yunxinapi.com/nimserver"
    /// The longest recall window a NIM console allows (docs/adapters/nim.md, "Configuration").
    public static let maxRecallWindow = ConfigDuration.days(7)

    public static let settings: [SettingSpec] = [
        SettingSpec("api_url", .url(list: false), help: "v1 base URL"),
        SettingSpec("app_key", required: true, help: "the app's AppKey"),
        SettingSpec("app_secret", .secret, required: true, help: "the app's AppSecret (signs requests, verifies copies)"),
        SettingSpec("team_query_accid", help: "member accid team history is read as"),
        SettingSpec("recall_window", .duration(DurationRange(minimum: .milliseconds(1), maximum: maxRecallWindow)),
                    legacy: .init("recall_window_ms", .milliseconds), help: "the console's recall window, if raised (at most 7d)"),
        SettingSpec("create_users", .flag, help: "create puppet accounts on first use"),
        SettingSpec("custom_type_key", help: "type-100 envelope: the type field"),
        SettingSpec("custom_data_key", help: "type-100 envelope: the data field"),
        SettingSpec("custom_untyped_name", help: "type-100 envelope: name for bodies without a type"),
        SettingSpec("custom_aliases", .pairs, help: "numeric app types: 1=order_card"),
        SettingSpec("callback_max_skew", .duration(.positive), legacy: .init("callback_max_skew_ms", .milliseconds),
                    help: "refuse copies whose CurTime is further off (default and maximum: half of retention)"),
        .timeout(default: .seconds(15)),
    ]

    public static let descriptor = AdapterDescriptor(
        name: "nim", displayName: "NetEase Yunxin (NIM)", capabilities: .nim, settings: settings,
        contentCodec: { NIMContentCodec(registry: $0, mapping: $1) },
        errors: NIMErrors.table,
        make: { settings, context in
            try makeBackend(settings, registry: context.registry, clock: context.clock, mapping: context.mapping,
                            freshnessLimitMs: context.freshnessLimitMs)
        })

    /// Builds the backend from checked settings (`Settings`).
    public static func makeBackend(_ settings: AdapterSettings, registry: ContentRegistry = ContentRegistry(),
                                   clock: any IMClock = SystemClock(),
                                   mapping: VendorTable = MappingSet.shipped.table("nim"),
                                   freshnessLimitMs: Int64? = nil) throws -> NIMBackend {
        let decoded = try Settings(settings, freshnessLimitMs: freshnessLimitMs)
        var capabilities = NIMBackend.defaultCapabilities
        if let window = decoded.recallWindowMs { capabilities.recallWindowMs = window }
        return NIMBackend(id: settings.backend, config: decoded.config, registry: registry, customFormat: decoded.customFormat,
                          capabilities: capabilities, teamQueryAccid: decoded.teamQueryAccid, createUsersOnDemand: decoded.createUsers,
                          callbackMaxSkewMs: decoded.callbackMaxSkewMs, clock: clock, mapping: mapping)
    }

    /// A `nim` backend's settings, decoded from checked `AdapterSettings` (the table above).
    public struct Settings: Sendable {
        public var config: NIMConfig
        public var customFormat: NIMCustomFormat
        /// `recall_window`; nil: NIM's default (`NIMBackend.defaultCapabilities`).
        public var recallWindowMs: Int64?
        public var teamQueryAccid: String?
        public var createUsers: Bool
        /// `callback_max_skew`, or `freshnessLimitMs` when not set.
        public var callbackMaxSkewMs: Int64?

        /// `freshnessLimitMs` (`AdapterContext.freshnessLimitMs`: half the ledger's retention) is the
        /// default of `callback_max_skew` and its maximum: a message copy is refused once its `CurTime`
        /// is further from now than that, so a captured copy replayed after the ledger forgot its msgid
        /// cannot relay again (docs/adapters/nim.md §2 and §3). Nil (the ledger keeps everything): no
        /// default. A wider window is refused with `AdapterSettings.refuse`.
        public init(_ settings: AdapterSettings, freshnessLimitMs: Int64?) throws {
            let skew = settings.duration("callback_max_skew")?.milliseconds ?? freshnessLimitMs
            if let skew, let freshnessLimitMs, skew > freshnessLimitMs {
                let key = settings.writtenKey("callback_max_skew")
                throw settings.refuse(key, "expected at most \(ConfigDuration(milliseconds: freshnessLimitMs)) (half of retention), "
                                      + "got \(settings.shown(key, ConfigDuration(milliseconds: skew))): a copy replayed after the ledger forgot it would relay again")
            }
            callbackMaxSkewMs = skew
            recallWindowMs = settings.duration("recall_window")?.milliseconds
            var aliases: [String: String] = [:]
            for (wire, name) in settings.pairs("custom_aliases") { aliases[wire] = name }
            customFormat = NIMCustomFormat(typeKey: settings.string("custom_type_key", default: "type"),
                                           dataKey: settings.string("custom_data_key", default: "data"),
                                           untypedName: settings.string("custom_untyped_name", default: "nim_custom"), aliases: aliases)
            config = NIMConfig(baseURL: settings.string("api_url", default: NIMAdapter.defaultBaseURL),
                               appKey: try settings.required("app_key"), appSecret: try settings.required("app_secret"),
                               timeoutSeconds: settings.seconds("timeout", default: 15))
            teamQueryAccid = settings["team_query_accid"]
            createUsers = settings.flag("create_users", default: true)
        }
    }
}
