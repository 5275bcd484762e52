import IMAdapterKit
import IMCore
import IMMapping

/// The `rongcloud` adapter as the registry lists it. `settings` is the one list of keys a backend of
/// adapter `rongcloud` may carry under `backends.<name>` (docs/adapters/rongcloud.md).
public enum RongCloudAdapter {
    public static let settings: [SettingSpec] = [
        SettingSpec("app_key", required: true, help: "the app's App Key"),
        SettingSpec("app_secret", .secret, required: true, help: "the app's App Secret (signs requests, verifies callbacks)"),
        SettingSpec("api_url", .url(list: true), help: "API hosts tried in order (default: the China primary and backup)"),
        SettingSpec("timeout_seconds", .integer(minimum: 1), help: "per-request timeout (default 10)"),
        SettingSpec("history_viewer", help: "whose view group history is read as"),
        SettingSpec("object_names", .pairs, help: "custom types: contentType=objectName"),
        SettingSpec("callback_max_skew_ms", .integer(minimum: 0),
                    help: "routing-callback freshness window in ms (default 3600000, at most half of retention_hours; 0 disables, only when retention_hours is 0)"),
    ]

    public static let descriptor = AdapterDescriptor(
        name: "rongcloud", displayName: "RongCloud", capabilities: .rongCloud, settings: settings,
        contentCodec: { RongCloudContentCodec(registry: $0, mapping: $1) },
        make: { values, context in
            RongCloudBackend(try RongCloudBackend.Configuration(values, registry: context.registry, clock: context.clock,
                                                                mapping: context.mapping, freshnessLimitMs: context.freshnessLimitMs))
        })
}

extension RongCloudBackend.Configuration {
    /// A configuration from settings checked against `RongCloudAdapter.settings`: `api_url` defaults
    /// to the China primary and backup hosts, `timeout_seconds` to 10, `callback_max_skew_ms` to one
    /// hour (`0` disables the check). With `freshnessLimitMs` (half the ledger's retention,
    /// `AdapterContext.freshnessLimitMs`) the window is at most that, and `0` is refused: a callback
    /// replayed after the ledger forgot its msgUID must be refused by its timestamp. A custom objectName in `object_names` that RongCloud would not
    /// take throws `invalid_argument` naming the setting.
    public init(_ settings: AdapterSettings, registry: ContentRegistry = ContentRegistry(), clock: any IMClock = SystemClock(),
                mapping: VendorTable = MappingSet.shipped.table("rongcloud"), freshnessLimitMs: Int64? = nil) throws {
        var objectNames: [String: String] = [:]
        for (contentType, objectName) in settings.pairs("object_names") {
            do {
                try RongCloudContentCodec.checkCustomName(objectName)
            } catch let error as IMError {
                throw settings.refuse("object_names", error.message.replacingOccurrences(of: "'\(objectName)'", with: settings.quoted("object_names", objectName)))
            }
            objectNames[contentType] = objectName
        }
        let urls = settings.list("api_url")
        let configured = settings.integer("callback_max_skew_ms")
        let skew = configured ?? min(3_600_000, freshnessLimitMs ?? .max)
        if let freshnessLimitMs, configured != nil {
            if skew == 0 {
                throw settings.refuse("callback_max_skew_ms", "0 turns the timestamp check off: a callback replayed after the ledger "
                                      + "forgot it (retention_hours) would relay again; set retention_hours: 0 to keep the ledger for ever")
            }
            if skew > freshnessLimitMs {
                throw settings.refuse("callback_max_skew_ms", "expected at most \(freshnessLimitMs) (half of retention_hours), got \(settings.shown("callback_max_skew_ms", skew))")
            }
        }
        self.init(id: settings.backend, appKey: try settings.required("app_key"), appSecret: try settings.required("app_secret"),
                  baseURLs: urls.isEmpty ? RongCloudClient.defaultBaseURLs : urls,
                  timeoutSeconds: settings.integer("timeout_seconds", default: 10), registry: registry,
                  objectNames: objectNames, historyViewer: settings["history_viewer"].map(UserID.init),
                  callbackMaxSkewMs: skew == 0 ? nil : skew, clock: clock)
        self.mapping = mapping
    }
}
