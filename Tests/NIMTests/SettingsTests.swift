import IMAdapterKit
import IMCore
import IMMapping
import NIM
import Testing

@Suite struct NIMSettingsTests {
    static func make(_ values: [String: String], maps: [String: [String: String]] = [:]) async throws -> NIMBackend {
        let backend = try await NIMAdapter.descriptor.makeBackend(id: "yx", settings: values, maps: maps,
                                                                  context: AdapterContext(mapping: MappingSet.shipped.table("nim")))
        return try #require(backend as? NIMBackend)
    }

    @Test func settingsBuildTheBackendAndNameBadKeys() async throws {
        let backend = try await Self.make(["app_key": "k", "app_secret": "s", "recall_window_ms": "600000", "recall_ignore_time": "false",
                                           "custom_aliases": "1=order_card, 2=photo_card", "team_query_accid": "bot"])
        #expect(backend.id == "yx" && backend.capabilities.recallWindowMs == 600_000 && backend.teamQueryAccid == "bot")
        #expect(backend.codec.content.customFormat.aliases == ["1": "order_card", "2": "photo_card"])
        let renamed = try await Self.make(["app_key": "k", "app_secret": "s", "recall_window": "10m", "timeout": "3s", "recall_ignore_time": "false"])
        #expect(renamed.capabilities.recallWindowMs == 600_000 && renamed.settings.timeout == .seconds(3))
        #expect(backend.client.settings.baseURL == "https://api-cn.yunxinapi.com/nimserver")
        for (settings, key) in [(["app_key": "k"], "app_secret"),
                                (["app_key": "k", "app_secret": "s", "recall_window_ms": "x"], "recall_window_ms"),
                                (["app_key": "k", "app_secret": "s", "recall_window_ms": "604800001"], "recall_window_ms"),
                                (["app_key": "k", "app_secret": "s", "recall_window": "8d"], "recall_window"),
                                (["app_key": "k", "app_secret": "s", "recall_window": "600000"], "recall_window"),
                                (["app_key": "k", "app_secret": "s", "create_users": "maybe"], "create_users"),
                                (["app_key": "k", "app_secret": "s", "recall_ignore_time": "sometimes"], "recall_ignore_time"),
                                (["app_key": "k", "app_secret": "s", "custom_aliases": "1"], "custom_aliases")] {
            do {
                _ = try await Self.make(settings)
                Issue.record("\(settings) accepted")
            } catch let error as IMError {
                #expect(error.code == .invalidArgument && error.details["setting"] == key, "\(settings): \(error)")
            }
        }
    }

    /// `custom_aliases` as a YAML mapping reads as its old string did.
    @Test func aliasesAreAMapping() async throws {
        let mapped = try await Self.make(["app_key": "k", "app_secret": "s"], maps: ["custom_aliases": ["1": "order_card", "2": "photo_card"]])
        #expect(mapped.settings.customFormat.aliases == ["1": "order_card", "2": "photo_card"])
        let written = try await Self.make(["app_key": "k", "app_secret": "s", "custom_aliases": "1=order_card,2=photo_card"])
        #expect(mapped.settings == written.settings)
    }

    @Test func defaultsApplyWhenSettingsAreLeftOut() async throws {
        let backend = try await Self.make(["app_key": "k", "app_secret": "s"])
        #expect(backend.createUsersOnDemand && backend.teamQueryAccid == nil)
        // Recalls go with `ignoreTime=1` unless told otherwise: NIM's 30 days, not the console's 2 minutes,
        // whatever `recall_window` says (it counts only with `recall_ignore_time: false`).
        #expect(backend.settings.recallIgnoreTime && backend.capabilities.recallWindowMs == NIMBackend.recallSearchHorizonMs)
        let windowed = try await Self.make(["app_key": "k", "app_secret": "s", "recall_window": "10m"])
        #expect(windowed.capabilities.recallWindowMs == NIMBackend.recallSearchHorizonMs)
        let console = try await Self.make(["app_key": "k", "app_secret": "s", "recall_ignore_time": "false"])
        #expect(console.capabilities.recallWindowMs == NIMBackend.defaultCapabilities.recallWindowMs)
        #expect(backend.settings.timeout == .seconds(15) && backend.settings == NIMSettings(appKey: "k", appSecret: "s"))
        #expect(backend.codec.content.customFormat == NIMCustomFormat())
        #expect(backend.inbound.maxSkewMs == nil)
        let tuned = try await Self.make(["app_key": "k", "app_secret": "s", "create_users": "false", "timeout_seconds": "3",
                                         "callback_max_skew_ms": "60000", "api_url": "http://127.0.0.1:9/nimserver/",
                                         "custom_type_key": "t", "custom_data_key": "d", "custom_untyped_name": "raw"])
        #expect(!tuned.createUsersOnDemand && tuned.settings.timeout.secondsRoundedUp == 3 && tuned.inbound.maxSkewMs == 60_000)
        #expect(tuned.client.settings.baseURL == "http://127.0.0.1:9/nimserver")
        #expect(tuned.codec.content.customFormat == NIMCustomFormat(typeKey: "t", dataKey: "d", untypedName: "raw"))
    }

    @Test func theSchemaIsTheOnlyListOfKeys() async throws {
        #expect(NIMAdapter.descriptor.settings.map(\.key) == NIMAdapter.settings.map(\.key))
        do {
            _ = try await Self.make(["app_key": "k", "app_secret": "s", "appkey": "typo"])
            Issue.record("an unknown key was accepted")
        } catch let error as IMError {
            #expect(error.details["setting"] == "appkey")
        }
    }
}
