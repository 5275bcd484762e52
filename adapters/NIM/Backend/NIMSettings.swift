import IMAdapterKit
import IMConfig
import IMCore
import IMMapping

/// A `nim` backend's settings (`backends.<name>` in `bridge.yaml`; the keys, their kinds and which are
/// required are `NIMAdapter.settings`, checked before this is decoded). Each default is written once:
/// on its field, on `NIMCustomFormat` for the type-100 envelope, in the `.nim` preset for the recall window
/// (docs/adapters/nim.md, "Configuration").
public struct NIMSettings: Decodable, Sendable, Equatable {
    /// The v1 base URL (the sandbox: `http://127.0.0.1:PORT/nimserver`); paths are appended to `baseURL`.
    public var apiURL = "https://api-cn.yunxinapi.com/nimserver"
    public var appKey: String
    /// Signs requests and verifies the message copies.
    public var appSecret: String
    /// A member accid team history is read as when the query names no viewer.
    public var teamQueryAccid: String?
    /// The console's recall window, if raised (at most `NIMAdapter.maxRecallWindow`); nil: the `.nim` preset's.
    public var recallWindow: Duration?
    /// Recall with `ignoreTime=1`: NIM then recalls any message up to 30 days old, whatever the console's
    /// window. On by default: a recall the bridge relays was allowed by its source, and one delayed past
    /// the console's window (an outage, a target's rate limit) must still reach the copy
    /// (docs/adapters/nim.md, "Recall").
    public var recallIgnoreTime = true
    /// Create puppet accounts on first use.
    public var createUsers = true
    /// The type-100 envelope (`custom_type_key`, `custom_data_key`, `custom_untyped_name`, `custom_aliases`).
    public var customFormat = NIMCustomFormat()
    /// Refuse message copies whose CurTime is further off than this; nil: no limit. From bridge.yaml the
    /// default and maximum are half of the ledger's retention (`init(_:freshnessLimitMs:)`).
    public var callbackMaxSkew: Duration?
    /// The per-request timeout (used in whole seconds, rounded up).
    public var timeout: Duration = .seconds(15)

    /// `apiURL` without a trailing `/`.
    public var baseURL: String { apiURL.hasSuffix("/") ? String(apiURL.dropLast()) : apiURL }

    enum CodingKeys: String, CodingKey {
        case apiURL = "api_url", appKey = "app_key", appSecret = "app_secret", teamQueryAccid = "team_query_accid"
        case recallWindow = "recall_window", recallIgnoreTime = "recall_ignore_time", createUsers = "create_users"
        case customTypeKey = "custom_type_key"
        case customDataKey = "custom_data_key", customUntypedName = "custom_untyped_name", customAliases = "custom_aliases"
        case callbackMaxSkew = "callback_max_skew", timeout
    }

    /// Settings with the credentials, at `apiURL` when given; every other field keeps its default.
    public init(apiURL: String? = nil, appKey: String, appSecret: String) {
        self.appKey = appKey
        self.appSecret = appSecret
        if let apiURL { self.apiURL = apiURL }
    }

    public init(from decoder: any Decoder) throws {
        let settings = try decoder.container(keyedBy: CodingKeys.self)
        appKey = try settings.decode(String.self, forKey: .appKey)
        appSecret = try settings.decode(String.self, forKey: .appSecret)
        try settings.read(&apiURL, .apiURL)
        try settings.read(&teamQueryAccid, .teamQueryAccid)
        try settings.read(&recallWindow, .recallWindow)
        try settings.read(&recallIgnoreTime, .recallIgnoreTime)
        try settings.read(&createUsers, .createUsers)
        try settings.read(&customFormat.typeKey, .customTypeKey)
        try settings.read(&customFormat.dataKey, .customDataKey)
        try settings.read(&customFormat.untypedName, .customUntypedName)
        try settings.read(&customFormat.aliases, .customAliases)
        try settings.read(&callbackMaxSkew, .callbackMaxSkew)
        try settings.read(&timeout, .timeout)
    }

    /// The settings of a `bridge.yaml` backend entry. `freshnessLimitMs` (`AdapterContext.freshnessLimitMs`:
    /// half the ledger's retention) is the default of `callback_max_skew` and its maximum: a message copy
    /// is refused once its `CurTime` is further from now than that, so a captured copy replayed after the
    /// ledger forgot its msgid cannot relay again (docs/adapters/nim.md §2 and §3). Nil (the ledger keeps
    /// everything): no default. A wider window is refused with `AdapterSettings.refuse`.
    public init(_ settings: AdapterSettings, freshnessLimitMs: Int64?) throws {
        self = try settings.decode(Self.self)
        let limit = freshnessLimitMs.map { ConfigDuration(milliseconds: $0) }
        if let skew = callbackMaxSkew.map(ConfigDuration.init), let limit, skew > limit {
            let key = settings.writtenKey(CodingKeys.callbackMaxSkew.rawValue)
            throw settings.refuse(key, "expected at most \(limit) (half of retention), "
                                  + "got \(settings.shown(key, skew)): a copy replayed after the ledger forgot it would relay again")
        }
        callbackMaxSkew = callbackMaxSkew ?? limit?.duration
    }
}
