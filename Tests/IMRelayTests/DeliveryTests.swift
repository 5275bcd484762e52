import Foundation
import IMBridgeApp
import IMCore
import IMRelay
@_spi(Testing) import IMStore
import IMTesting
import Synchronization
import Testing
import IMOutbox

/// A RongCloud-like target that keeps no client ids and has no lookup by client id: its first sends are
/// accepted and then answered with a timeout (the outcome is unknown to the caller).
final class AcceptThenTimeoutBackend: IMBackend {
    let inner: MemoryBackend
    let timeoutsLeft = Mutex(0)
    /// History refused to a query that names no viewer (like a RongCloud group without `history_viewer`).
    let historyRefused: Bool
    /// History reads that fail as a refused connection before they work (the target down for a while).
    let historyDown: Mutex<Int>
    /// Stamps each copy with its own clock, not the time the send asks for (RongCloud keeps no `sentAt`).
    let stampsOwnTime: Bool
    /// False: a timed-out send was never carried out (the request was lost on its way), its outcome as
    /// unknown to the caller all the same.
    let accepts: Bool
    init(_ inner: MemoryBackend, timeouts: Int, historyRefused: Bool = false, historyDownFor reads: Int = 0, stampsOwnTime: Bool = false,
         accepts: Bool = true) {
        self.inner = inner
        self.accepts = accepts
        self.historyRefused = historyRefused
        self.stampsOwnTime = stampsOwnTime
        historyDown = Mutex(reads)
        timeoutsLeft.withLock { $0 = timeouts }
    }
    var id: BackendID { inner.id }
    var capabilities: Capabilities { inner.capabilities }
    func events() -> AsyncStream<IMEvent> { inner.events() }

    func send(_ message: OutgoingMessage) async throws -> Message {
        var stripped = message
        stripped.clientMessageID = nil
        if stampsOwnTime { stripped.sentAt = nil }
        let timeout = timeoutsLeft.withLock { left -> Bool in
            guard left > 0 else { return false }
            left -= 1
            return true
        }
        if timeout && !accepts { throw IMError(.unavailable, "read timed out", isRetryable: true) }
        let sent = try await inner.send(stripped)
        if timeout { throw IMError(.unavailable, "read timed out after the vendor accepted", isRetryable: true) }
        return sent
    }

    func history(_ query: HistoryQuery) async throws -> HistoryPage {
        if historyRefused && query.viewer == nil { throw IMError(.invalidArgument, "group history needs a viewer") }
        let down = historyDown.withLock { left -> Bool in
            guard left > 0 else { return false }
            left -= 1
            return true
        }
        if down { throw IMError(.unavailable, "connection refused", isRetryable: true) }
        return try await historyWithoutClientIDs(inner, query)
    }
}

/// A target that times out after `timeoutMs` while the send it abandoned is carried out `holdMs` after it
/// arrived (a stalled server working through what it received): the first `stalls` sends only.
final class LateAcceptBackend: IMBackend {
    let inner: MemoryBackend
    let stallsLeft: Mutex<Int>
    let (timeoutMs, holdMs): (Int64, Int64)
    init(_ inner: MemoryBackend, stalls: Int, timeoutMs: Int64, holdMs: Int64) {
        self.inner = inner
        stallsLeft = Mutex(stalls)
        (self.timeoutMs, self.holdMs) = (timeoutMs, holdMs)
    }
    var id: BackendID { inner.id }
    var capabilities: Capabilities { inner.capabilities }
    func events() -> AsyncStream<IMEvent> { inner.events() }

    func send(_ message: OutgoingMessage) async throws -> Message {
        var stripped = message
        stripped.clientMessageID = nil
        let stall = stallsLeft.withLock { left -> Bool in
            guard left > 0 else { return false }
            left -= 1
            return true
        }
        guard stall else { return try await inner.send(stripped) }
        Task { [inner, holdMs] in
            try await Task.sleep(nanoseconds: UInt64(holdMs) * 1_000_000)
            _ = try await inner.send(stripped)
        }
        try await Task.sleep(nanoseconds: UInt64(timeoutMs) * 1_000_000)
        throw IMError(.timeout, "POST /send timed out", isRetryable: true, details: [IMError.abandonedAfterMsKey: "\(timeoutMs)"])
    }

