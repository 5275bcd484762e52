import BridgeTestSupport
import Foundation
import IMCore
import IMHTTP
import IMAdapterKit
import IMLab
import IMStore
import Testing

/// Where a restarted bridge reads its sources from (docs/architecture.md, "Catch-up" and "Catch-up of
/// changes"), with a real `imbridge run` process: never from before what it recorded — changes whose
/// ledger rows were pruned would be relayed again — and never from past a position the source's history
/// does not have — messages sent up to there would be lost.
extension CrashTests {
    @Suite(.serialized) struct RestartPositionsTests {
        typealias Rig = ChangesWhileDownTests.Rig

        /// `retention: 30s`; three messages edited on WuKong and relayed (as notices: RongCloud cannot
        /// edit); the bridge stopped until their ledger rows are pruned; started again; one more edit. Each
        /// edit's notice arrives once: the extras sync reads on from the position stored with the earlier
        /// edits, not from the start of the business server's extras.
        @Test func oldEditsAreNotRelayedAgainAfterARestartPastRetention() async throws {
            let rig = try await Rig.start(("wk", "wukong"), ("rc", "rongcloud"),
                                          extra: "retention: 30s\ncatch_up:\n  interval: 10m\n  max_age: 30s\n")
            defer { Task { await rig.bridgeRig.stop() } }
            let wk = try await rig.lab.userBackend("wk", registry: ContentRegistry())
            let editing = try #require(wk as? any Editing)
            let group = ConversationRef.group("rt1")
            var bridge = try await rig.bridge(run: 1)
            var sent: [Message] = []
            for n in 1...4 { sent.append(try await wk.send(OutgoingMessage(conversation: group, sender: "ann", content: .text("m\(n)")))) }
            #expect(try await eventually(60) { try await rig.records("rt1").count == 4 }, "\(bridge.output.suffix(3000))")
            func notices() async throws -> [String] {
                try await rig.records("rt1").compactMap { $0["text"]?.stringValue }.filter { $0.contains("edit-") }
            }
            for n in 1...3 { try await editing.edit(sent[n - 1].id, in: group, by: "ann", content: .text("edit-\(n)")) }
            let editsRelayed = try await eventually(60) { try await notices().count == 3 }
            let relayedNotices = try await notices()
            #expect(editsRelayed, "\(relayedNotices)\n\(bridge.output.suffix(3000))")
            #expect(await bridge.terminate() == 0)

            // Down past `retention`: the ledger rows of the three edits go at the next start's prune.
            try await Task.sleep(nanoseconds: 32_000_000_000)
            bridge = try await rig.bridge(run: 2)
            defer { bridge.killWithoutWaiting() }
            let pruned = try await eventually(30) {
                let metrics = try await HTTPClientWrapper().send(OutboundRequest(method: "GET", url: rig.bridgeRig.baseURL() + "/metrics"))
                return String(decoding: metrics.body, as: UTF8.self).split(separator: "\n")
                    .contains { $0.hasPrefix(#"imbridge_pruned_total{table="ledger"}"#) }
            }
            #expect(pruned, "the earlier ledger rows were pruned")
            try await editing.edit(sent[3].id, in: group, by: "ann", content: .text("edit-4"))
            #expect(try await eventually(60) { try await notices().contains { $0.contains("edit-4") } })
            // Whatever the sync that brought edit-4 also brought has been relayed with it; a moment more for stragglers.
            try await Task.sleep(nanoseconds: 3_000_000_000)
            let seen = try await notices()
            #expect(seen.count == 4, "each edit's notice once, got \(seen):\n\(bridge.output.suffix(3000))")
            #expect(Set(seen.map { $0.components(separatedBy: "edit-").last ?? "" }).count == 4)
            #expect(await bridge.terminate() == 0)
        }

        /// An edit and a reaction made on WuKong reach the bridge as CMDs that set off the extras and
        /// reaction syncs; the feed positions those syncs reached are stored with the changes they brought.
        /// Kept only in memory, every later read began past the stored position and was refused as having
        /// skipped changes ("behind … where the read began"), and a restart read the feeds from their start.
        @Test func aChangeRelayedLiveStoresItsFeedPosition() async throws {
            let rig = try await Rig.start(("wk", "wukong"), ("rc", "rongcloud"), extra: "catch_up:\n  interval: 2s\n  max_age: 1h\n")
            defer { Task { await rig.bridgeRig.stop() } }
            let wk = try await rig.lab.userBackend("wk", registry: ContentRegistry())
            let group = ConversationRef.group("rt3")
            let bridge = try await rig.bridge(run: 1)
            defer { bridge.killWithoutWaiting() }
            var sent: [Message] = []
            for n in 1...2 { sent.append(try await wk.send(OutgoingMessage(conversation: group, sender: "ann", content: .text("p\(n)")))) }
            #expect(try await eventually(60) { try await rig.records("rt3").count == 2 }, "\(bridge.output.suffix(3000))")
            // A catch-up pass reads the feeds once before the changes, so that their later reads go on from a position.
            try await Task.sleep(nanoseconds: 3_000_000_000)
            try await #require(wk as? any Editing).edit(sent[0].id, in: group, by: "ann", content: .text("p1-edited"))
            _ = try await #require(wk as? any Reacting).toggleReaction("👍", on: sent[1].id, in: group, by: "bob")
            func notices() async throws -> [String] {
                try await rig.records("rt3").compactMap { $0["text"]?.stringValue }.filter { $0.contains("p1-edited") || $0.contains("👍") }
            }
            #expect(try await eventually(60) { try await notices().count == 2 }, "\(bridge.output.suffix(3000))")
            // Two more catch-up passes read the feeds on from where the changes' syncs ended.
            try await Task.sleep(nanoseconds: 5_000_000_000)
            let store = try BridgeStore(path: rig.bridgeRig.sqlitePath)
            let stored = try store.read { tx in
                try ["extras", "reactions"].map { try tx.checkpoint(FeedPosition.checkpointName(backend: "wk", conversation: group, feed: $0)) }
            }
            #expect(stored.allSatisfy { $0 != nil }, "the extras and reaction positions are stored: \(stored)")
            #expect(!bridge.output.contains("where the read began"), "no read refused as skipping changes:\n\(bridge.output.suffix(3000))")
            #expect(try await notices().count == 2, "each change relayed once")
            #expect(await bridge.terminate() == 0)
        }

        /// A WuKong webhook batch (with the webhook secret) whose `message_seq` is 1,000 past the channel's
        /// real one is relayed, but does not move the conversation's catch-up position: the three messages
        /// sent while the bridge is next down come back from history on the next start.
        @Test func aForgedSequenceNumberDoesNotLoseLaterMessages() async throws {
            let rig = try await Rig.start(("wk", "wukong"), ("rc", "rongcloud"), extra: "catch_up:\n  interval: 10m\n  max_age: 1h\n")
            defer { Task { await rig.bridgeRig.stop() } }
            let wk = try await rig.lab.userBackend("wk", registry: ContentRegistry())
            let group = ConversationRef.group("rt2")
            var bridge = try await rig.bridge(run: 1)
            func texts() async throws -> [String] { try await rig.records("rt2").compactMap { $0["text"]?.stringValue } }
            for text in ["c1", "c2"] { _ = try await wk.send(OutgoingMessage(conversation: group, sender: "ann", content: .text(text))) }
            #expect(try await eventually(60) { try await texts() == ["c1", "c2"] }, "\(bridge.output.suffix(3000))")

            // The last real message, 1,000 further on under a new id, as WuKongIM's msg.notify would carry it.
            let last = try #require(try await rig.records("rt2", on: "wk").last?["raw"]?.objectValue)
            let seq = try #require(last["message_seq"]?.int64Value)
            let id = try #require(last["message_id"]?.int64Value) + 1_000_000
            var forged = last
            forged["message_seq"] = .int(seq + 1000)
            forged["message_id"] = .int(id)
            forged["message_idstr"] = .string(String(id))
            forged["client_msg_no"] = .string("forged-\(id)")
            forged["payload"] = .string(Data(#"{"type":1,"content":"forged"}"#.utf8).base64EncodedString())
            let answer = try await HTTPClientWrapper().send(OutboundRequest(
                method: "POST", url: rig.bridgeRig.baseURL() + "/callbacks/wk?event=msg.notify",
                headers: [("Content-Type", "application/json"), ("X-IMBridge-Secret", BridgeLab.webhookSecret)],
                body: Array(JSONValue.array([.object(forged)]).jsonString().utf8)))
            #expect(answer.status == 200)
            #expect(try await eventually(60) { try await texts().contains("forged") }, "the forged message is relayed (it carried the secret)")
            #expect(await bridge.terminate() == 0)
            let standIn = try await rig.standIn()

            for text in ["c3", "c4", "c5"] { _ = try await wk.send(OutgoingMessage(conversation: group, sender: "ann", content: .text(text))) }
            try await rig.callbacksDropped(atLeast: 3)
            await standIn.stop()
            bridge = try await rig.bridge(run: 2)
            defer { bridge.killWithoutWaiting() }
            let recovered = try await eventually(60) { try await Set(texts()).isSuperset(of: ["c3", "c4", "c5"]) }
            let got = try await texts()
            #expect(recovered, "the messages sent while down came back; got \(got):\n\(bridge.output.suffix(3000))")
            #expect(try await texts().filter { $0.hasPrefix("c") } == ["c1", "c2", "c3", "c4", "c5"], "once each, in order")
            #expect(await bridge.terminate() == 0)
        }
    }
}
