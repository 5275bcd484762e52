import Foundation
import IMCore
@_spi(Testing) @testable import IMRelay
@_spi(Testing) import IMStore
import IMTesting
import Synchronization
import Testing
import IMOutbox

/// How lanes start and end under a steady flow: a lane whose finish claims nothing ends there (no second
/// claim, no scan of every lane head), and work queued meanwhile still starts it again at once.
@Suite struct LaneSchedulingTests {
    /// One message at a time into a conversation whose lane has emptied: what the store does for it.
    @Test func aMessageIntoAnEmptiedLaneCostsItsIntakeItsClaimAndItsFinish() async throws {
        let h = try RelayHarness()
        let engine = h.engine()
        try await engine.start(feeding: [h.wk, h.rc])
        let g1 = ConversationRef.group("g1")
        // Warm: the puppet is provisioned, the lane has run once.
        _ = try await h.wk.send(OutgoingMessage(conversation: g1, sender: "alice", content: .text("warm")))
        #expect(try await eventually { try await h.history(h.rc, "g1").count == 1 })
        #expect(await engine.waitUntilIdle())
        try await Task.sleep(nanoseconds: 300_000_000)

        // What one of the scheduler's scans reads (the lane keys due, the next wake-up), counted here on
        // the same store: the fewest of a few tries, in case one of the engine's own falls into one.
        let counters = h.store.counters
        var scanCost = Int.max
        for _ in 0..<3 {
            let before = counters.statements - counters.sideStatements
            _ = try h.store.read { try $0.dueLaneKeys(at: 0, leaseOwner: "probe") }
            _ = try h.store.read { try $0.nextWakeUp(after: 0) }
            scanCost = min(scanCost, counters.statements - counters.sideStatements - before)
        }

        // Another connection watches the lane's lease: its reads are not counted with the engine's.
        let watcher = try BridgeStore(path: h.path)
        var statements: [Int] = [], transactions: [Int] = [], renewals: [Int] = [], scans: [Int] = []
        for index in 0..<10 {
            let before = (counters.statements - counters.sideStatements, counters.transactions - counters.sideTransactions,
                          counters.sideTransactions, engine.signals.scans.load(ordering: .relaxed))
            _ = try await h.wk.send(OutgoingMessage(conversation: g1, sender: "alice", content: .text("m\(index)")))
            #expect(try await eventually { try await h.history(h.rc, "g1").count == index + 2 })
            // The lane has ended once its lease row is gone.
            #expect(try await eventually { try watcher.read { try $0.leaseHolder("lane:rc/group:g1", at: 0) } == nil })
            try await Task.sleep(nanoseconds: 50_000_000)
            let scanned = engine.signals.scans.load(ordering: .relaxed) - before.3
            scans.append(scanned)
            statements.append(counters.statements - counters.sideStatements - before.0 - scanned * scanCost)
            transactions.append(counters.transactions - counters.sideTransactions - before.1)
            renewals.append(counters.sideTransactions - before.2)
        }
        await engine.stop()
        // Intake (ledger, echo check, outbox), the first claim (lease, head) and the finish (lease check,
        // id map, done, next head, lease released): 10 statements in 3 write transactions, 16 with BEGIN
        // and COMMIT; then one read of the lane's head (4 with its transaction). The lane used to claim
        // once more after its finish had released the lease (5) and then scan every lane head (two reads,
        // 8): 29. What comes on clocks of its own is left out, for on a loaded machine (CI: about 3 s a
        // message) it falls into every message: the timer's scans (one a second, counted by the engine,
        // `scanCost` statements each) and the lease loop's renewals (a transaction every third of the
        // lease length, counted apart by the store). The prune at start (once) is what the median is for.
        #expect(statements.min()! <= 20, "statements per message: \(statements), scans left out: \(scans) of \(scanCost) statements")
        #expect(transactions.sorted()[transactions.count / 2] <= 3,
                "write transactions per message: \(transactions), besides the lease loop's: \(renewals)")
    }

    /// Messages arriving while their lane is busy or just ending: each is relayed once, in order. (How
    /// soon is not asserted: a machine's load moves it. A lane left behind would still be found by the
    /// timer's scan; `LaneSlotTests` counts scans, and the first test here counts statements.)
    @Test func workQueuedAsALaneEndsStartsItAgain() async throws {
        let h = try RelayHarness()
        let engine = h.engine()
        try await engine.start(feeding: [h.wk, h.rc])
        let groups = ["g1", "g2", "g3"]
        for round in 0..<40 {
            // A burst into every conversation, then a pause of a few milliseconds: lanes end and restart.
            for (index, name) in groups.enumerated() {
                for k in 0..<(1 + (round + index) % 3) {
                    _ = try await h.wk.send(OutgoingMessage(conversation: .group(GroupID(name)), sender: "alice", content: .text("\(round).\(k)")))
                }
            }
            // (A bound for a busy machine running the whole suite at once, not a speed.)
            #expect(await engine.waitUntilIdle(timeoutMs: 60_000))
            try await Task.sleep(nanoseconds: UInt64((round % 4) * 1_000_000))
        }
        let expected = (0..<40).reduce(0) { total, round in total + (0..<3).reduce(0) { $0 + 1 + (round + $1) % 3 } }
        #expect(try await eventually { try await groups.asyncReduce(0) { $0 + (try await h.history(h.rc, $1).count) } == expected })
        for name in groups {
            let texts = try await h.history(h.rc, name).compactMap { message -> String? in
                if case .text(let text) = message.content { return text.text } else { return nil }
            }
            let sent = (0..<40).flatMap { round in (0..<(1 + (round + groups.firstIndex(of: name)!) % 3)).map { "\(round).\($0)" } }
            #expect(texts == sent, "\(name): every message once, in order")
        }
        await engine.stop()
    }
}


