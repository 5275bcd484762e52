import Foundation
import IMAdapterKit
import IMCore
import IMMapping
import Testing
@testable import WuKong

/// The `backends.<name>` settings of a `wukong` entry: the descriptor's schema is the one list of
/// keys; `WuKongBackend.Configuration.init(_:)` reads them.
@Suite struct WuKongSettingsTests {
    static func configuration(_ values: [String: String]) throws -> WuKongBackend.Configuration {
        try WuKongBackend.Configuration(AdapterSettings(backend: "wk", values: values, schema: WuKongAdapter.descriptor.settings))
    }

    @Test func parsesBridgeYAMLSettings() throws {
        let config = try Self.configuration([
            "im_url": "http://wk:5001", "business_url": "http://tsdd:8090", "manager_token": "m",
            "webhook_secret": "s", "custom_types": "101=order_card, 102=invoice", "session_tokens": "u1=t1", "timeout_seconds": "7",
        ])
        #expect(config.id == "wk")
        #expect(config.imURL == "http://wk:5001" && config.businessURL == "http://tsdd:8090" && config.managerToken == "m")
        #expect(config.customTypes == [101: "order_card", 102: "invoice"] && config.sessionTokens == ["u1": "t1"])
        #expect(config.timeoutSeconds == 7 && config.webhookSecret == "s")
        #expect(try Self.configuration(["im_url": "http://a", "webhook_secret": "s", "timeout": "7s"]).timeoutSeconds == 7)
        let defaults = try Self.configuration(["im_url": "http://a", "allow_unsigned_callbacks": "true"])
        #expect(defaults.businessURL == "http://a" && defaults.tokenSecret == "imbridge" && defaults.serviceUID == "imbridge")
        #expect(defaults.timeoutSeconds == 15 && defaults.managerToken == nil && defaults.webhookSecret == nil)
    }

    @Test(arguments: [
        (["business_url": "http://b", "webhook_secret": "s"], "im_url"),
        (["im_url": "http://a"], "webhook_secret"),
        (["im_url": "http://a", "allow_unsigned_callbacks": "false"], "webhook_secret"),
        (["im_url": "http://a", "imurl": "x"], "imurl"),
        (["im_url": "http://a", "custom_types": "x=1"], "custom_types"),
        (["im_url": "http://a", "timeout_seconds": "-1"], "timeout_seconds"),
        (["im_url": "http://a", "timeout": "7"], "timeout"),
        (["im_url": "wk:5001"], "im_url"),
        (["im_url": "http://a", "business_url": "tsdd"], "business_url"),
        (["im_url": "http://a", "session_tokens": "u1"], "session_tokens"),
    ])
    func refusesBadSettingsNamingTheKey(settings: [String: String], key: String) {
        do {
            _ = try Self.configuration(settings)
            Issue.record("accepted \(settings)")
        } catch let error as IMError {
            #expect(error.details["setting"] == key && error.code == .invalidArgument)
        } catch {
            Issue.record("\(error)")
        }
    }

    @Test func theDescriptorBuildsTheBackendFromItsSettings() async throws {
        let context = AdapterContext(mapping: MappingSet.shipped.table("wukong"))
        let built = try await WuKongAdapter.descriptor.makeBackend(id: "wk1", settings: ["im_url": "http://wk:5001", "webhook_secret": "s"],
                                                                  context: context)
        let backend = try #require(built as? WuKongBackend)
        #expect(backend.id == "wk1" && backend.configuration.imURL == "http://wk:5001" && backend.configuration.webhookSecret == "s")
        await #expect(throws: IMError.self) {
            try await WuKongAdapter.descriptor.makeBackend(id: "wk1", settings: ["im_url": "http://a", "webhook_secret": "s", "custom_types": "0=zero"],
                                                           context: context)
        }
    }
}
