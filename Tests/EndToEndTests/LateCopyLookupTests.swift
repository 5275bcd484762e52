import Foundation
import IMBridgeApp
import IMCore
import IMHTTP
import IMLab
import IMOutbox
import IMRelay
import IMStore
import Synchronization
import Testing

/// The copies an attempt can leave on WuKongIM without an answer naming them (Finding 48,
/// docs/reliability.md; docs/high-availability.md, "Fenced deliveries"): a send cut off by the lease check
/// between its two requests has written its message, and a late copy carries the same `client_msg_no` as
/// the copy the id map names — a retraction that reads one of them may read the recorded one.
@Suite struct LateCopyLookupTests {
    struct Lapsed: Error {}

    @Test func aSendCutOffBetweenItsMessageAndItsExpansionIsNotTakenForNothingWritten() async throws {
        let env = try await InProcessBridge.start([BridgeLab.Member("rc", "rongcloud"), BridgeLab.Member("wk", "wukong")],
                                                  routes: route("rc:group:lk0", "wk:group:lk0", direction: "forward"))
        defer { Task { await env.stop() } }
        try await env.lab.seedGroup("wk", "lk1", owner: "ann", members: ["ann"])
        let wk = try await env.users("wk")
        let group = ConversationRef.group("lk1")
        let delivery = Delivery(target: wk, store: env.bridge.store, retry: RetryPolicy(baseMs: 10, maxMs: 100, jitter: 0))
        // The lease check passes for the send's own check and for `/message/send`, then lapses: the
        // initial `extra` write is refused, as after a pause between the two requests.
        let checks = Atomic<Int>(0)
        let outgoing = OutgoingMessage(conversation: group, sender: "ann", content: .text("cut off"),
                                       clientMessageID: ClientMessageID("imb-lk-1"), expansion: ["status": "new"])
        var thrown: (any Error)?
        do {
            _ = try await delivery.send(outgoing, in: group, earlierAttemptAt: nil) {
                if checks.add(1, ordering: .relaxed).newValue > 2 { throw Lapsed() }
            }
        } catch {
            thrown = error
        }
        let refusal = try #require(thrown as? WriteGate.RefusedAfterWrite, "\(String(describing: thrown))")
        #expect(refusal.refusal is Lapsed && refusal.passes >= 1)
        let written = try await #require(wk as? any ClientIDLookup).messages(withClientID: "imb-lk-1", in: group, readingAs: "ann")
        #expect(written.count == 1, "the message went out before the refusal")

        // A refusal before anything went out is still the refusal itself (nothing written).
        do {
            _ = try await delivery.send(OutgoingMessage(conversation: group, sender: "ann", content: .text("never"),
                                                        clientMessageID: ClientMessageID("imb-lk-2")), in: group, earlierAttemptAt: nil) { throw Lapsed() }
            Issue.record("the send was refused")
        } catch {
            #expect(error is Lapsed, "\(error)")
        }
        #expect(try await #require(wk as? any ClientIDLookup).messages(withClientID: "imb-lk-2", in: group, readingAs: "ann").isEmpty)
    }

    @Test func aLateCopyBesideTheRecordedOneIsTakenBackWhateverTheLookupReturnsFirst() async throws {
        let env = try await InProcessBridge.start([BridgeLab.Member("rc", "rongcloud"), BridgeLab.Member("wk", "wukong")],
                                                  routes: route("rc:group:lk2", "wk:group:lk2", direction: "forward"))
        defer { Task { await env.stop() } }
        let rc = try await env.users("rc"), wk = try await env.users("wk")
        let group = ConversationRef.group("lk2")
        let sent = try await rc.send(OutgoingMessage(conversation: group, sender: "ann", content: .text("sent once")))
        func recorded() throws -> MessageID? { try env.bridge.store.read { try $0.mapped(sent.id, from: "rc", to: "wk") }?.toMessage }
        #expect(try await eventually(30) { try recorded() != nil })
        let copyID = try #require(try recorded())
        func copies() async throws -> [Message] {
            try await wk.history(HistoryQuery(conversation: group, anchor: .latest, limit: 50)).messages.filter { $0.currentContent.digest == "sent once" }
        }
        let copy = try #require(try await copies().first { $0.id == copyID })
        let clientID = try #require(copy.clientMessageID)

        // What a paused holder's attempt left once it resumed: the same text under the same client id,
        // after the new holder's copy (WuKongIM keeps both, docs/adapters/wukong.md).
        let late = try await wk.send(OutgoingMessage(conversation: group, sender: copy.sender, content: .text("sent once"), clientMessageID: clientID))
        // The retraction the old holder queues when no answer named its copy.
        var outgoing = OutgoingMessage(conversation: group, sender: copy.sender, content: .text("sent once"))
        outgoing.clientMessageID = clientID
        let route = try #require(env.bridge.config.routes.first)
        let payload = OutboxPayload(action: .retract(source: sent.id, copy: nil, outgoing: outgoing, attemptAt: 0), route: route, eventTimeMs: 0)
        let encoded = try payload.encoded()
        try env.bridge.store.transaction { tx in
            _ = try tx.enqueue(lane: LaneKey(backend: "wk", conversation: group), sourceBackend: "rc", sourceEventID: EventID("retract:lk"),
                               kind: payload.action.kindName, payload: encoded, at: 0)
        }
        env.bridge.engine.wake()
        let takenBack = try await eventually(30) { try await copies().first { $0.id == late.id }?.isRecalled == true }
        let shown = try await copies().map { "\($0.id.rawValue) recalled \($0.isRecalled)" }
        #expect(takenBack, "the late copy is recalled: \(shown)")
        #expect(await env.bridge.engine.waitUntilIdle())
        #expect(try await copies().first { $0.id == copyID }?.isRecalled == false, "the recorded copy stays")
    }

