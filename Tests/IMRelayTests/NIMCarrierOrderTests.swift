import Foundation
import IMCore
@_spi(Testing) @testable import IMRelay
import IMStore
import IMTesting
import Testing
import IMOutbox

/// NIM expansion carriers under convergence (docs/expansions.md, "Versions"): a carrier's change is
/// versioned by the carrier's own NIM time, so the order NIM gave two changes decides, not the order the
/// bridge took them in.
@Suite struct NIMCarrierOrderTests {
    /// A NIM app sends two carriers for one message; the bridge takes the newer one in first and the older
    /// one late (a copy NIM retried, or one caught up from history after the newer came live). The
    /// RongCloud copy ends with the newer value.
    @Test func anOlderCarrierTakenInLateDoesNotWin() async throws {
        let h = try RelayHarness(routes: [Route(from: try RouteEndpoint(parsing: "yx:group:*"), to: try RouteEndpoint(parsing: "rc:group:*"),
                                                direction: .forward)])
        let yx = MemoryBackend(id: "yx", capabilities: .nim, clock: SystemClock())
        yx.world.seedGroup(GroupProfile(id: "g", owner: "ann", members: ["ann", "bob"]))
        let engine = RelayEngine(store: h.store, backends: [yx, h.rc], routes: h.routes, retry: RetryPolicy(baseMs: 5, maxMs: 50))
        await engine.start()
        let events = yx.events()
        let order = try await yx.send(OutgoingMessage(conversation: .group("g"), sender: "ann", content: .text("order")))
        try await Task.sleep(nanoseconds: 5_000_000)
        // The app's own version numbers say nothing about the order (both 1): NIM's times do.
        _ = try await yx.sendExpansionChange(ExpansionDelta(version: 1, set: ["status": "paid"]), of: order.id, in: .group("g"), by: "bob")
        try await Task.sleep(nanoseconds: 5_000_000)
        _ = try await yx.sendExpansionChange(ExpansionDelta(version: 1, set: ["status": "shipped"]), of: order.id, in: .group("g"), by: "bob")
        var received: [IMEvent] = []
        for await event in events {
            received.append(event)
            if received.count == 3 { break }
        }
        try await engine.accept([received[0]])
        var copyID: MessageID?
        #expect(try await eventually {
            copyID = try h.store.read { try $0.mapped(order.id, from: "yx", to: "rc") }?.toMessage
            return copyID != nil
        })
        let copy = try #require(copyID)
        try await engine.accept([received[2]])   // "shipped", the newer, first
        try await Task.sleep(nanoseconds: 20_000_000)
        try await engine.accept([received[1]])   // "paid", older, taken in late
        func status() async throws -> String? {
            try await h.rc.history(HistoryQuery(conversation: .group("g"), anchor: .latest, limit: 10)).messages
                .first { $0.id == copy }?.expansion?.entries["status"]?.value
        }
        #expect(try await eventually { try await status() != nil })
        #expect(await engine.waitUntilIdle())
        let shown = try await status()
        #expect(shown == "shipped", "the RongCloud copy holds \(String(describing: shown))")
        await engine.stop()
    }
}

extension NIMCarrierOrderTests {
    /// A carrier whose first attempt got through before the bridge could record it (a SIGKILL) is found on
    /// the retry and not sent again; the retry's plan, made after a newer change was taken in, names that
    /// change's key too (a whole-state change names every key). Only what the found carrier carried is
    /// the copy's now: the newer key is written by its own entry (seed 138, docs/reliability.md).
    @Test func aRetriedCarrierFoundOnTheTargetMarksHeldOnlyWhatItCarried() async throws {
        let routes = [Route(from: try RouteEndpoint(parsing: "wk:group:*"), to: try RouteEndpoint(parsing: "yx:group:*"), direction: .forward)]
        let h = try RelayHarness(routes: routes)
        let yx = MemoryBackend(id: "yx", capabilities: .nim, clock: SystemClock())
        yx.world.seedGroup(GroupProfile(id: "g", owner: "ann", members: ["ann", "bob"]))
        let group = ConversationRef.group("g")
        let events = h.wk.events()
        let order = try await h.wk.send(OutgoingMessage(conversation: group, sender: "ann", content: .text("order"), expansion: ["n": "1"]))
        var taken: IMEvent?
        for await event in events {
            if case .message = event.kind { taken = event; break }
        }
        let first = RelayEngine(store: h.store, backends: [h.wk, yx], routes: h.routes, retry: RetryPolicy(baseMs: 5, maxMs: 50))
        await first.start()
        try await first.accept([try #require(taken)])
        var copyID: MessageID?
        #expect(try await eventually {
            copyID = try h.store.read { try $0.mapped(order.id, from: "wk", to: "yx") }?.toMessage
            return copyID != nil
        })
        let copy = try #require(copyID)
        #expect(await first.waitUntilIdle())
        await first.stop()

        // A whole-state change whose first attempt carried {a: x} to NIM, then the bridge died before recording it.
        let lane = LaneKey(backend: "yx", conversation: group)
        let whole = OutboxPayload(action: .expansion(source: order.id, by: "ann", delta: ExpansionDelta(version: 5, set: ["n": "1", "a": "x"], cleared: true)),
                                  route: routes[0], eventTimeMs: 5, sourceConversation: group)
        let id = try h.store.transaction { tx -> Int64 in
            let id = try tx.enqueue(lane: lane, sourceBackend: "wk", sourceEventID: EventID("exp:\(order.id):5"), kind: "expansion",
                                    payload: try whole.encoded(), at: SystemClock().nowMs())
            try tx.claim(id)
            return id
        }
        _ = try await yx.sendExpansionChange(ExpansionDelta(version: 5, set: ["a": "x"]), of: copy, in: group, by: "wk_ann",
                                             clientID: ClientMessageID("\(RelayEngine.clientIDPrefix)\(id)"))
        // A newer change, taken in before the retry runs: its entry comes after the retried one.
        let engine = RelayEngine(store: h.store, backends: [h.wk, yx], routes: h.routes, retry: RetryPolicy(baseMs: 5, maxMs: 50))
        try await engine.accept([IMEvent(eventID: EventID("exp:\(order.id):6"), backend: "wk",
                                         kind: .expansionChanged(messageID: order.id, conversation: group, by: "ann",
                                                                 delta: ExpansionDelta(version: 6, set: ["note": "v2"])))])
        await engine.start()
        func carried() async throws -> [String] {
            try await yx.history(HistoryQuery(conversation: group, anchor: .latest, limit: 50)).messages.compactMap { message in
                guard case .custom(let custom) = message.content, custom.typeName == "imbridge.expansion" else { return nil }
                return custom.payload
            }
        }
        let reached = try await eventually { try await carried().contains { $0.contains("\"note\"") } }
        let shown = try await carried()
        #expect(reached, "the newer key reached NIM: \(shown)")
        #expect(await engine.waitUntilIdle())
        #expect(try await carried().filter { $0.contains("\"a\"") }.count == 1, "the found carrier is not sent again")
        await engine.stop()
    }
}