@Suite struct LaneSlotTests {
    /// More conversations than lane slots: lanes turned away wait in line and take the slots that free
    /// up, without a scan of every lane head at each lane's end.
    @Test func lanesTurnedAwayForASlotTakeTheSlotsThatFreeUp() async throws {
        let h = try RelayHarness()
        let engine = RelayEngine(store: h.store, backends: [h.wk, h.rc], routes: h.routes, retry: RetryPolicy(baseMs: 5, maxMs: 50),
                                 maxConcurrentLanes: 2)
        try await engine.start(feeding: [h.wk, h.rc])
        let groups = (0..<30).map { "g\($0)" }
        let started = Date()
        let scansBefore = engine.signals.scans.load(ordering: .relaxed)
        for round in 0..<3 {
            for name in groups {
                _ = try await h.wk.send(OutgoingMessage(conversation: .group(GroupID(name)), sender: "alice", content: .text("\(name).\(round)")))
            }
        }
        #expect(try await eventually(180) { try await groups.asyncReduce(0) { $0 + (try await h.history(h.rc, $1).count) } == 90 })
        let elapsed = Date().timeIntervalSince(started)
        let scans = engine.signals.scans.load(ordering: .relaxed) - scansBefore
        for name in groups {
            let texts = try await h.history(h.rc, name).compactMap { message -> String? in
                if case .text(let text) = message.content { return text.text } else { return nil }
            }
            #expect(texts == (0..<3).map { "\(name).\($0)" })
        }
        await engine.stop()
        // The timer's scans (about one a second) only: a scan at every lane end would be one per message.
        #expect(scans <= Int(elapsed) + 10, "\(scans) scans in \(elapsed) s for 90 messages over 2 slots")
    }

    @Test func theWaitingLineKeepsOrderAndEachLaneOnce() {
        func lane(_ name: String) -> LaneKey { LaneKey(backend: "rc", conversation: .group(GroupID(name))) }
        var queue = LaneQueue()
        let added = [queue.append(lane("a"), limit: 3), queue.append(lane("b"), limit: 3), queue.append(lane("a"), limit: 3),
                     queue.append(lane("c"), limit: 3), queue.append(lane("d"), limit: 3)]
        #expect(added == [true, true, true, true, false], "a once; full at 3")
        queue.prepend(lane("c"))
        queue.prepend(lane("e"))
        let first = queue.popFirst()
        #expect(first == lane("e"))
        queue.prepend(lane("f"))
        var out: [LaneKey] = []
        while let next = queue.popFirst() { out.append(next) }
        #expect(out == [lane("f"), lane("c"), lane("a"), lane("b")])
        // Long runs: the consumed front is dropped as it grows.
        for round in 0..<3 {
            var ok = true
            for index in 0..<3000 { ok = queue.append(lane("\(round).\(index)"), limit: 10_000) && ok }
            var popped: [LaneKey] = []
            for _ in 0..<3000 { if let next = queue.popFirst() { popped.append(next) } }
            #expect(ok && popped == (0..<3000).map { lane("\(round).\($0)") })
        }
        let last = queue.popFirst()
        #expect(last == nil)
    }
}

extension Sequence {
    func asyncReduce<T>(_ initial: T, _ next: (T, Element) async throws -> T) async rethrows -> T {
        var result = initial
        for element in self { result = try await next(result, element) }
        return result
    }
}