    func history(_ query: HistoryQuery) async throws -> HistoryPage {
        try await historyWithoutClientIDs(inner, query)
    }
}

/// `inner`'s history as a target that keeps no client ids shows it.
func historyWithoutClientIDs(_ inner: MemoryBackend, _ query: HistoryQuery) async throws -> HistoryPage {
    var page = try await inner.history(query)
    page.messages = page.messages.map { message in
        var message = message
        message.clientMessageID = nil
        return message
    }
    return page
}

@Suite struct DeliveryTests {
    /// The relay and migration share one delivery path, so the relay too finds the copy a timed-out send
    /// left on a target without client-id lookup (in its newest history) instead of sending it again.
    @Test func aSendWithUnknownOutcomeIsNotRepeatedOnATargetWithoutClientIDs() async throws {
        let h = try RelayHarness(rcWrapper: { AcceptThenTimeoutBackend($0, timeouts: 2) })
        let engine = h.engine()
        try await engine.start(feeding: [h.wk, h.rcMemory])
        for text in ["one", "two", "three"] {
            _ = try await h.wk.send(OutgoingMessage(conversation: .group("g"), sender: "alice", content: .text(text)))
        }
        #expect(try await eventually { try await h.history(h.rcMemory, "g").count >= 3 })
        #expect(await engine.waitUntilIdle())
        let got = try await h.history(h.rcMemory, "g")
        #expect(got.map(\.content) == [.text("one"), .text("two"), .text("three")], "\(got.map { "\($0.id) \($0.sentAt) \($0.content)" })")
        #expect(engine.metrics.value("imbridge_retries_total", ["target": "rc"]) >= 1, "the timeouts were retried")
        #expect(try h.store.read { try $0.mappingCount() } == 3)
        await engine.stop()
    }

    /// Two reaction notices of one puppet, `👍 +1`, about two messages: the second's first attempt is lost
    /// on its way with its outcome unknown, and its retry looks for an earlier copy. The first notice, a
    /// second older, has the same sender and text but quotes the other message: it is not this one's copy,
    /// and the notice is sent (seed 342, docs/reliability.md; before, it was taken as sent and lost).
    @Test func aReactionNoticeRetriedAfterAnUnknownOutcomeIsNotTakenForAnotherOne() async throws {
        let h = try RelayHarness(rcWrapper: { AcceptThenTimeoutBackend($0, timeouts: 0, accepts: false) })
        let target = try #require(h.rc as? AcceptThenTimeoutBackend)
        let engine = h.engine()
        try await engine.start(feeding: [h.wk, h.rcMemory])
        defer { Task { await engine.stop() } }
        let group = ConversationRef.group("g")
        let one = try await h.wk.send(OutgoingMessage(conversation: group, sender: "alice", content: .text("one")))
        let two = try await h.wk.send(OutgoingMessage(conversation: group, sender: "alice", content: .text("two")))
        #expect(try await eventually { try await h.history(h.rcMemory, "g").count == 2 })
        let reacting = try #require(h.wk as any IMBackend as? any Reacting)
        try await reacting.toggleReaction("👍", on: one.id, in: group, by: "bob")
        #expect(try await eventually { try await h.history(h.rcMemory, "g").count == 3 })
        target.timeoutsLeft.withLock { $0 = 1 }
        try await reacting.toggleReaction("👍", on: two.id, in: group, by: "bob")
        #expect(await eventually(30) { engine.metrics.value("imbridge_retries_total", ["target": "rc"]) >= 1 }, "the lost attempt was retried")
        #expect(await engine.waitUntilIdle())
        let shown = try await h.history(h.rcMemory, "g")
        let notices = shown.filter { "\($0.currentContent)".contains("👍") }
        #expect(notices.count == 2, "both notices: \(shown.map { "\($0.currentContent) → \($0.reply?.messageID.rawValue ?? "-")" })")
        #expect(Set(notices.compactMap(\.reply?.messageID)).count == 2, "each quotes its own message")
    }

