import Foundation
import IMCore
@testable import IMRelay
import IMStore
import IMTesting
import Testing
@testable import IMOutbox

/// A copy a lane's old holder left on the target after another instance had taken the lane over is taken
/// back through the outbox — only when the id map names another copy (docs/high-availability.md, "Fenced
/// deliveries"). The end-to-end case (a real pause between the lease check and the write) is
/// `FencedFailoverTests.aLaneHolderPausedPastItsLeaseSendsNoLateCopy`.
@Suite struct LateCopyTests {
    static let g1 = ConversationRef.group("g1")

    /// Queues a `retract` of `copy` (a copy of `source`) on the RongCloud lane of g1, as the fenced holder does.
    static func queueRetraction(_ h: RelayHarness, source: MessageID, copy: MessageID?, id: String) throws {
        let outgoing = OutgoingMessage(conversation: g1, sender: "wk_alice", content: .text("订单 42"))
        let payload = OutboxPayload(action: .retract(source: source, copy: copy, outgoing: outgoing, attemptAt: 0), route: h.routes[0], eventTimeMs: 0)
        let encoded = try payload.encoded()
        try h.store.transaction { tx in
            _ = try tx.enqueue(lane: LaneKey(backend: "rc", conversation: g1), sourceBackend: "wk", sourceEventID: EventID("retract:\(id)"),
                               kind: payload.action.kindName, payload: encoded, at: 0)
        }
    }

    /// A running WuKong → RongCloud engine that has relayed one message of alice's: its source and the copy recorded.
    static func relayedOne(_ h: RelayHarness, _ text: String) async throws -> (RelayEngine, original: Message, recorded: Message) {
        let engine = h.engine()
        try await engine.start(feeding: [h.wk, h.rc])
        let original = try await h.wk.send(OutgoingMessage(conversation: g1, sender: "alice", content: .text(text)))
        #expect(try await eventually { try await h.history(h.rc, "g1").count == 1 })
        return (engine, original, try await h.history(h.rc, "g1")[0])
    }

    /// Queues a late copy's retraction, lets the lane run it and waits until the late copy is recalled.
    static func expectTakenBack(_ h: RelayHarness, _ engine: RelayEngine, source: MessageID, late: MessageID, copy: MessageID?,
                                keeping recorded: MessageID, id: String) async throws {
        try queueRetraction(h, source: source, copy: copy, id: id)
        engine.wake()
        #expect(try await eventually { try await h.history(h.rc, "g1").first { $0.id == late }?.isRecalled == true })
        #expect(await engine.waitUntilIdle())
        #expect(try await h.history(h.rc, "g1").first { $0.id == recorded }?.isRecalled == false)
    }

    @Test func aLateDoubleIsTakenBackAndTheRecordedCopyStays() async throws {
        let h = try RelayHarness()
        let (engine, original, recorded) = try await Self.relayedOne(h, "订单 42")
        // The late copy: what the paused holder's request left once it resumed.
        let late = try await h.rcMemory.send(OutgoingMessage(conversation: Self.g1, sender: "wk_alice", content: .text("订单 42")))

        try await Self.expectTakenBack(h, engine, source: original.id, late: late.id, copy: late.id, keeping: recorded.id, id: "1")
        #expect(engine.metrics.value("imbridge_late_copies_retracted_total", ["target": "rc"]) == 1)
        await engine.stop()
    }

    @Test func theCopyTheOtherInstanceFoundIsKept() async throws {
        let h = try RelayHarness()
        let (engine, original, recorded) = try await Self.relayedOne(h, "hello")

        // The old holder's copy is the one the id map names (the new holder's lookup found it): kept.
        try Self.queueRetraction(h, source: original.id, copy: recorded.id, id: "2")
        engine.wake()
        #expect(await engine.waitUntilIdle())
        // The send and the retraction (the group's set-up and alice's profile entries run beside them:
        // docs/architecture.md, "Groups", "Profiles").
        let done = try h.store.read { try $0.entries(ids: Array(1...20)) }.filter { $0.state == .done && $0.kind != "group" && $0.kind != "profile" }
        #expect(done.count == 2, "\(done.map(\.kind))")
        #expect(try await h.history(h.rc, "g1").map(\.isRecalled) == [false])
        #expect(engine.metrics.value("imbridge_late_copies_retracted_total", ["target": "rc"]) == 0)
        await engine.stop()
    }

    /// The late attempt's answer was lost (a timeout, a 5xx after the vendor carried it out): the lane
    /// searches for the copy as a retried send does, and takes back the one the id map does not name.
    @Test func aLateCopyWithoutAnAnswerIsFoundAndTakenBack() async throws {
        let h = try RelayHarness()
        let (engine, original, recorded) = try await Self.relayedOne(h, "订单 42")
        let late = try await h.rcMemory.send(OutgoingMessage(conversation: Self.g1, sender: "wk_alice", content: .text("订单 42")))

        try await Self.expectTakenBack(h, engine, source: original.id, late: late.id, copy: nil, keeping: recorded.id, id: "3")
        await engine.stop()
    }
}
