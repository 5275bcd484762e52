import BridgeTestSupport
import Foundation
import IMBridgeApp
import IMCore
import IMRelay
import IMSandbox
import Testing
import IMMigration

/// Through the real `imbridge` executable and the sandboxes:
/// `imbridge migrate --from wk --to nim --conversation direct:a,b` with no other option. Before users kept
/// their ids, every one of the 500 messages failed (`wk_a is not a user of direct:a,b`). The users exist
/// only on WuKong: the migration creates them on NIM (which refuses messages between unknown accounts).
@Suite struct DefaultMigrationTests {
    @Test func aDirectConversationWithNoOptionsCopiesEveryMessage() async throws {
        let lab = try await MigrationLab()
        let wk = try await lab.backend("wk", store: try lab.newStore())
        let provisioning = try #require(wk as? any UserProvisioning)
        for user in ["a", "b"] { try await provisioning.ensureUser(UserProfile(id: UserID(user), name: "user \(user)")) }
        let ab = ConversationRef.direct("a", "b")
        for n in 1...500 {
            _ = try await wk.send(OutgoingMessage(conversation: ab, sender: n.isMultiple(of: 2) ? "b" : "a", content: .text("message \(n)")))
        }
        let reportPath = "\(lab.lab.directory)/report.json"
        let run = try BridgeProcess.migrate(["--config", try lab.configFile(store: "\(lab.lab.directory)/migrate.sqlite"), "--from", "wk", "--to", "nim",
                                      "--conversation", "direct:a,b", "--report", reportPath], directory: lab.lab.directory)
        let finished = await run.waitForExit(seconds: 120)
        #expect(finished == 0, "\(run.output)")
        let copies = try await lab.records("nim", in: ab)
        #expect(copies.map(\.text) == (1...500).map { "message \($0)" }, "every message, in order, in direct:a,b")
        #expect(copies.map(\.from) == (1...500).map { $0.isMultiple(of: 2) ? "b" : "a" }, "senders keep their ids")
        let report = try JSONDecoder().decode(MigrationReport.self, from: Data(contentsOf: URL(fileURLWithPath: reportPath)))
        #expect(report.total.copied == 500 && report.total.failedTotal == 0, "\(report.summary)")
        #expect((report.account?.usersCreated ?? 0) + (report.account?.usersProvisioned ?? 0) == 2, "a and b made on NIM: \(report.summary)")
        await lab.stop()
    }
}

/// `imbridge migrate` takes no callbacks, so a configuration made for it alone needs no callback
/// settings: a WuKong source without `webhook_secret` migrates, while `run` and `check` still refuse it.
@Suite struct MigrateOnlyConfigurationTests {
    @Test func aWuKongSourceWithoutWebhookSecretMigrates() async throws {
        let lab = try await MigrationLab()
        let wk = try await lab.backend("wk", store: try lab.newStore())
        let provisioning = try #require(wk as? any UserProvisioning)
        for user in ["a", "b"] { try await provisioning.ensureUser(UserProfile(id: UserID(user), name: "user \(user)")) }
        let ab = ConversationRef.direct("a", "b")
        for n in 1...5 { _ = try await wk.send(OutgoingMessage(conversation: ab, sender: "a", content: .text("message \(n)"))) }
        let path = try lab.configFile(store: "\(lab.lab.directory)/migrate.sqlite")
        let yaml = try String(contentsOfFile: path, encoding: .utf8)
        let stripped = yaml.split(separator: "\n", omittingEmptySubsequences: false)
            .filter { !$0.contains("webhook_secret:") && !$0.contains("allow_unsigned_callbacks:") }.joined(separator: "\n")
        #expect(stripped != yaml, "the lab's configuration had a webhook_secret to take out")
        try stripped.write(toFile: path, atomically: true, encoding: .utf8)

        await #expect(throws: (any Error).self, "run and check still require it") {
            _ = try await ConfigCheck.load(path: path, requireRoutes: false)
        }
        let run = try BridgeProcess.migrate(["--config", path, "--from", "wk", "--to", "nim", "--conversation", "direct:a,b"],
                                     directory: lab.lab.directory)
        let finished = await run.waitForExit(seconds: 120)
        #expect(finished == 0, "\(run.output)")
        #expect(try await lab.records("nim", in: ab).map(\.text) == (1...5).map { "message \($0)" })
        await lab.stop()
    }
}