    /// A target whose clock is five minutes behind the bridge's and that stamps copies with it: the copy
    /// a send with an unknown outcome left looks five minutes older than the attempt. It is found all the
    /// same, as the newest unrecorded copy after the lane's last recorded one, and not sent again — also
    /// when that recorded copy is another sender's (bob's "zero" before alice's texts): the search anchors
    /// on the newest recorded copy whoever sent it (Finding 53, docs/reliability.md; it looked for the
    /// anchor among the retried sender's messages only, and sent a five-minute-old-looking copy again).
    @Test(arguments: [("alice", ["one", "two", "three"]), ("bob", ["one"])])
    func aCopyOnATargetWhoseClockIsBehindIsFound(firstSender: String, texts: [String]) async throws {
        let h = try RelayHarness()
        let skewed = AcceptThenTimeoutBackend(MemoryBackend(id: "rc", capabilities: .rongCloud, clock: ClockBehind(ms: 300_000)),
                                              timeouts: 0, stampsOwnTime: true)
        let engine = RelayEngine(store: h.store, backends: [h.wk, skewed], routes: h.routes, retry: RetryPolicy(baseMs: 5, maxMs: 50))
        try await engine.start(feeding: [h.wk])
        func shown() async throws -> [MessageContent] {
            try await skewed.inner.history(HistoryQuery(conversation: .group("g"), anchor: .latest, limit: 100)).messages.map(\.content)
        }
        _ = try await h.wk.send(OutgoingMessage(conversation: .group("g"), sender: UserID(firstSender), content: .text("zero")))
        #expect(try await eventually(30) { try await shown().count == 1 })
        #expect(await engine.waitUntilIdle())
        skewed.timeoutsLeft.withLock { $0 = 2 }
        for text in texts {
            _ = try await h.wk.send(OutgoingMessage(conversation: .group("g"), sender: "alice", content: .text(text)))
        }
        #expect(try await eventually(30) { try await shown().count >= texts.count + 1 })
        #expect(await engine.waitUntilIdle())
        let got = try await shown()
        #expect(got == [.text("zero")] + texts.map { .text($0) }, "\(got)")
        #expect(engine.metrics.value("imbridge_retries_total", ["target": "rc"]) >= 1, "the unknown outcomes were retried")
        await engine.stop()
    }

    /// The relay asks the target for the source message's time; a target that keeps it stores the copy
    /// with that time, which can lie long before the attempt (here a minute: a slow intake, a backlog).
    /// The lookup still takes that copy as the earlier attempt's. (It used to ask for a copy stored after
    /// the attempt began, so a loaded machine's 10 s stall doubled messages.)
    @Test func aCopyStampedWithTheRequestedTimeIsFound() async throws {
        let h = try RelayHarness(rcWrapper: { AcceptThenTimeoutBackend($0, timeouts: 2) })
        let engine = h.engine()
        try await engine.start(feeding: [h.wk, h.rcMemory])
        let minuteAgo = h.clock.nowMs() - 60_000
        for (offset, text) in ["one", "two", "three"].enumerated() {
            var outgoing = OutgoingMessage(conversation: .group("g"), sender: "alice", content: .text(text))
            outgoing.sentAt = minuteAgo + Int64(offset)
            _ = try await h.wk.send(outgoing)
        }
        #expect(try await eventually { try await h.history(h.rcMemory, "g").count >= 3 })
        #expect(await engine.waitUntilIdle())
        let got = try await h.history(h.rcMemory, "g")
        #expect(got.map(\.content) == [.text("one"), .text("two"), .text("three")], "\(got.map { "\($0.sentAt) \($0.content)" })")
        #expect(got.first?.sentAt == minuteAgo, "the target kept the requested time")
        await engine.stop()
    }

