import IMAdapterKit
import IMCore
import IMMapping
@testable import JMessage
import Testing

/// `JMessageAdapter.descriptor`: its schema is the one list of settings, and every problem names its key.
@Suite struct JMessageSettingsTests {
    let descriptor = JMessageAdapter.descriptor
    let minimal = ["app_key": appKey, "master_secret": masterSecret, "admin": "bridge_admin"]

    func build(_ values: [String: String]) async throws -> JMessageBackend {
        let context = AdapterContext(mapping: MappingSet.shipped.table("jmessage"), validateOnly: true)
        let backend = try await descriptor.makeBackend(id: "jm", settings: values, context: context)
        return try #require(backend as? JMessageBackend)
    }

    func refusal(_ values: [String: String]) async -> IMError? {
        do {
            _ = try await build(values)
            return nil
        } catch {
            return error as? IMError
        }
    }

    @Test func theSchemaListsEveryKey() {
        #expect(descriptor.name == "jmessage" && descriptor.mappingFile == "jmessage.yaml")
        #expect(Set(descriptor.settings.map(\.key)) == ["app_key", "master_secret", "admin", "admin_password", "api_url", "report_url",
                                                         "poll_interval", "poll_overlap", "routing_push", "timeout"])
        #expect(Set(descriptor.settings.compactMap(\.legacy?.key)) == ["poll_interval_ms", "poll_overlap_ms", "timeout_seconds"])
        #expect(descriptor.settings.filter(\.required).map(\.key).sorted() == ["admin", "app_key", "master_secret"])
        #expect(descriptor.settings.filter(\.isSecret).map(\.key).sorted() == ["admin_password", "master_secret"])
    }

    @Test func defaultsReachTheBackend() async throws {
        let backend = try await build(minimal)
        #expect(backend.id == "jm")
        #expect(backend.client.settings.apiURL == "https://api.im.jpush.cn")
        #expect(backend.client.settings.reportURL == "https://report.im.jpush.cn")
        #expect(backend.client.settings.appKey == appKey && backend.client.settings.admin == "bridge_admin")
        #expect(backend.client.settings.adminPassword == nil)
        #expect(backend.client.settings == JMessageSettings(appKey: appKey, masterSecret: masterSecret, admin: "bridge_admin"))
        #expect(backend.client.settings.pollIntervalMs == 2000)
        #expect(await backend.poller.settings.overlapMs == 5000)
        #expect(await backend.poller.checkpointName == "jmessage.jm.poller")

        var custom = minimal
        custom["api_url"] = "http://127.0.0.1:1"
        custom["report_url"] = "http://127.0.0.1:2"
        custom["admin_password"] = "pw"
        custom["poll_interval_ms"] = "0"
        custom["routing_push"] = "yes"
        let configured = try await build(custom)
        #expect(configured.client.settings.apiURL == "http://127.0.0.1:1" && configured.client.settings.reportURL == "http://127.0.0.1:2")
        #expect(configured.client.settings.adminPassword == "pw" && configured.client.settings.pollIntervalMs == nil)
        let tuned = try await build(minimal.merging(["poll_interval": "500ms", "poll_overlap": "9s", "timeout": "1500ms"]) { $1 })
        #expect(tuned.client.settings.pollIntervalMs == 500)
        #expect(await tuned.poller.settings.overlapMs == 9000)
        #expect(tuned.client.settings.timeout.secondsRoundedUp == 2)
    }

    @Test(arguments: ["app_key", "master_secret", "admin"])
    func aMissingRequiredSettingIsNamed(key: String) async {
        var values = minimal
        values.removeValue(forKey: key)
        let error = await refusal(values)
        #expect(error?.code == .invalidArgument && error?.details["setting"] == key)
    }

    @Test(arguments: [
        ("poll_interval_ms", "-1"), ("poll_interval_ms", "often"), ("poll_overlap_ms", "-5"), ("routing_push", "maybe"),
        ("api_url", "api.im.jpush.cn"), ("report_url", "ftp://report"), ("poll_intervall_ms", "10"),
        ("poll_interval", "2000"), ("poll_interval", "-1s"), ("poll_overlap", "5 seconds"), ("timeout", "0s"),
    ])
    func aBadValueIsRefusedByItsKey(key: String, value: String) async {
        var values = minimal
        values[key] = value
        let error = await refusal(values)
        #expect(error?.code == .invalidArgument && error?.details["setting"] == key, "\(String(describing: error))")
    }
}

extension JMessageSettingsTests {
    /// A poll's overlap re-reads reports; it must stay within what the ledger still remembers.
    @Test func thePollOverlapMustFitTheLedgerRetention() async throws {
        let context = AdapterContext(mapping: MappingSet.shipped.table("jmessage"), validateOnly: true, ledgerRetentionMs: 2 * 3_600_000)
        var values = minimal
        values["poll_overlap_ms"] = String(3_600_000)
        _ = try await descriptor.makeBackend(id: "jm", settings: values, context: context)
        values["poll_overlap_ms"] = String(3_600_001)
        do {
            _ = try await descriptor.makeBackend(id: "jm", settings: values, context: context)
            Issue.record("an overlap longer than half the retention was accepted")
        } catch let error as IMError {
            #expect(error.details["setting"] == "poll_overlap_ms" && error.message.contains("(code): backends.jm.poll_overlap_ms: expected at most 1h (half of retention)"),
                    "\(error.message)")
        }
        values.removeValue(forKey: "poll_overlap_ms")
        values["poll_overlap"] = "1h"
        _ = try await descriptor.makeBackend(id: "jm", settings: values, context: context)
        values["poll_overlap"] = "61m"
        do {
            _ = try await descriptor.makeBackend(id: "jm", settings: values, context: context)
            Issue.record("an overlap longer than half the retention was accepted")
        } catch let error as IMError {
            #expect(error.message == "(code): backends.jm.poll_overlap: expected at most 1h (half of retention), got 61m: "
                    + "messages re-read after the ledger forgot them would relay again")
        }
    }
}