    /// RongCloud, which has no client-id lookup, its clock ten minutes behind the bridge's: a late attempt's
    /// copy, stored after the new holder's copy and followed by later messages the lane relayed before the
    /// retraction ran, is found and taken back — by its place after the recorded copy, not by its time
    /// (seed 186, docs/reliability.md). The recorded copy and the later ones stay.
    @Test func aLateCopyOnRongCloudIsFoundAfterTheRecordedCopyWhateverItsClock() async throws {
        let env = try await InProcessBridge.start([BridgeLab.Member("wk", "wukong"), BridgeLab.Member("rc", "rongcloud")],
                                                  routes: route("wk:group:lk3", "rc:group:lk3", direction: "forward"))
        defer { Task { await env.stop() } }
        try #require(env.lab.sandboxes["rc"]).clock.skew(byMs: -600_000)
        let wk = try await env.users("wk"), rc = try await env.users("rc")
        let group = ConversationRef.group("lk3")
        let sent = try await wk.send(OutgoingMessage(conversation: group, sender: "ann", content: .text("sent once")))
        func mapped(_ id: MessageID) throws -> MessageID? { try env.bridge.store.read { try $0.mapped(id, from: "wk", to: "rc") }?.toMessage }
        #expect(try await eventually(30) { try mapped(sent.id) != nil })
        let copyID = try #require(try mapped(sent.id))
        func shown() async throws -> [Message] {
            try await rc.history(HistoryQuery(conversation: group, anchor: .latest, limit: 100, viewer: "wk_ann")).messages
        }
        let copy = try #require(try await shown().first { $0.id == copyID })
        // What a paused holder's attempt left once it resumed: the same text from the same puppet.
        let late = try await rc.send(OutgoingMessage(conversation: group, sender: copy.sender, content: .text("sent once")))
        // Later messages the lane relays before the retraction runs.
        var later: [MessageID] = []
        for n in 1...3 { later.append(try await wk.send(OutgoingMessage(conversation: group, sender: "ann", content: .text("later \(n)"))).id) }
        #expect(try await eventually(30) { try later.allSatisfy { try mapped($0) != nil } })
        // The retraction the old holder queues when no answer named its copy, its attempt in the bridge's clock.
        let outgoing = OutgoingMessage(conversation: group, sender: copy.sender, content: .text("sent once"))
        let routeValue = try #require(env.bridge.config.routes.first)
        let payload = OutboxPayload(action: .retract(source: sent.id, copy: nil, outgoing: outgoing, attemptAt: SystemClock().nowMs() - 2_000),
                                    route: routeValue, eventTimeMs: 0)
        let encoded = try payload.encoded()
        try env.bridge.store.transaction { tx in
            _ = try tx.enqueue(lane: LaneKey(backend: "rc", conversation: group), sourceBackend: "wk", sourceEventID: EventID("retract:lk3"),
                               kind: payload.action.kindName, payload: encoded, at: 0)
        }
        env.bridge.engine.wake()
        let takenBack = try await eventually(30) { try await shown().first { $0.id == late.id }?.isRecalled == true }
        let table = try await shown().map { "\($0.id.rawValue) \($0.currentContent.digest) recalled \($0.isRecalled)" }
        #expect(takenBack, "the late copy is recalled: \(table)")
        #expect(await env.bridge.engine.waitUntilIdle())
        let after = try await shown()
        #expect(after.first { $0.id == copyID }?.isRecalled == false, "the recorded copy stays")
        #expect(after.filter { $0.currentContent.digest.hasPrefix("later") }.allSatisfy { !$0.isRecalled })
    }