    /// A send abandoned at its timeout that the target carries out later still (here 300 ms after the
    /// timeout): the retry waits as long as the send was in flight before it looks for the copy, so it
    /// finds the late copy instead of sending a second one. (Looking at once, after the policy's 5 ms,
    /// found nothing and doubled the message.)
    @Test func aSendCarriedOutAfterItsTimeoutIsNotDoubled() async throws {
        let h = try RelayHarness(rcWrapper: { LateAcceptBackend($0, stalls: 2, timeoutMs: 800, holdMs: 1100) })
        let engine = h.engine()
        try await engine.start(feeding: [h.wk, h.rcMemory])
        for text in ["one", "two", "three"] {
            _ = try await h.wk.send(OutgoingMessage(conversation: .group("g"), sender: "alice", content: .text(text)))
        }
        #expect(try await eventually { try await h.history(h.rcMemory, "g").count >= 3 })
        #expect(await engine.waitUntilIdle())
        try await Task.sleep(nanoseconds: 1_200_000_000)
        let got = try await h.history(h.rcMemory, "g")
        #expect(got.map(\.content) == [.text("one"), .text("two"), .text("three")], "\(got.map { "\($0.id) \($0.sentAt) \($0.content)" })")
        #expect(engine.metrics.value("imbridge_retries_total", ["target": "rc"]) >= 2, "both timeouts were retried")
        await engine.stop()
    }

    /// Where the target reads group history only as a named viewer and none is configured (a RongCloud
    /// group without `history_viewer`), the earlier-copy search reads it as the copy's sender: an unknown
    /// outcome is found, not sent again (a duplicate) nor given up (a dead letter).
    @Test func anUnknownOutcomeIsFoundReadingHistoryAsTheSender() async throws {
        let h = try RelayHarness(rcWrapper: { AcceptThenTimeoutBackend($0, timeouts: 1, historyRefused: true) })
        let engine = h.engine()
        try await engine.start(feeding: [h.wk, h.rcMemory])
        _ = try await h.wk.send(OutgoingMessage(conversation: .group("g"), sender: "alice", content: .text("one")))
        _ = try await h.wk.send(OutgoingMessage(conversation: .group("g"), sender: "alice", content: .text("two")))
        #expect(try await eventually { try await h.history(h.rcMemory, "g").count >= 2 })
        #expect(await engine.waitUntilIdle())
        #expect(try await h.history(h.rcMemory, "g").map(\.content) == [.text("one"), .text("two")])
        #expect(try h.store.read { try $0.count(state: .dead) } == 0)
        await engine.stop()
    }

    /// A lookup that cannot run (the target refusing connections while the retry looks for the earlier
    /// copy) is retried later: never the send's permanent failure, never a second copy.
    @Test func aFailedEarlierCopyLookupIsRetriedNotDeadLettered() async throws {
        let h = try RelayHarness(rcWrapper: { AcceptThenTimeoutBackend($0, timeouts: 1, historyDownFor: 4) })
        let engine = h.engine()
        try await engine.start(feeding: [h.wk, h.rcMemory])
        for text in ["one", "two", "three"] {
            _ = try await h.wk.send(OutgoingMessage(conversation: .group("g"), sender: "alice", content: .text(text)))
        }
        #expect(try await eventually { try await h.history(h.rcMemory, "g").count >= 3 })
        #expect(await engine.waitUntilIdle())
        #expect(try await h.history(h.rcMemory, "g").map(\.content) == [.text("one"), .text("two"), .text("three")])
        #expect(try h.store.read { try $0.count(state: .dead) } == 0)
        #expect(engine.metrics.value("imbridge_retries_total", ["target": "rc"]) >= 5, "the timeout and each failed lookup were retried")
        await engine.stop()
    }

    /// The lookup's failure as the send's: retryable whatever the lookup's error was.
    @Test func aLookupFailureIsAlwaysRetryable() {
        let refused = Delivery.lookupFailed(IMError(.invalidArgument, "NIM team history needs a member accid"))
        #expect(refused.isRetryable && refused.code == .unavailable)
        #expect(refused.details[Delivery.lookupFailedKey] == "invalid_argument")
        let limited = Delivery.lookupFailed(IMError(.rateLimited, "slow down", retryAfterMs: 3000))
        #expect(limited.isRetryable && limited.retryAfterMs == 3000 && limited.code == .rateLimited)
    }

