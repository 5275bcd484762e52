import Foundation
import IMCore
import IMRelay
import IMSandbox
import Testing

/// The failing case, through the real `imbridge` executable and the sandboxes:
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
        let run = try MigrateProcess(["--config", try lab.configFile(store: "\(lab.lab.directory)/migrate.sqlite"), "--from", "wk", "--to", "nim",
                                      "--conversation", "direct:a,b", "--report", reportPath], directory: lab.lab.directory)
        let finished = await run.wait(timeoutSeconds: 120)
        #expect(finished?.status == 0, "\(run.log)")
        let copies = try await lab.records("nim", in: ab)
        #expect(copies.map(\.text) == (1...500).map { "message \($0)" }, "every message, in order, in direct:a,b")
        #expect(copies.map(\.from) == (1...500).map { $0.isMultiple(of: 2) ? "b" : "a" }, "senders keep their ids")
        let report = try JSONDecoder().decode(MigrationReport.self, from: Data(contentsOf: URL(fileURLWithPath: reportPath)))
        #expect(report.total.copied == 500 && report.total.failedTotal == 0, "\(report.summary)")
        #expect((report.account?.usersCreated ?? 0) + (report.account?.usersProvisioned ?? 0) == 2, "a and b made on NIM: \(report.summary)")
        await lab.stop()
    }
}
