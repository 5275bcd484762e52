import Foundation
import IMCore
@_spi(Testing) import IMRelay
import IMStore
import IMTesting
import Testing
import IMOutbox

/// A source group's dissolution on a target that keeps ids (RongCloud): one `.dissolve` entry per group
/// leg dismisses the group of the same id; one made by the bridge's own identity is an echo and queues
/// nothing (docs/architecture.md, "Groups", step 7).
extension GroupSyncTests {
    @Test func aDissolutionDismissesTheTargetGroupAndTheBridgesOwnIsAnEcho() async throws {
        let h = try RelayHarness()
        h.wk.world.seedGroup(Self.tea)
        let engine = h.engine()
        try await engine.start(feeding: [h.wk])
        _ = try await h.wk.send(OutgoingMessage(conversation: .group("g1"), sender: "ann", content: .text("hello")))
        #expect(try await eventually { try await relayedTexts(h, "g1") == ["hello"] })
        #expect(try await h.rcMemory.group("g1") != nil)

        // Dissolved by a RongCloud user's puppet on WuKong: the bridge's own doing, not relayed.
        let echo = try engine.ingest([IMEvent(eventID: "wk-dissolved-1", backend: "wk", kind: .groupDissolved(group: "g1", by: "rc_zoe", at: 5))])
        #expect(echo.echoes == 1 && echo.queued == 0)

        let real = try engine.ingest([IMEvent(eventID: "wk-dissolved-2", backend: "wk", kind: .groupDissolved(group: "g1", by: "ann", at: 6))])
        #expect(real.queued == 1, "one entry for the one group leg")
        #expect(try await eventually { try await h.rcMemory.group("g1") == nil }, "the RongCloud group is dismissed")
        #expect(try await relayedTexts(h, "g1") == ["hello"])
        #expect(try h.store.read { try $0.count(state: .dead) } == 0)
        let kinds = try h.store.read { try $0.entries(ids: Array(1...10)) }.map(\.kind)
        #expect(kinds.filter { $0 == "dissolve" }.count == 1, "\(kinds)")
        await engine.stop()
    }
}