    @Test func failuresAreClassifiedOnce() throws {
        let h = try RelayHarness()
        let delivery = Delivery(target: h.rc, store: h.store, retry: RetryPolicy(baseMs: 100, maxMs: 1000, jitter: 0))
        #expect(delivery.classify(IMError(.rateLimited, "slow down", retryAfterMs: 5000), attempt: 0) == .retry(afterMs: 5000))
        #expect(delivery.classify(IMError(.unavailable, "down", isRetryable: true), attempt: 2) == .retry(afterMs: 400))
        #expect(delivery.classify(IMError(.invalidArgument, "no"), attempt: 0) == .permanent)
        #expect(delivery.classify(IMError(.notFound, "later", isRetryable: false, details: ["unmapped": "m1"]), attempt: 0) == .waitForMessage)
        #expect(delivery.classify(CancellationError(), attempt: 0) == .permanent)
        // A request abandoned in flight is retried no sooner than it was in flight; one never sent is not.
        let abandoned = IMError(.timeout, "timed out", details: [IMError.abandonedAfterMsKey: "15000"])
        #expect(delivery.classify(abandoned, attempt: 0) == .retry(afterMs: 15000))
        #expect(delivery.classify(IMError(.timeout, "timed out connecting"), attempt: 0) == .retry(afterMs: 100))
    }
}

@Suite struct OverlappingRoutesTests {
    static func routes(_ lines: [(String, String, Route.Direction)]) throws -> [Route] {
        try lines.map { Route(from: try RouteEndpoint(parsing: $0.0), to: try RouteEndpoint(parsing: $0.1), direction: $0.2) }
    }

    /// `wk:group:* → rc:group:*`, `wk:group:* ⇄ rc:group:*` and `wk:group:g1 ⇄ rc:group:g1` together put
    /// one WuKong message on RongCloud once, through the first route.
    @Test func overlappingRoutesDeliverOnce() async throws {
        let routes = try Self.routes([("wk:group:*", "rc:group:*", .forward), ("wk:group:*", "rc:group:*", .both),
                                      ("wk:group:g1", "rc:group:g1", .both)])
        let h = try RelayHarness(routes: routes)
        let engine = h.engine()
        try await engine.start(feeding: [h.wk, h.rcMemory])
        _ = try await h.wk.send(OutgoingMessage(conversation: .group("g1"), sender: "alice", content: .text("once")))
        #expect(try await eventually { try await h.history(h.rc, "g1").count >= 1 })
        _ = try await h.rcMemory.send(OutgoingMessage(conversation: .group("g1"), sender: "carol", content: .text("back")))
        #expect(try await eventually {
            let (rc, wk) = (try await h.history(h.rc, "g1").count, try await h.history(h.wk, "g1").count)
            return rc >= 2 && wk >= 2
        })
        #expect(await engine.waitUntilIdle())
        try await Task.sleep(nanoseconds: 200_000_000)
        #expect(try await h.history(h.rc, "g1").map(\.content) == [.text("once"), .text("back")])
        #expect(try await h.history(h.wk, "g1").map(\.content) == [.text("once"), .text("back")])
        await engine.stop()
    }

    @Test func overlapsAreNamedForCheck() throws {
        let table = RouteTable(try Self.routes([("wk:group:*", "rc:group:*", .forward), ("wk:group:g1", "rc:group:g1", .both),
                                                ("wk:group:g2", "rc:group:other", .forward), ("rc:group:*", "wk:group:*", .forward),
                                                ("wk:direct:*", "rc:direct:*", .forward)]))
        let pairs = table.overlaps().map { "\($0.first)-\($0.second)" }
        #expect(pairs == ["0-1", "1-3"], "g2 → other reaches another conversation; direct is another kind")
    }

    /// A puppet of the other leg maps back to the user it stands for, on both legs of a route both ways;
    /// a one-way route (no puppets of the target's users on its source), a bare prefix and ordinary users
    /// get the leg's prefix.
    @Test func aPuppetOfTheOtherSideMapsBackToItsUser() throws {
        let both = RouteTable(try Self.routes([("wk:group:*", "rc:group:*", .both)]))
        let toRC = try #require(both.legs(from: "wk", conversation: .group("g1")).first)
        let toWK = try #require(both.legs(from: "rc", conversation: .group("g1")).first)
        #expect(toRC.targetUser("rc_carol") == "carol" && toRC.targetUser("alice") == "wk_alice" && toRC.targetUser("wk_bob") == "wk_wk_bob")
        #expect(toWK.targetUser("wk_alice") == "alice" && toWK.targetUser("carol") == "rc_carol")
        #expect(toRC.targetUser("rc_") == "wk_rc_", "a bare prefix names no user")
        let forward = RouteTable(try Self.routes([("wk:group:*", "rc:group:*", .forward)]))
        let oneWay = try #require(forward.legs(from: "wk", conversation: .group("g1")).first)
        #expect(oneWay.targetUser("rc_carol") == "wk_rc_carol")
    }
}

