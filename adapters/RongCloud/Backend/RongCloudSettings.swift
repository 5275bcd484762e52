import IMAdapterKit
import IMConfig
import IMCore
import IMMapping

/// A `rongcloud` backend's settings (`backends.<name>` in `bridge.yaml`; the keys, their kinds and which
/// are required are `RongCloudAdapter.settings`, checked before this is decoded). Each default is written
/// once, on its field (docs/adapters/rongcloud.md).
public struct RongCloudSettings: Decodable, Sendable, Equatable {
    public var appKey: String
    /// Signs requests and verifies the routing callbacks.
    public var appSecret: String
    /// The API hosts, tried in order (the vendor's primary and backup).
    public var apiURLs = RongCloudClient.defaultBaseURLs
    /// The per-request timeout (used in whole seconds, rounded up).
    public var timeout: Duration = .seconds(10)
    /// Whose history a query reads when `HistoryQuery.viewer` is nil (needed for group history).
    public var historyViewer: String?
    /// Neutral custom `contentType` → RongCloud objectName (identity when absent).
    public var objectNames: [String: String] = [:]
    /// The freshness window for routing callbacks; `.zero` turns the check off. From bridge.yaml it is at
    /// most half of the ledger's retention (`init(_:freshnessLimitMs:)`).
    public var callbackMaxSkew: Duration = .seconds(300)

    enum CodingKeys: String, CodingKey {
        case appKey = "app_key", appSecret = "app_secret", apiURLs = "api_url", timeout, historyViewer = "history_viewer"
        case objectNames = "object_names", callbackMaxSkew = "callback_max_skew"
    }

    /// Settings with the credentials, at `apiURLs` when given; every other field keeps its default.
    public init(appKey: String, appSecret: String, apiURLs: [String]? = nil) {
        self.appKey = appKey
        self.appSecret = appSecret
        if let apiURLs { self.apiURLs = apiURLs }
    }

    public init(from decoder: any Decoder) throws {
        let settings = try decoder.container(keyedBy: CodingKeys.self)
        appKey = try settings.decode(String.self, forKey: .appKey)
        appSecret = try settings.decode(String.self, forKey: .appSecret)
        try settings.read(&apiURLs, .apiURLs)
        try settings.read(&timeout, .timeout)
        try settings.read(&historyViewer, .historyViewer)
        try settings.read(&objectNames, .objectNames)
        try settings.read(&callbackMaxSkew, .callbackMaxSkew)
        for objectName in objectNames.values where (try? RongCloudContentCodec.checkCustomName(objectName)) == nil {
            throw SettingRefusal(CodingKeys.objectNames.rawValue, "is not a custom objectName: it must be 1…\(RCObjectName.maxLength) "
                                 + "characters and not start with RC:", quoting: objectName)
        }
    }

    /// The freshness window in milliseconds, nil when off.
    public var callbackMaxSkewMs: Int64? { callbackMaxSkew == .zero ? nil : callbackMaxSkew.wholeMilliseconds }

    /// The settings of a `bridge.yaml` backend entry. With `freshnessLimitMs` (half the ledger's retention,
    /// `AdapterContext.freshnessLimitMs`) the window is at most that — the default shrinks to it — and `0s`
    /// is refused: a callback replayed after the ledger forgot its msgUID must be refused by its timestamp.
    public init(_ settings: AdapterSettings, freshnessLimitMs: Int64?) throws {
        self = try settings.decode(Self.self)
        guard let freshnessLimitMs else { return }
        let limit = ConfigDuration(milliseconds: freshnessLimitMs)
        guard settings.duration(CodingKeys.callbackMaxSkew.rawValue) != nil else {
            callbackMaxSkew = min(callbackMaxSkew, limit.duration)
            return
        }
        let key = settings.writtenKey(CodingKeys.callbackMaxSkew.rawValue)
        if callbackMaxSkew == .zero {
            throw settings.refuse(key, "0s turns the timestamp check off: a callback replayed after the ledger "
                                  + "forgot it (retention) would relay again; set retention: 0s to keep the ledger for ever")
        }
        if ConfigDuration(callbackMaxSkew) > limit {
            throw settings.refuse(key, "expected at most \(limit) (half of retention), got \(settings.shown(key, ConfigDuration(callbackMaxSkew)))")
        }
    }
}
