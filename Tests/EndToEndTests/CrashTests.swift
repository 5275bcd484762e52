import BridgeTestSupport
import Foundation
import IMBridgeApp
import IMLab
import IMVendors
import IMCore
import IMHTTP
import Testing

/// The bridge process is killed with SIGKILL part way through a few thousand messages and restarted:
/// every message arrives exactly once, in order per conversation. The RongCloud sandbox (source) is set
/// to redeliver routing callbacks until it gets a 200 (`callback_attempts=0`; its default gives up like
/// the vendor, which `CatchUpEndToEndTests` covers); WuKong (target) lets a re-run send find its earlier copy by
/// `client_msg_no`.
@Suite(.serialized) struct CrashTests {
    @Test func sigkillPartWayLosesAndDoublesNothing() async throws {
        let rig = try await BridgeRig.make([BridgeLab.Member("rc", "rongcloud", options: ["callback_attempts": "0"]), BridgeLab.Member("wk", "wukong")],
                                           routes: "  - from: \"rc:group:*\"\n    to: \"wk:group:*\"\n    direction: forward\n    group_ids: same\n")
        let lab = rig.lab
        defer { Task { await rig.stop() } }
        var bridge = try rig.launch()
        defer { bridge.killWithoutWaiting() }
        #expect(await bridge.waitUntilUp())

        let conversations = ["c1", "c2", "c3", "c4"], perConversation = 500
        let rc = try await lab.userBackend("rc", registry: ContentRegistry())
        let senders = Task {
            try await withThrowingTaskGroup(of: Void.self) { group in
                for id in conversations {
                    group.addTask {
                        for n in 1...perConversation {
                            _ = try await rc.send(OutgoingMessage(conversation: .group(GroupID(id)), sender: UserID("u_\(id)"), content: .text("\(id)-\(n)")))
                        }
                    }
                }
                try await group.waitForAll()
            }
        }
        func relayed() async throws -> [JSONValue] { try await lab.messages("wk").filter { $0["kind"] == "text" } }
        #expect(try await eventually(120) { try await relayed().count >= 600 }, "bridge log:\n\(bridge.output)")
        await bridge.kill()
        let atKill = try await relayed().count
        bridge = try rig.launch()
        try await senders.value
        let total = conversations.count * perConversation
        #expect(try await eventually(180) { try await relayed().count >= total }, "bridge log:\n\(bridge.output)")
        try await Task.sleep(nanoseconds: 500_000_000)
        let records = try await relayed()
        #expect(records.count == total, "\(records.count) copies for \(total) messages (killed at \(atKill))")
        for id in conversations {
            let texts = records.filter { $0["conversation_id"]?.stringValue == id }.compactMap { $0["text"]?.stringValue }
            #expect(texts == (1...perConversation).map { "\(id)-\($0)" }, "conversation \(id) is not exactly once, in order")
        }
        #expect(await bridge.terminate() == 0, "SIGTERM ends the bridge cleanly")
        #expect(atKill < total, "the kill happened part way")
    }
}
