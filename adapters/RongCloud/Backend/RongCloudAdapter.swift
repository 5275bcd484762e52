import IMAdapterKit
import IMCore
import IMConfig
import IMMapping

/// The `rongcloud` adapter as the registry lists it. `settings` is the one list of keys a backend of
/// adapter `rongcloud` may carry under `backends.<name>` (docs/adapters/rongcloud.md).
public enum RongCloudAdapter {
    public static let settings: [SettingSpec] = [
        SettingSpec("app_key", required: true, help: "the app's App Key"),
        SettingSpec("app_secret", .secret, required: true, help: "the app's App Secret (signs requests, verifies callbacks)"),
        SettingSpec("api_url", .url(list: true), help: "API hosts tried in order (default: the China primary and backup)"),
        .timeout(default: .seconds(10)),
        SettingSpec("history_viewer", help: "whose view group history is read as"),
        SettingSpec("object_names", .pairs, help: "custom types: contentType=objectName"),
        SettingSpec("callback_max_skew", .duration(DurationRange(minimum: .milliseconds(1), zero: "off")),
                    legacy: .init("callback_max_skew_ms", .milliseconds),
                    help: "routing-callback freshness window (default 1h, at most half of retention; 0s turns it off, only when retention is 0s)"),
    ]

    public static let descriptor = AdapterDescriptor(
        name: "rongcloud", displayName: "RongCloud", capabilities: .rongCloud, settings: settings,
        contentCodec: { RongCloudContentCodec(registry: $0, mapping: $1) },
        errors: RongCloudErrors.table,
        make: { values, context in
            RongCloudBackend(try RongCloudBackend.Configuration(values, registry: context.registry, clock: context.clock,
                                                                mapping: context.mapping, freshnessLimitMs: context.freshnessLimitMs))
        })
}

extension RongCloudBackend.Configuration {
    /// A configuration from settings checked against `RongCloudAdapter.settings`: `api_url` defaults
    /// to the China primary and backup hosts, `timeout` to 10s, `callback_max_skew` to one
    /// hour (`0s` disables the check). With `freshnessLimitMs` (half the ledger's retention,
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
        let configured = settings.duration("callback_max_skew")?.milliseconds
        let skew = configured ?? min(3_600_000, freshnessLimitMs ?? .max)
        if let freshnessLimitMs, configured != nil {
            let key = settings.writtenKey("callback_max_skew")
            if skew == 0 {
                throw settings.refuse(key, "0s turns the timestamp check off: a callback replayed after the ledger "
                                      + "forgot it (retention) would relay again; set retention: 0s to keep the ledger for ever")
            }
            if skew > freshnessLimitMs {
                throw settings.refuse(key, "expected at most \(ConfigDuration(milliseconds: freshnessLimitMs)) (half of retention), "
                                      + "got \(settings.shown(key, ConfigDuration(milliseconds: skew)))")
            }
        }
        self.init(id: settings.backend, appKey: try settings.required("app_key"), appSecret: try settings.required("app_secret"),
                  baseURLs: urls.isEmpty ? RongCloudClient.defaultBaseURLs : urls,
                  timeoutSeconds: settings.seconds("timeout", default: 10), registry: registry,
                  objectNames: objectNames, historyViewer: settings["history_viewer"].map(UserID.init),
                  callbackMaxSkewMs: skew == 0 ? nil : skew, clock: clock)
        self.mapping = mapping
    }
}
