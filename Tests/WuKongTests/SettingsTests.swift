import Foundation
import IMAdapterKit
import IMCore
import IMMapping
import Testing
@testable import WuKong

/// The `backends.<name>` settings of a `wukong` entry: the descriptor's schema is the one list of
/// keys; `WuKongSettings` is decoded from them.
@Suite struct WuKongSettingsTests {
    static func configuration(_ values: [String: String], maps: [String: [String: String]] = [:]) throws -> WuKongSettings {
        try WuKongSettings(AdapterSettings(backend: "wk", values: values, maps: maps, schema: WuKongAdapter.descriptor.settings))
    }

    @Test func parsesBridgeYAMLSettings() throws {
        let config = try Self.configuration([
            "im_url": "http://wk:5001", "business_url": "http://tsdd:8090", "manager_token": "m",
            "webhook_secret": "s", "custom_types": "101=order_card, 102=invoice", "session_tokens": "u1=t1", "timeout_seconds": "7",
        ])
        #expect(config.imURL == "http://wk:5001" && config.businessBaseURL == "http://tsdd:8090" && config.managerToken == "m")
        #expect(config.customTypes == [101: "order_card", 102: "invoice"] && config.sessionTokens == ["u1": "t1"])
        #expect(config.timeout == .seconds(7) && config.webhookSecret == "s")
        #expect(try Self.configuration(["im_url": "http://a", "webhook_secret": "s", "timeout": "7s"]).timeout == .seconds(7))
        #expect(try Self.configuration(["im_url": "http://a", "webhook_secret": "s", "timeout": "1500ms"]).timeout.secondsRoundedUp == 2)
        let defaults = try Self.configuration(["im_url": "http://a", "allow_unsigned_callbacks": "true"])
        #expect(defaults.businessBaseURL == "http://a" && defaults.tokenSecret == "imbridge" && defaults.serviceUID == "imbridge")
        #expect(defaults.timeout == .seconds(15) && defaults.managerToken == nil && defaults.webhookSecret == nil)
        #expect(defaults == { var plain = WuKongSettings(imURL: "http://a"); plain.allowUnsignedCallbacks = true; return plain }())
    }

    /// Maps are YAML mappings; the old `k=v,…` string reads the same, with a warning that quotes no value.
    @Test func mapsAreMappingsAndTheOldStringStillReads() throws {
        let mapped = try Self.configuration(["im_url": "http://a", "webhook_secret": "s"],
                                            maps: ["custom_types": ["101": "order_card", "102": "invoice"], "session_tokens": ["u1": "t1"]])
        let written = try Self.configuration(["im_url": "http://a", "webhook_secret": "s", "custom_types": "101=order_card,102=invoice",
                                              "session_tokens": "u1=t1"])
        #expect(mapped == written && mapped.customTypes == [101: "order_card", 102: "invoice"] && mapped.sessionTokens == ["u1": "t1"])
        let schema = WuKongAdapter.descriptor.settings
        let source = SettingsSource(file: "b.yaml", lines: ["session_tokens": 9])
        let warnings = AdapterSettings.warnings(["session_tokens": "u1=SECRET-TOKEN"], schema: schema, backend: "wk", source: source)
        #expect(warnings == [#"b.yaml:9: backends.wk.session_tokens as a "key=value,…" string is deprecated: "#
                             + "write a YAML mapping, one `key: value` line each under session_tokens: (u1: …)"])
        #expect(AdapterSettings.warnings([:], schema: schema, backend: "wk", source: source).isEmpty)
        // A map where a single value belongs, and a bad type number in a map, name their key and line.
        let wrong = AdapterSettings.problems(["im_url": "http://a"], maps: ["service_uid": ["a": "b"]], schema: schema, backend: "wk",
                                             source: SettingsSource(file: "b.yaml", lines: ["service_uid": 4]))
        #expect(wrong.map(\.message) == ["b.yaml:4: backends.wk.service_uid: expected a single value, got a mapping"])
        #expect(throws: IMError.self) { try Self.configuration(["im_url": "http://a", "webhook_secret": "s"], maps: ["custom_types": ["x": "y"]]) }
        do {
            _ = try Self.configuration(["im_url": "http://a", "webhook_secret": "s"], maps: ["custom_types": ["0": "zero"]])
            Issue.record("type 0 accepted")
        } catch let error as IMError {
            #expect(error.message == "(code): backends.wk.custom_types: '0' is not a WuKong type number" && error.details["setting"] == "custom_types")
        }
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
        #expect(backend.id == "wk1" && backend.settings.imURL == "http://wk:5001" && backend.settings.webhookSecret == "s")
        await #expect(throws: IMError.self) {
            try await WuKongAdapter.descriptor.makeBackend(id: "wk1", settings: ["im_url": "http://a", "webhook_secret": "s", "custom_types": "0=zero"],
                                                           context: context)
        }
    }
}
