import BridgeTestSupport
import Foundation
import IMCore
import IMHTTP
import IMLab
import PostgresTestSupport
import Testing

/// `imbridge migrate` of a conversation while `imbridge run` relays new messages into it, two processes
/// on one store (SQLite, PostgreSQL) against the sandboxes (docs/migration.md, "Through the outbox"): one
/// copy of each message, old and new.
extension CrashTests {
    @Suite(.serialized) struct MigrateWhileRelayingTests {
        @Test(arguments: ["sqlite", "postgresql"])
        func aMigrationDuringLiveRelayLeavesExactlyOneCopyOfEachMessage(store kind: String) async throws {
            let routes = "  - from: \"wk:group:mig1\"\n    to: \"rc:group:mig1\"\n    direction: forward\n"
            // Without catch-up the history sent before the bridge starts is left to the migration.
            let rig = try await BridgeRig.make([BridgeLab.Member("wk", "wukong"), BridgeLab.Member("rc", "rongcloud")], routes: routes,
                                               store: kind == "sqlite" ? nil : "\"\(try TestPostgres.freshURL("migrelay"))\"",
                                               extra: "catch_up:\n  enabled: false\n")
            let (lab, config) = (rig.lab, rig.config)
            defer { Task { await rig.stop() } }
            let wk = try await lab.userBackend("wk", registry: ContentRegistry())
            let group = ConversationRef.group("mig1")
            let senders: [UserID] = ["ann", "bob"]
            let history = (1...150).map { "h-\($0)" }, live = (1...200).map { "live-\($0)" }
            for (n, text) in history.enumerated() {
                _ = try await wk.send(OutgoingMessage(conversation: group, sender: senders[n % 2], content: .text(text)))
            }

            let bridge = try rig.launch()
            defer { bridge.killWithoutWaiting() }
            #expect(await bridge.waitUntilUp())
            // Live messages at about 20 a second for 10 s; the migration starts one second in.
            let stream = Task {
                for (n, text) in live.enumerated() {
                    _ = try await wk.send(OutgoingMessage(conversation: group, sender: senders[n % 2], content: .text(text)))
                    try await Task.sleep(nanoseconds: 50_000_000)
                }
            }
            try await Task.sleep(nanoseconds: 1_000_000_000)
            let migrate = try await IMBridgeCLI.run(["migrate", "--config", config, "--from", "wk", "--to", "rc", "--conversation", "group:mig1",
                                                     "--history-only"], timeoutSeconds: 180)
            #expect(migrate.status == 0, "\(migrate.output)")
            try await stream.value

            func relayed() async throws -> [String] {
                try await lab.messages("rc").filter { $0["kind"] == "text" && $0["conversation_id"]?.stringValue == "mig1" }
                    .compactMap { $0["text"]?.stringValue }
            }
            let total = history.count + live.count
            #expect(try await eventually(120) { try await relayed().count >= total }, "bridge log:\n\(bridge.output)")
            try await Task.sleep(nanoseconds: 1_000_000_000)
            let copies = try await relayed()
            let doubles = Dictionary(grouping: copies, by: { $0 }).filter { $0.value.count > 1 }.keys.sorted()
            #expect(doubles.isEmpty, "doubled: \(doubles)")
            #expect(Set(copies) == Set(history + live), "missing: \(Set(history + live).subtracting(copies).sorted())")
            #expect(copies.count == total)
            #expect(copies.filter { $0.hasPrefix("live-") } == live, "live messages in order")
            #expect(migrate.output.contains("total: copied"), "\(migrate.output)")
            #expect(await bridge.terminate() == 0, "SIGTERM ends the bridge cleanly")
        }
    }
}
