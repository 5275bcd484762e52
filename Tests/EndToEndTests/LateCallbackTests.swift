import BridgeTestSupport
import Foundation
import IMCore
import IMLab
import IMSandbox
import IMStore
import SandboxTestSupport
import Testing

/// Callbacks behind the catch-up position (docs/architecture.md, "Callbacks behind the catch-up
/// position"), with a real `imbridge run` process and the NIM sandbox retrying its message copies until
/// the bridge answers (as NIM retries a copy not answered 200).
extension CrashTests.ChangesWhileDownTests {
    /// NIM → WuKong: a message whose copy the bridge could not take (down) is recalled on NIM; NIM's
    /// history drops it, so the start's catch-up reads past it and relays the newer messages. When NIM's
    /// retried copy of it comes, the bridge looks it up in history, finds it gone, and withholds it: it is
    /// never shown on WuKong behind the newer messages (nor recalled there), and its recall is no dead
    /// letter. The newer messages arrive once each, in order.
    @Test func aLateCopyOfAMessageRecalledOnNIMIsWithheld() async throws {
        // Retried every 1.5 s until answered: the copies of what was sent while down come after the start.
        let rig = try await Rig.start(("yx", "nim"), ("wk", "wukong"),
                                      options: ["callback_attempts": "0", "callback_retry_ms": "1500", "callback_retry_max_ms": "1500"])
        defer { Task { await rig.bridgeRig.stop() } }
        let yx = try await rig.lab.userBackend("yx", registry: ContentRegistry())
        let tid = "1300000606"
        try await rig.lab.seedGroup("yx", tid, owner: "ann", members: ["ann"])
        let group = ConversationRef.group(GroupID(tid))
        var bridge = try await rig.bridge(run: 1)
        _ = try await rig.sendRelayed(["first"], into: group, through: yx, bridge: bridge)
        #expect(await bridge.terminate() == 0)
        let standIn = try await rig.standIn()

        func send(_ text: String) async throws -> Message {
            try await yx.send(OutgoingMessage(conversation: group, sender: "ann", content: .text(text)))
        }
        let gone = try await send("gone")
        try await #require(yx as? any Recalling).recall(gone.id, in: group, by: "ann")
        let after = [try await send("after-1"), try await send("after-2")]
        // Every copy tried at least once against the stand-in (none is given up: they wait for the bridge).
        try await Task.sleep(nanoseconds: 2_000_000_000)
        await standIn.stop()

        bridge = try await rig.bridge(run: 2)
        defer { bridge.killWithoutWaiting() }
        let vendor = try #require(rig.lab.sandboxes["yx"]?.vendor)
        let delivered = try await eventually(60) {
            let copied = try after.allSatisfy { try rig.copy(of: $0.id) != nil }
            let pending = await CrashTests.CatchUpEndToEndTests.Rig.deliveryState(vendor).pending
            return copied && pending == 0
        }
        #expect(delivered, "the newer messages relayed and every retried copy taken:\n\(bridge.output.suffix(4000))")
        // A message sent after everything: relayed in the same lane after anything queued before it.
        let last = try await send("final")
        #expect(try await eventually(60) { try rig.copy(of: last.id) != nil }, "the last message relayed:\n\(bridge.output.suffix(3000))")

        let texts = try await rig.records(tid).filter { $0["kind"] == "text" }.compactMap { $0["text"]?.stringValue }
        let shown = try await rig.lab.table("wk", title: "WuKong")
        #expect(!texts.contains("gone"), "the recalled message never shown on WuKong:\n\(shown)\n\(bridge.output.suffix(4000))")
        #expect(texts == ["first", "after-1", "after-2", "final"], "once each, in order:\n\(shown)")
        #expect(try rig.copy(of: gone.id) == nil)
        let dead = try BridgeStore(path: rig.bridgeRig.sqlitePath).read { try $0.deadLetters(limit: 5) }.map { $0.lastError ?? "" }
        #expect(dead.isEmpty, "no dead letters: \(dead)")
        #expect(await bridge.terminate() == 0)
    }
}
