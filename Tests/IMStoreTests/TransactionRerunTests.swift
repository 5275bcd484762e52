import Foundation
import IMCore
import Synchronization
@_spi(Testing) @testable import IMStore
import PostgresTestSupport
import Testing

/// A transaction of the bridge's own that the PostgreSQL server ends (its session idle in the transaction
/// past `idle_in_transaction_session_timeout`, 2 s: a process paused or starved between two statements)
/// was rolled back whole; the store runs it again once on a new connection, and it commits once
/// (docs/high-availability.md, "A transaction the server ended"). Real server, real timeout.
@Suite struct TransactionRerunTests {
    /// Longer than the sessions' 2 s idle-in-transaction limit, with room for the server to act on it.
    static let pastTheLimit: TimeInterval = 3.5

    @Test func aTransactionEndedBetweenTwoStatementsRunsAgainAndCommitsOnce() throws {
        let store = try BridgeStore(path: try StoreKind.postgres.freshLocation())
        defer { store.close() }
        let lane = LaneKey(backend: "rc", conversation: .group("g1"))
        let runs = Mutex(0)
        let queued = try store.transaction { tx -> Int64 in
            let run = runs.withLock { $0 += 1; return $0 }
            #expect(try tx.recordEvent("wk", EventID("msg:1"), kind: "message", at: 1), "run \(run): the ledger row is new (the first run's was rolled back)")
            if run == 1 { Thread.sleep(forTimeInterval: Self.pastTheLimit) }
            return try tx.enqueue(lane: lane, sourceBackend: "wk", sourceEventID: EventID("msg:1"), kind: "send", payload: Data("{}".utf8), at: 1)
        }
        #expect(runs.withLock { $0 } == 2 && store.counters.transactionsRerun == 1)
        #expect(try store.read { try $0.ledgerCount() } == 1)
        #expect(try store.read { try $0.pendingEntries(of: lane, limit: 10).map(\.id) } == [queued], "one outbox row: the second run's")
    }

    /// The same in the group commit, the loss found at the COMMIT: the batch runs again whole, and each
    /// submitter gets its own value once it committed.
    @Test func aGroupedBatchEndedBeforeItsCommitRunsAgain() async throws {
        let store = try BridgeStore(path: try StoreKind.postgres.freshLocation())
        defer { store.close() }
        let runs = Mutex(0)
        let recorded = try await store.groupedTransaction { tx -> Int in
            let run = runs.withLock { $0 += 1; return $0 }
            _ = try tx.recordEvent("wk", EventID("msg:\(run)"), kind: "message", at: 1)
            if run == 1 { Thread.sleep(forTimeInterval: Self.pastTheLimit) }   // idle: the server ends the session before COMMIT
            return run
        }
        #expect(recorded == 2 && store.counters.transactionsRerun == 1, "the value of the run that committed")
        #expect(try store.read { try $0.ledgerCount() } == 1, "the first run's row was rolled back with its transaction")
        #expect(try store.read { try $0.recordEvent("wk", EventID("msg:1"), kind: "message", at: 2) }, "msg:1 never committed")
    }

    /// Ended again on its second run: it fails as the store being unavailable (its caller retries), and
    /// nothing of either run is left.
    @Test func aTransactionEndedTwiceFailsAndLeavesNothing() throws {
        let store = try BridgeStore(path: try StoreKind.postgres.freshLocation())
        defer { store.close() }
        let runs = Mutex(0)
        #expect {
            try store.transaction { tx in
                runs.withLock { $0 += 1 }
                _ = try tx.recordEvent("wk", EventID("msg:1"), kind: "message", at: 1)
                Thread.sleep(forTimeInterval: Self.pastTheLimit)
                _ = try tx.recordEvent("wk", EventID("msg:2"), kind: "message", at: 1)
            }
        } throws: { error in
            (error as? IMError)?.code == .unavailable && (error as? IMError)?.isRetryable == true
        }
        #expect(runs.withLock { $0 } == 2, "run once more, not again and again")
        #expect(try store.read { try $0.ledgerCount() } == 0)
    }
}
