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