    /// RongCloud, which has no client-id lookup: an attempt's copy followed by more native messages than the
    /// search once read (the 50 newest) is still found, and a retry does not send the message again. The
    /// bridge relayed one message into the group first, so the puppet and the group exist as the lane
    /// leaves them.
    @Test func anEarlierCopyBehindAHundredNewerMessagesIsFound() async throws {
        let env = try await InProcessBridge.start([BridgeLab.Member("wk", "wukong"), BridgeLab.Member("rc", "rongcloud")],
                                                  routes: route("wk:group:lk4", "rc:group:lk4", direction: "forward"))
        defer { Task { await env.stop() } }
        let wk = try await env.users("wk"), rc = try await env.users("rc")
        let group = ConversationRef.group("lk4")
        let first = try await wk.send(OutgoingMessage(conversation: group, sender: "ann", content: .text("relayed first")))
        #expect(try await eventually(30) { try env.bridge.store.read { try $0.mapped(first.id, from: "wk", to: "rc") } != nil })
        let puppet = try #require(try await rc.history(HistoryQuery(conversation: group, anchor: .latest, limit: 10, viewer: "wk_ann"))
            .messages.last).sender
        let attemptAt = SystemClock().nowMs()
        let outgoing = OutgoingMessage(conversation: group, sender: puppet, content: .text("the attempt's copy"))
        let copy = try await rc.send(outgoing)
        for n in 1...120 {
            _ = try await rc.send(OutgoingMessage(conversation: group, sender: n % 2 == 0 ? puppet : "rc_carol", content: .text("native \(n)")))
        }
        let delivery = Delivery(target: rc, store: env.bridge.store, retry: RetryPolicy(baseMs: 10, maxMs: 100, jitter: 0))
        let found = try await delivery.findEarlierCopy(of: outgoing, in: group, since: attemptAt)
        #expect(found?.id == copy.id, "found \(String(describing: found?.id)), the copy is \(copy.id)")
    }

    /// WuKong → RongCloud: one puppet's `😂 +1` about two messages. The second notice's first request is
    /// answered 504 and not carried out, so its retry looks for an earlier copy. RongCloud quotes only texts,
    /// so the first notice has the same sender, text and (absent) quote — but it carries its own client id
    /// in its content JSON, and the retry sends the second notice (seed 588, docs/reliability.md; before,
    /// the first was taken for it and the second was lost).
    @Test func aReactionNoticeOnRongCloudIsNotTakenForTheSameLineAboutAnotherMessage() async throws {
        let env = try await InProcessBridge.start([BridgeLab.Member("wk", "wukong"), BridgeLab.Member("rc", "rongcloud")],
                                                  routes: route("wk:group:lk5", "rc:group:lk5", direction: "forward"))
        defer { Task { await env.stop() } }
        let wk = try await env.users("wk")
        let group = ConversationRef.group("lk5")
        let one = try await wk.send(OutgoingMessage(conversation: group, sender: "ann", content: .text("one")))
        let two = try await wk.send(OutgoingMessage(conversation: group, sender: "ann", content: .text("two")))
        func notices() async throws -> [JSONValue] {
            try await env.records("rc", "lk5").filter { $0["text"]?.stringValue == "😂 +1" }
        }
        #expect(try await eventually(30) { try await env.records("rc", "lk5").count == 2 })
        let reacting = try #require(wk as? any Reacting)
        _ = try await reacting.toggleReaction("😂", on: one.id, in: group, by: "bob")
        #expect(try await eventually(30) { try await notices().count == 1 })
        let rule = #"{"status":504,"count":1,"path_prefix":"/message/group/publish.json","body_contains":"😂"}"#
        #expect(try await HTTPClientWrapper().send(.json(env.lab.url(of: "rc") + "/_sandbox/faults", Data(rule.utf8))).status == 200)
        _ = try await reacting.toggleReaction("😂", on: two.id, in: group, by: "bob")
        #expect(await eventually(30) { env.bridge.engine.metrics.value("imbridge_retries_total", ["target": "rc"]) >= 1 },
                "the 504 was retried")
        #expect(await env.bridge.engine.waitUntilIdle())
        let shown = try await notices()
        let all = try await env.records("rc", "lk5")
        #expect(shown.count == 2, "both notices reached RongCloud: \(all)")
        #expect(Set(shown.compactMap { $0["raw"]?["content"]?.stringValue }).count == 2, "each with its own client id")
    }
}
