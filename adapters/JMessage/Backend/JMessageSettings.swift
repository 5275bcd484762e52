import Foundation
import IMAdapterKit
import IMConfig
import IMCore
import IMMapping

/// A `jmessage` backend's settings (`backends.<name>` in `bridge.yaml`; the keys, their kinds and which
/// are required are `JMessageAdapter.descriptor.settings`, checked before this is decoded). Each default
/// is written once, on its field (docs/configuration.md, "Reference: every key").
public struct JMessageSettings: Decodable, Sendable, Hashable {
    public var appKey: String
    public var masterSecret: String
    /// The admin account every REST send goes out as.
    public var admin: String
    /// Registers the admin at start (`POST /v1/admins/`) when set; "already exists" is fine.
    public var adminPassword: String?
    /// REST v1 host.
    public var apiURL = "https://api.im.jpush.cn"
    /// Report v2 host; paths start with `/v2`.
    public var reportURL = "https://report.im.jpush.cn"
    /// How often report v2 is polled; `.zero` turns the poller off (`pollIntervalMs`).
    public var pollInterval: Duration = .seconds(2)
    /// How far each poll window reaches back (`JMessagePoller.Settings.overlapMs`).
    public var pollOverlap = JMessageSettings.defaultPollOverlap
    /// The app has the paid routing push: no polling.
    public var routingPush = false
    /// The per-request timeout (used in whole seconds, rounded up).
    public var timeout: Duration = .seconds(15)

    /// The default of `pollOverlap`, also a lone poller's (`JMessagePoller.Settings`).
    public static let defaultPollOverlap: Duration = .seconds(5)

    enum CodingKeys: String, CodingKey {
        case appKey = "app_key", masterSecret = "master_secret", admin, adminPassword = "admin_password", apiURL = "api_url"
        case reportURL = "report_url", pollInterval = "poll_interval", pollOverlap = "poll_overlap", routingPush = "routing_push", timeout
    }

    /// Settings with the credentials, at `apiURL` and `reportURL` when given; every other field keeps its default.
    public init(appKey: String, masterSecret: String, admin: String, apiURL: String? = nil, reportURL: String? = nil) {
        self.appKey = appKey
        self.masterSecret = masterSecret
        self.admin = admin
        if let apiURL { self.apiURL = apiURL }
        if let reportURL { self.reportURL = reportURL }
    }

    public init(from decoder: any Decoder) throws {
        let settings = try decoder.container(keyedBy: CodingKeys.self)
        appKey = try settings.decode(String.self, forKey: .appKey)
        masterSecret = try settings.decode(String.self, forKey: .masterSecret)
        admin = try settings.decode(String.self, forKey: .admin)
        try settings.read(&adminPassword, .adminPassword)
        try settings.read(&apiURL, .apiURL)
        try settings.read(&reportURL, .reportURL)
        try settings.read(&pollInterval, .pollInterval)
        try settings.read(&pollOverlap, .pollOverlap)
        try settings.read(&routingPush, .routingPush)
        try settings.read(&timeout, .timeout)
    }

    /// A poll re-reads the last `poll_overlap` of reports; what it re-reads must still be in the ledger,
    /// or it would relay again: an overlap over `freshnessLimitMs` (half the retention) is refused
    /// (docs/configuration.md, "What `check` and `run` refuse").
    public init(_ settings: AdapterSettings, freshnessLimitMs: Int64?) throws {
        self = try settings.decode(Self.self)
        if let freshnessLimitMs, settings.duration(CodingKeys.pollOverlap.rawValue) != nil, pollOverlap.wholeMilliseconds > freshnessLimitMs {
            let key = settings.writtenKey(CodingKeys.pollOverlap.rawValue)
            throw settings.refuse(key, "expected at most \(ConfigDuration(milliseconds: freshnessLimitMs)) (half of retention), "
                                  + "got \(settings.shown(key, ConfigDuration(pollOverlap))): messages re-read after the ledger forgot them would relay again")
        }
    }

    /// How often report v2 is polled, nil: not at all (`poll_interval: 0s`, or `routing_push`).
    public var pollIntervalMs: Int64? { routingPush || pollInterval == .zero ? nil : pollInterval.wholeMilliseconds }

    /// `Basic base64(appKey:masterSecret)`, the header on both hosts and on the routing push.
    public var authorization: String { Self.authorization(appKey: appKey, masterSecret: masterSecret) }

    public static func authorization(appKey: String, masterSecret: String) -> String {
        "Basic " + Data("\(appKey):\(masterSecret)".utf8).base64EncodedString()
    }
}
