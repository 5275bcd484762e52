import Foundation
import IMCore
@_spi(Testing) import IMRelay
import IMStore
import IMTesting
import Testing
import IMOutbox

/// Small deliberate bugs the suite once let through. Each test here fails when its
/// bug is put back (checked by hand, one at a time).
@Suite struct RelayNearMissTests {
    /// An echo recognised ONLY through the id map: no client-id prefix, an ordinary sender (not a puppet),
    /// but the id map says the bridge wrote this message on this backend. Catches `isBridgeCreated`
    /// disabled (in the engine's echo check or in the store).
    @Test func anEchoKnownOnlyToTheIdMapIsNotRelayed() throws {
        let h = try RelayHarness(routes: [Route(from: try RouteEndpoint(parsing: "wk:group:*"), to: try RouteEndpoint(parsing: "rc:group:*"),
                                                direction: .both)])
        let engine = h.engine()
        let group = ConversationRef.group("g1")
        try h.store.transaction { tx in
            try tx.map(source: ("wk", "wk-1", group), target: ("rc", "rc-copy", group), at: 1)
        }
        func event(_ id: MessageID) -> IMEvent {
            IMEvent(eventID: EventID("msg:\(id)"), backend: "rc", kind: .message(Message(
                id: id, conversation: group, sender: "carol", sentAt: 2, content: .text("hello"))))
        }
        let echo = try engine.ingest([event("rc-copy")])
        #expect(echo.echoes == 1 && echo.accepted == 0 && echo.queued == 0, "\(echo)")
        // The same message under an id the map does not know is relayed: the route would carry it.
        let fresh = try engine.ingest([event("rc-other")])
        #expect(fresh.accepted == 1 && fresh.queued == 1, "\(fresh)")
        #expect(try h.store.read { try $0.isBridgeCreated("rc-copy", on: "rc") })
        #expect(try !h.store.read { try $0.isBridgeCreated("wk-1", on: "wk") }, "the source side is not bridge-created")
    }

    /// A vendor's `Retry-After` longer than the backoff wins; a shorter one does not shorten it.
    @Test func retryAfterLongerThanTheBackoffWins() throws {
        let policy = RetryPolicy(baseMs: 100, maxMs: 1000, jitter: 0)
        #expect(policy.delayMs(attempt: 0, retryAfterMs: 5000, random: 0.5) == 5000)
        #expect(policy.delayMs(attempt: 3, retryAfterMs: 30_000, random: 0.5) == 30_000, "beyond maxMs too")
        #expect(policy.delayMs(attempt: 2, retryAfterMs: 10, random: 0.5) == 400)
        #expect(policy.delayMs(attempt: 2, retryAfterMs: nil, random: 0.5) == 400)
        // Through the delivery path: a 429 carrying Retry-After is retried no sooner than it says.
        let h = try RelayHarness()
        let delivery = Delivery(target: h.rc, store: h.store, retry: policy)
        let limited = IMError(.rateLimited, "slow down", retryAfterMs: 7000)
        guard case .retry(let after) = delivery.classify(limited, attempt: 0) else { Issue.record("not a retry"); return }
        #expect(after >= 7000)
    }
}
