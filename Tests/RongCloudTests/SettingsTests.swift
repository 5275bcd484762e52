import IMCore
import Testing
@testable import RongCloud

/// `backends.<name>.*` settings of a bridge configuration → `RongCloudBackend.Configuration`.
struct SettingsTests {
    @Test func fullSettingsAreRead() throws {
        let configuration = try RongCloudBackend.Configuration(
            id: "rc",
            settings: ["app_key": "k", "app_secret": "s", "api_url": "https://a.example, https://b.example",
                       "timeout_seconds": "5", "history_viewer": "bot", "object_names": "order_card=App:OrderMsg",
                       "callback_max_skew_ms": "0"],
            registry: ContentRegistry())
        #expect(configuration.appKey == "k" && configuration.appSecret == "s")
        #expect(configuration.baseURLs == ["https://a.example", "https://b.example"] && configuration.timeoutSeconds == 5)
        #expect(configuration.historyViewer == "bot" && configuration.objectNames == ["order_card": "App:OrderMsg"])
        #expect(configuration.callbackMaxSkewMs == nil)
        let defaults = try RongCloudBackend.Configuration(id: "rc", settings: ["app_key": "k", "app_secret": "s"], registry: ContentRegistry())
        #expect(defaults.baseURLs == RongCloudClient.defaultBaseURLs && defaults.callbackMaxSkewMs == 3_600_000)
    }

    @Test(arguments: [
        (["app_secret": "s"], "app_key"),
        (["app_key": "k", "app_secret": "s", "appkey": "typo"], "appkey"),
        (["app_key": "k", "app_secret": "s", "api_url": "ftp://x"], "api_url"),
        (["app_key": "k", "app_secret": "s", "timeout_seconds": "soon"], "timeout_seconds"),
        (["app_key": "k", "app_secret": "s", "object_names": "order_card=RC:Order"], "object_names"),
    ])
    func badSettingsNameTheirKey(settings: [String: String], key: String) {
        let error = #expect(throws: IMError.self) {
            try RongCloudBackend.Configuration(id: "rc", settings: settings, registry: ContentRegistry())
        }
        #expect(error?.code == .invalidArgument && error?.details["setting"] == key)
    }
}
