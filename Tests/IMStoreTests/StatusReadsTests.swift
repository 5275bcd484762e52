import Foundation
import IMCore
import IMStore
import Testing

/// The status page's reads (docs/status-page.md) on both store implementations: lanes by oldest pending
/// entry, bounded; dead letters newest first.
@Suite struct StatusReadsTests {
    @Test(arguments: StoreKind.allCases) func lanesOldestFirstAndDeadLettersNewestFirst(_ kind: StoreKind) throws {
        let store = try BridgeStore(path: try kind.freshLocation())
        func lane(_ id: String) -> LaneKey { LaneKey(backend: "rc", conversation: .group(GroupID(id))) }
        try store.transaction { tx in
            // a: 1 entry at 300; b: 3 entries from 100; c: 2 entries from 100 (ties on age: the deeper first).
            _ = try tx.enqueue(lane: lane("a"), sourceBackend: "wk", sourceEventID: "a1", kind: "send", payload: Data(), at: 300)
            for n in 0..<3 { _ = try tx.enqueue(lane: lane("b"), sourceBackend: "wk", sourceEventID: EventID("b\(n)"), kind: "send", payload: Data(), at: 100 + Int64(n)) }
            for n in 0..<2 { _ = try tx.enqueue(lane: lane("c"), sourceBackend: "wk", sourceEventID: EventID("c\(n)"), kind: "send", payload: Data(), at: 100 + Int64(n)) }
            let done = try tx.enqueue(lane: lane("d"), sourceBackend: "wk", sourceEventID: "d1", kind: "send", payload: Data(), at: 50)
            try tx.complete(done, at: 60)
            for n in 0..<3 {
                let id = try tx.enqueue(lane: lane("x"), sourceBackend: "wk", sourceEventID: EventID("x\(n)"), kind: "send", payload: Data(), at: 10)
                try tx.markDead(id, error: "dead \(n)", at: 20)
                _ = try tx.keepInbound(backend: "wk", key: "k\(n)", format: "f", payload: Data([1]), reason: "in \(n)", at: 30 + Int64(n))
            }
        }
        let summaries = try store.read { try $0.laneSummaries(limit: 10) }
        #expect(summaries == [LaneSummary(lane: lane("b"), depth: 3, oldestCreatedAt: 100), LaneSummary(lane: lane("c"), depth: 2, oldestCreatedAt: 100),
                              LaneSummary(lane: lane("a"), depth: 1, oldestCreatedAt: 300)], "done and dead entries are not pending work")
        #expect(try store.read { try $0.laneSummaries(limit: 1) }.map(\.lane) == [lane("b")])
        #expect(try store.read { try $0.recentDeadLetters(limit: 2) }.map(\.lastError) == ["dead 2", "dead 1"])
        #expect(try store.read { try $0.recentInboundDeadLetters(limit: 2) }.map(\.reason) == ["in 2", "in 1"])
        #expect(try store.read { try $0.recentInboundDeadLetters(limit: 5) }.first?.payload == Data([1]))
    }
}
