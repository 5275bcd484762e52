import BridgeTestSupport
import Foundation
import GRDB
import IMCore
import IMLab
import IMStore
import SandboxTestSupport
import Testing

/// A recall the target carried out whose outcome the bridge never recorded: the process was killed between
/// NIM's answer and the record, and the entry runs again after the restart. NIM's history no longer lists a
/// recalled message, and the restarted adapter no longer remembers sending the copy, so it cannot find it.
/// The recall is counted as done, not set aside as a dead letter (seed 57, docs/reliability.md).
extension CrashTests {
    @Suite(.serialized) struct RecallAfterRestartTests {
        @Test func aRecallNIMCarriedOutBeforeTheRestartIsNotADeadLetter() async throws {
            let team = "1300000961"
            let routes = "  - from: \"wk:group:g\"\n    to: \"yx:group:\(team)\"\n    direction: forward\n"
            let rig = try await BridgeRig.make([BridgeLab.Member("wk", "wukong"), BridgeLab.Member("yx", "nim")], routes: routes)
            defer { Task { await rig.stop() } }
            try await rig.lab.seedGroup("yx", team, owner: "wk_alice", members: [])
            let wk = try await rig.lab.userBackend("wk", registry: ContentRegistry())
            let yx = try await rig.lab.userBackend("yx", registry: ContentRegistry())
            let group = ConversationRef.group("g")

            var bridge = try await rig.start(log: "bridge-1.log")
            let message = try await wk.send(OutgoingMessage(conversation: group, sender: "alice", content: .text("to-recall")))
            var copy: MessageID?
            let relayed = try await eventually(60) {
                copy = try BridgeStore(path: rig.sqlitePath).read { try $0.mapped(message.id, from: "wk", to: "yx") }?.toMessage
                return copy != nil
            }
            #expect(relayed, "relayed:\n\(bridge.output.suffix(3000))")
            #expect(await bridge.terminate() == 0)

            // What the killed attempt did before its outcome was recorded: NIM recalled the copy.
            try await #require(yx as? any Recalling).recall(try #require(copy), in: .group(GroupID(team)), by: "wk_alice")
            bridge = try await rig.start(log: "bridge-2.log")
            try await #require(wk as? any Recalling).recall(message.id, in: group, by: "alice")

            // The recall's entry runs on the restarted bridge and finds the copy gone.
            let database = try DatabaseQueue(path: rig.sqlitePath)
            func recallState() throws -> String? {
                try database.read { try String.fetchOne($0, sql: "SELECT state FROM outbox WHERE kind = 'recall'") }
            }
            let ran = try await eventually(60) { try ["done", "dead"].contains(recallState() ?? "") }
            let state = try recallState()
            #expect(ran, "the recall ran:\n\(bridge.output.suffix(3000))")
            #expect(state == "done", "the recall of a copy NIM no longer lists is done, not a dead letter (\(state ?? "none")):\n\(bridge.output.suffix(3000))")
            #expect(bridge.output.contains("counted as recalled"), "the bridge says why:\n\(bridge.output.suffix(3000))")
            #expect(await bridge.terminate() == 0)
        }
    }
}
