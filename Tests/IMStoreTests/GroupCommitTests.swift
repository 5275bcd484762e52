import Foundation
import IMCore
@_spi(Testing) import IMStore
import Testing

@Suite struct GroupCommitTests {
    func lane(_ id: String) -> LaneKey { LaneKey(backend: "rc", conversation: .group(GroupID(id))) }

    @Test(arguments: StoreKind.allCases) func groupedTransactionsCommitTogetherAndFailAlone(_ kind: StoreKind) async throws {
        let path = try kind.freshLocation()
        let store = try BridgeStore(path: path)
        struct Boom: Error {}
        let outcomes = await withTaskGroup(of: (Int, Bool).self) { group in
            for n in 0..<64 {
                group.addTask {
                    do {
                        try await store.groupedTransaction { tx in
                            _ = try tx.recordEvent("wk", EventID("e\(n)"), kind: "message", at: Int64(n))
                            if n % 10 == 3 { throw Boom() }
                        }
                        return (n, true)
                    } catch {
                        return (n, error is Boom)
                    }
                }
            }
            var outcomes: [Int: Bool] = [:]
            for await (n, ok) in group { outcomes[n] = ok }
            return outcomes
        }
        #expect(outcomes.count == 64 && outcomes.values.allSatisfy { $0 }, "each body got its own result or its own error")
        let failing = Set((0..<64).filter { $0 % 10 == 3 })
        #expect(try store.read { try $0.ledgerCount() } == 64 - failing.count)
        for n in 0..<64 {
            let fresh = try store.transaction { try $0.recordEvent("wk", EventID("e\(n)"), kind: "message", at: 99) }
            #expect(fresh == failing.contains(n), "e\(n): a failed body's row was rolled back, the others committed")
        }
    }

    /// Bodies submitted at once share batches: every body must see what every body before it wrote —
    /// a read-modify-write of one counter loses no increment, in one batch or across batches — and its
    /// submitter must resume only once its write is committed (a read on another connection sees it).
    @Test(arguments: StoreKind.allCases) func eachBodySeesTheWritesCommittedBeforeIt(_ kind: StoreKind) async throws {
        let store = try BridgeStore(path: try kind.freshLocation())
        let count = 300
        let seen = try await withThrowingTaskGroup(of: Int.self) { group in
            for n in 0..<count {
                group.addTask {
                    let read = try await store.groupedTransaction { tx -> Int in
                        let value = Int(try tx.checkpoint("counter") ?? "0")!
                        try tx.setCheckpoint("counter", "\(value + 1)", at: Int64(n))
                        return value
                    }
                    let committed = Int(try await store.reading { try $0.checkpoint("counter") } ?? "0")!
                    #expect(committed > read, "the submitter resumed before its write was visible: read \(read), committed \(committed)")
                    return read
                }
            }
            var seen: [Int] = []
            for try await value in group { seen.append(value) }
            return seen
        }
        #expect(seen.sorted() == Array(0..<count), "each body read the value the body before it wrote")
        #expect(try store.read { try $0.checkpoint("counter") } == "\(count)")
    }
}
