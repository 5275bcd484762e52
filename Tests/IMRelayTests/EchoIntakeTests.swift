import Foundation
import IMCore
@_spi(Testing) import IMRelay
@_spi(Testing) import IMStore
import IMTesting
import Testing
import IMOutbox

/// A target that routes the bridge's own sends back to it (RongCloud's server-message routing) costs the
/// bridge a callback per relayed message; one carrying only such echoes joins no store transaction.
@Suite struct EchoIntakeTests {
    let group = ConversationRef.group("g1")

    func message(_ id: String, from sender: UserID) -> IMEvent {
        IMEvent(eventID: EventID("msg:\(id)"), backend: "rc", kind: .message(Message(
            id: MessageID(id), conversation: group, sender: sender, sentAt: 2, content: .text("hello"))))
    }

    @Test func aCallbackOfOnlyTheBridgesOwnSendsTouchesNoStore() async throws {
        let h = try RelayHarness(routes: [Route(from: try RouteEndpoint(parsing: "wk:group:*"), to: try RouteEndpoint(parsing: "rc:group:*"),
                                                direction: .both)])
        let engine = h.engine()
        let before = (h.store.counters.statements, h.store.counters.transactions)
        // `wk_alice` is the puppet the route writes WuKong's alice as on RongCloud: the bridge sent these.
        try await engine.accept([message("rc-1", from: "wk_alice"), message("rc-2", from: "wk_bob")])
        #expect(h.store.counters.statements == before.0 && h.store.counters.transactions == before.1,
                "no statement for a callback that carries only echoes")
        #expect(engine.metrics.total("imbridge_echoes_total") == 2)
        #expect(engine.metrics.value("imbridge_events_in_total", ["backend": "rc", "kind": "message"]) == 2)
        #expect(try h.store.read { try $0.ledgerCount() } == 0)

        // With one message of a real user beside an echo, the callback is recorded as always: that
        // message is relayed, the echo is still dropped.
        try await engine.accept([message("rc-3", from: "wk_carol"), message("rc-4", from: "dave")])
        #expect(h.store.counters.transactions > before.1)
        #expect(try h.store.read { try $0.ledgerCount() } == 1)
        #expect(try h.store.read { try $0.count(state: .pending) } >= 1)
        #expect(engine.metrics.total("imbridge_echoes_total") == 3)
    }

    @Test func anExpansionChangeTheBridgeMadeIsStillRecorded() async throws {
        let h = try RelayHarness(routes: [Route(from: try RouteEndpoint(parsing: "wk:group:*"), to: try RouteEndpoint(parsing: "rc:group:*"),
                                                direction: .both)])
        let engine = h.engine()
        let before = h.store.counters.transactions
        // Convergence reads what the copy holds now, so the bridge's own expansion write goes to the store.
        try await engine.accept([IMEvent(eventID: EventID("exp:1"), backend: "rc", kind: .expansionChanged(
            messageID: "rc-1", conversation: group, by: "wk_alice", delta: ExpansionDelta(version: 1, set: ["k": "v"])))])
        #expect(h.store.counters.transactions > before)
        #expect(engine.metrics.total("imbridge_echoes_total") == 1)
    }
}
