import Foundation
import IMCore
@_spi(Testing) @testable import IMStore
@testable import IMStorePostgres
import PostgresTestSupport
import Testing

/// A transaction whose PostgreSQL connection is lost part way (the server ends the session of an instance
/// paused inside it, as `idle_in_transaction_session_timeout` does) fails whole: the statements after the
/// loss are not run on a new connection, where each would commit on its own. Found as a double: an
/// instance paused between its ledger insert and its outbox insert came back and queued, outside its lost
/// transaction, a message the other instance had queued meanwhile. (The store runs such a transaction
/// again once, whole, on a new connection — `TransactionRerunTests`; here the session is ended on both
/// runs.)
@Suite struct TornTransactionTests {
    @Test func aConnectionLostInsideATransactionCommitsNothing() async throws {
        let location = try StoreKind.postgres.freshLocation()
        let store = try BridgeStore(path: location)
        let lane = LaneKey(backend: "rc", conversation: .group("g1"))
        var runs = 0
        #expect(throws: (any Error).self) {
            try store.transaction { tx in
                runs += 1
                #expect(try tx.recordEvent("wk", EventID("msg:1"), kind: "message", at: 1))
                let operations = try #require(tx.ops as? PostgresOperations)
                let pid = try #require(try operations.int("SELECT pg_backend_pid()"))
                // Another session ends this one, as the server does with a session idle in a transaction.
                _ = try TestPostgres.query(location, "SELECT pg_terminate_backend(\(pid))")
                Thread.sleep(forTimeInterval: 0.3)   // the client sees the connection closed
                _ = try tx.enqueue(lane: lane, sourceBackend: "wk", sourceEventID: EventID("msg:1"), kind: "send", payload: Data("{}".utf8), at: 1)
            }
        }
        #expect(runs == 2)
        #expect(try store.read { try $0.ledgerCount() } == 0)
        #expect(try store.read { try $0.count(state: .pending) } == 0, "no outbox row committed on a connection of its own")
        // The store goes on with a new connection.
        #expect(try store.transaction { try $0.recordEvent("wk", EventID("msg:1"), kind: "message", at: 2) })
    }
}
