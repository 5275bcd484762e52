import Foundation
import IMCore
@_spi(Testing) import IMStore
import Testing

@Suite struct StorePruneTests {
    func lane(_ id: String) -> LaneKey { LaneKey(backend: "rc", conversation: .group(GroupID(id))) }

    @Test(arguments: StoreKind.allCases) func pruneDeletesOnlyOldFinishedWorkOldestFirstInBatches(_ kind: StoreKind) throws {
        let path = try kind.freshLocation()
        let store = try BridgeStore(path: path)
        // Entries 0…5 done at 100…105, 6 dead at 50, 7 pending since 200; ledger rows at 100…107.
        let ids = try store.transaction { tx in
            try (0..<8).map { n -> Int64 in
                _ = try tx.recordEvent("wk", EventID("e\(n)"), kind: "message", at: 100 + Int64(n))
                return try tx.enqueue(lane: lane("g\(n)"), sourceBackend: "wk", sourceEventID: EventID("e\(n)"), kind: "send",
                                      payload: Data("p".utf8), at: n == 7 ? 200 : 100 + Int64(n))
            }
        }
        try store.transaction { tx in
            for n in 0..<6 { try tx.complete(ids[n], at: 100 + Int64(n)) }
            try tx.markDead(ids[6], error: "refused", at: 50)
        }
        // Nothing is old enough yet.
        #expect(try store.transaction { try $0.prune(before: 100, limit: 10) } == StoreTransaction.Pruned())
        // A limit of 2: the two oldest done entries and the two oldest ledger rows.
        #expect(try store.transaction { try $0.prune(before: 1_000, limit: 2) } == StoreTransaction.Pruned(outbox: 2, ledger: 2))
        #expect(try store.read { try $0.ledgerCount() } == 6)
        #expect(try !store.transaction { try $0.recordEvent("wk", "e2", kind: "message", at: 300) }, "e2 was not pruned yet")
        #expect(try store.transaction { try $0.recordEvent("wk", "e0", kind: "message", at: 300) }, "e0's ledger row was pruned")
        let rest = try store.transaction { try $0.prune(before: 1_000, limit: 100) }
        #expect(rest.outbox == 4)
        #expect(try store.read { try $0.count(state: .done) } == 0)
        #expect(try store.read { try $0.count(state: .dead) } == 1, "dead letters are kept")
        #expect(try store.read { try $0.head(of: lane("g7")) }?.id == ids[7], "pending work is kept")
        // Ledger rows as recent as the oldest pending entry (created at 200) stay: e7 (107) is older, so
        // only rows received before 200 went, and e0's re-recorded row (300) stays.
        #expect(try store.read { try $0.ledgerCount() } == 1)
        // Ids are never reused after pruning.
        let next = try store.transaction { try $0.enqueue(lane: lane("g"), sourceBackend: "wk", sourceEventID: "e9", kind: "send",
                                                          payload: Data(), at: 400) }
        #expect(next > ids.max()!)
    }
}
