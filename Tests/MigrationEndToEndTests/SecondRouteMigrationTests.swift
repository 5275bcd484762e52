import BridgeTestSupport
import Foundation
import IMCore
import IMMigration
import Testing

/// `imbridge migrate` along one route of a source conversation that has a second route into another
/// conversation on the same target backend (docs/migration.md, "Exactly once"): the id map keys a copy
/// by (message, source backend, target backend), so the row a message has after its copy into the second
/// route's conversation names that copy, which is no copy of this conversation. Through the real
/// `imbridge` executable and the sandboxes, WuKong → RongCloud.
@Suite struct SecondRouteMigrationTests {
    @Test func aCopyInTheOtherRoutesConversationIsNotThisConversations() async throws {
        let lab = try await MigrationLab()
        let users: [UserID] = ["dualann", "dualbob"]
        try await lab.provision(users)
        let wk = try await lab.backend("wk", store: try lab.newStore())
        let source = ConversationRef.group("dual")
        let texts = (1...6).map { "dual text \($0)" }
        for (n, text) in texts.enumerated() {
            _ = try await wk.send(OutgoingMessage(conversation: source, sender: users[n % 2], content: .text(text)))
        }
        // Older than `catch_up.max_age` (1 s here) when migrated: no callback or catch-up could meet them, so the
        // migration records no ledger row for them and queues nothing along the other route (what it would
        // queue there would reach the other conversation whatever the id map says).
        try await Task.sleep(nanoseconds: 1_500_000_000)
        let routes = """
              - from: "wk:group:dual"
                to: "rc:group:dualA"
                direction: forward
              - from: "wk:group:dual"
                to: "rc:group:dualB"
                direction: forward

            """
        let config = try lab.configFile(store: "\(lab.lab.directory)/migrate.sqlite", routes: routes,
                                        extra: "catch_up:\n  max_age: 1s\n  change_window: 1s\n")
        func migrate(into target: String, _ more: [String] = []) async throws -> MigrationReport.Counts {
            let report = "\(lab.lab.directory)/report-\(UUID().uuidString).json"
            let run = try BridgeProcess.migrate(["--config", config, "--from", "wk", "--to", "rc", "--conversation", "group:dual=group:\(target)",
                                                 "--history-only", "--report", report] + more, directory: lab.lab.directory)
            let status = await run.waitForExit(seconds: 120)
            #expect(status == 0, "\(run.output)")
            let decoded = try JSONDecoder().decode(MigrationReport.self, from: Data(contentsOf: URL(fileURLWithPath: report)))
            return try #require(decoded.conversations.first).counts
        }
        func shown(_ conversation: String) async throws -> [String] {
            try await lab.records("rc", in: .group(GroupID(conversation))).map(\.text)
        }

        // Along the second route first: its conversation gets every message, and the id map names those copies.
        let intoB = try await migrate(into: "dualB")
        #expect(intoB.sentTotal == texts.count, "\(intoB)")
        #expect(try await shown("dualB") == texts)
        // Then along the first: the id map's rows name dualB's copies, which are not dualA's.
        let intoA = try await migrate(into: "dualA")
        #expect(intoA.sentTotal == texts.count && intoA.skipped["already_copied"] == nil, "dualA's copies were taken as made: \(intoA)")
        #expect(try await shown("dualA") == texts, "every message in dualA, once, in order")
        #expect(try await shown("dualB") == texts, "dualB keeps one copy of each")
        // A rerun along the first route over a window of its own (a new checkpoint: it reads the history again)
        // finds dualA's copies, the id map's rows now, and sends nothing.
        let rerun = try await migrate(into: "dualA", ["--since", "2000-01-01T00:00:00Z"])
        #expect(rerun.sentTotal == 0 && rerun.skipped["already_copied"] == texts.count, "\(rerun)")
        #expect(try await shown("dualA") == texts)
        #expect(try await shown("dualB") == texts)
        await lab.stop()
    }
}