@Suite struct RetryBudgetTests {
    /// A target that never recovers holds its lane only until the retry budget is spent: then the entry
    /// is a dead letter and the lane moves on to the next message.
    @Test func aLaneGivesUpOnAnEntryPastItsMaxAge() async throws {
        let h = try RelayHarness(rcWrapper: { FlakyBackend($0) })
        let flaky = h.rc as! FlakyBackend
        flaky.failing.withLock { $0[.group("g")] = 1_000_000 }
        let engine = h.engine(retry: RetryPolicy(baseMs: 5, maxMs: 20, maxAgeMs: 300))
        try await engine.start(feeding: [h.wk, h.rcMemory])
        _ = try await h.wk.send(OutgoingMessage(conversation: .group("g"), sender: "a", content: .text("stuck")))
        #expect(try await eventually(30) { try h.store.read { try $0.count(state: .dead) } == 1 })
        flaky.failing.withLock { $0[.group("g")] = 0 }
        _ = try await h.wk.send(OutgoingMessage(conversation: .group("g"), sender: "a", content: .text("next")))
        #expect(try await eventually { try await h.history(h.rc, "g").map(\.content) == [.text("next")] })
        let letter = try #require(try h.store.read { try $0.deadLetters() }.first)
        #expect(letter.lastError?.contains("gave up after") == true && letter.lastError?.contains("(retry.max_age)") == true)
        #expect(engine.metrics.value("imbridge_retry_budget_exhausted_total", ["target": "rc"]) == 1)
        await engine.stop()
    }

    @Test func retryKeysAreValidated() throws {
        let base = BridgeConfigTests.valid
        let env = ["WK_TOKEN": "t0k", "RC_SECRET": "s3cret"]
        #expect(try BridgeConfig.parse(base, environment: env).retry.maxAgeMs == RetryPolicy.defaultMaxAgeMs)
        let withAge = base.replacingOccurrences(of: "  max_ms: 5000", with: "  max_ms: 5000\n  max_age_minutes: 30")
        #expect(try BridgeConfig.parse(withAge, environment: env).retry.maxAgeMs == 1_800_000)
        let forever = base.replacingOccurrences(of: "  max_ms: 5000", with: "  max_ms: 5000\n  max_age_minutes: 0")
        #expect(try BridgeConfig.parse(forever, environment: env).retry.maxAgeMs == nil)
        for bad in ["  base_ms: -5", "  base_ms: 0"] {
            let yaml = base.replacingOccurrences(of: "  base_ms: 100", with: bad)
            #expect { try BridgeConfig.parse(yaml, environment: env) } throws: { ($0 as? IMError)?.message.contains("retry.base_ms: expected a duration of at least 1ms") == true }
        }
    }
}
