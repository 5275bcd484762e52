import IMAdapterKit
import IMCore
import IMMapping
import Testing
@testable import RongCloud

/// `backends.<name>.*` settings of a bridge configuration, checked against `RongCloudAdapter.settings`
/// → `RongCloudSettings`.
struct RongCloudSettingsTests {
    func read(_ values: [String: String], maps: [String: [String: String]] = [:]) throws -> RongCloudSettings {
        try RongCloudSettings(try AdapterSettings(backend: "rc", values: values, maps: maps, schema: RongCloudAdapter.descriptor.settings),
                              freshnessLimitMs: nil)
    }

    @Test func fullSettingsAreRead() throws {
        let configuration = try read(
            ["app_key": "k", "app_secret": "s", "api_url": "https://a.example, https://b.example",
             "timeout_seconds": "5", "history_viewer": "bot", "object_names": "order_card=App:OrderMsg",
             "callback_max_skew_ms": "0"])
        #expect(configuration.appKey == "k" && configuration.appSecret == "s")
        #expect(configuration.apiURLs == ["https://a.example", "https://b.example"] && configuration.timeout == .seconds(5))
        #expect(configuration.historyViewer == "bot" && configuration.objectNames == ["order_card": "App:OrderMsg"])
        #expect(configuration.callbackMaxSkewMs == nil)
        let renamed = try read(["app_key": "k", "app_secret": "s", "timeout": "5s", "callback_max_skew": "0s"])
        #expect(renamed.timeout == .seconds(5) && renamed.callbackMaxSkewMs == nil)
        #expect(try read(["app_key": "k", "app_secret": "s", "timeout": "1500ms", "callback_max_skew": "10m"]).timeout.secondsRoundedUp == 2,
                "a timeout is used in whole seconds, rounded up")
        #expect(try read(["app_key": "k", "app_secret": "s", "callback_max_skew": "10m"]).callbackMaxSkewMs == 600_000)
        let defaults = try read(["app_key": "k", "app_secret": "s"])
        #expect(defaults.apiURLs == RongCloudClient.defaultBaseURLs && defaults.callbackMaxSkewMs == 300_000)
        #expect(defaults.timeout == .seconds(10) && defaults.historyViewer == nil && defaults.objectNames.isEmpty)
        #expect(defaults == RongCloudSettings(appKey: "k", appSecret: "s"))
        let mapped = try read(["app_key": "k", "app_secret": "s"], maps: ["object_names": ["order_card": "App:OrderMsg"]])
        #expect(mapped.objectNames == ["order_card": "App:OrderMsg"])
    }

    @Test(arguments: [
        (["app_secret": "s"], "app_key"),
        (["app_key": "k"], "app_secret"),
        (["app_key": "k", "app_secret": "s", "appkey": "typo"], "appkey"),
        (["app_key": "k", "app_secret": "s", "api_url": "ftp://x"], "api_url"),
        (["app_key": "k", "app_secret": "s", "timeout_seconds": "soon"], "timeout_seconds"),
        (["app_key": "k", "app_secret": "s", "timeout_seconds": "0"], "timeout_seconds"),
        (["app_key": "k", "app_secret": "s", "callback_max_skew_ms": "-1"], "callback_max_skew_ms"),
        (["app_key": "k", "app_secret": "s", "timeout": "10"], "timeout"),
        (["app_key": "k", "app_secret": "s", "timeout": "0s"], "timeout"),
        (["app_key": "k", "app_secret": "s", "callback_max_skew": "-1s"], "callback_max_skew"),
        (["app_key": "k", "app_secret": "s", "timeout": "5s", "timeout_seconds": "5"], "timeout_seconds"),
        (["app_key": "k", "app_secret": "s", "object_names": "order_card=RC:Order"], "object_names"),
        (["app_key": "k", "app_secret": "s", "object_names": "order_card"], "object_names"),
    ])
    func badSettingsNameTheirKey(settings: [String: String], key: String) {
        let error = #expect(throws: IMError.self) { try read(settings) }
        #expect(error?.code == .invalidArgument && error?.details["setting"] == key)
    }

    /// The routing-callback window is bound to the ledger's retention: at most half of it (a callback
    /// replayed after its ledger row was pruned is refused by its timestamp), and it cannot be turned off
    /// while the ledger forgets.
    @Test func theFreshnessWindowIsBoundToTheLedgerRetention() throws {
        let hour: Int64 = 3_600_000
        func read(_ values: [String: String], retentionHours: Int64?) throws -> RongCloudSettings {
            try RongCloudSettings(try AdapterSettings(backend: "rc", values: values, schema: RongCloudAdapter.descriptor.settings),
                                  freshnessLimitMs: retentionHours.map { $0 * hour / 2 })
        }
        let base = ["app_key": "k", "app_secret": "s"]
        #expect(try read(base, retentionHours: 168).callbackMaxSkewMs == 300_000, "the five-minute default fits a week's retention")
        #expect(try read(base, retentionHours: 1).callbackMaxSkewMs == 300_000, "five minutes fit half an hour")
        let short = try RongCloudSettings(try AdapterSettings(backend: "rc", values: base, schema: RongCloudAdapter.descriptor.settings),
                                          freshnessLimitMs: 120_000)
        #expect(short.callbackMaxSkewMs == 120_000, "the default shrinks to half a short retention")
        #expect(try read(base.merging(["callback_max_skew_ms": "0"]) { $1 }, retentionHours: nil).callbackMaxSkewMs == nil,
                "0 turns the check off when the ledger keeps everything")
        for (value, reason) in [("0", "turns the timestamp check off"), (String(2 * hour), "expected at most 1h (half of retention), got 2h")] {
            let error = #expect(throws: IMError.self) { try read(base.merging(["callback_max_skew_ms": value]) { $1 }, retentionHours: 2) }
            #expect(error?.details["setting"] == "callback_max_skew_ms" && error?.message.contains(reason) == true, "\(String(describing: error))")
        }
    }

    @Test func theDescriptorBuildsABackendFromItsSettings() async throws {
        let backend = try await RongCloudAdapter.descriptor.makeBackend(
            id: "rc", settings: ["app_key": "k", "app_secret": "s", "history_viewer": "bot"],
            context: AdapterContext(mapping: MappingSet.shipped.table("rongcloud")))
        let rongCloud = try #require(backend as? RongCloudBackend)
        #expect(rongCloud.id == "rc" && rongCloud.settings.historyViewer == "bot")
        await #expect(throws: IMError.self) {
            _ = try await RongCloudAdapter.descriptor.makeBackend(id: "rc", settings: ["app_key": "k"],
                                                                  context: AdapterContext(mapping: MappingSet.shipped.table("rongcloud")))
        }
    }
}
