import Foundation
import IMCore
import Synchronization
@_spi(Testing) import IMStore
import Testing

/// The lanes' finishes that meet in one group-commit batch (`BridgeStore.finish`): on PostgreSQL one
/// statement for all of them, each with the outcome it has alone (`finishCompletesMapsAndClaimsTheNextHead`
/// checks one alone); a step that fails takes only itself down.
/// Serialized: `finishesWaitedForOnEveryPoolThreadStillComplete` holds every thread of the cooperative pool on
/// purpose, and the batch tests hold the store's writer in an open transaction until their steps are queued;
/// run beside each other, a held PostgreSQL transaction could wait past the session's 2 s
/// `idle_in_transaction_session_timeout` for pool threads the other test holds, and the server would end it
/// (the store then runs it again on a new connection, `TransactionRerunTests`; a busy machine can do the
/// same to a holder alone: the statement counts below allow for that rerun).
@Suite(.serialized) struct CombinedFinishTests {
    func lane(_ id: String) -> LaneKey { LaneKey(backend: "rc", conversation: .group(GroupID(id))) }

    struct Setup {
        var store: BridgeStore
        var heads: [String: OutboxEntry] = [:]
        var ids: [String: [Int64]] = [:]
        var fences: [String: LeaseFence] = [:]
    }

    /// Lanes `names`, each with `depth` entries, its lease taken by "me" and its head claimed.
    func setUp(_ kind: StoreKind, lanes names: [String], depth: Int) throws -> Setup {
        var setup = Setup(store: try BridgeStore(path: try kind.freshLocation()))
        let real = Int64(Date().timeIntervalSince1970 * 1000)
        for name in names {
            let key = lane(name)
            setup.ids[name] = try setup.store.transaction { tx in
                try (0..<depth).map { try tx.enqueue(lane: key, sourceBackend: "wk", sourceEventID: EventID("\(name)\($0)"), kind: "send",
                                                     payload: Data([1]), at: 1) }
            }
            let (fence, head) = try setup.store.transaction { tx in
                (try tx.takeLease(key.leaseName, owner: "me", ttlMs: 60_000, now: real), try tx.claimHead(of: key, dueBy: 1, leaseOwner: "me"))
            }
            setup.fences[name] = try #require(fence)
            setup.heads[name] = try #require(head)
        }
        return setup
    }

    /// Submits `steps` so that they meet in one batch (the writer is held until all are queued); returns
    /// each one's outcome and the statements the batch took.
    func finishTogether(_ store: BridgeStore, _ steps: [String: StoreTransaction.Finish],
                        alongside: (@Sendable (StoreTransaction) throws -> Void)? = nil) async throws
        -> (outcomes: [String: Result<OutboxEntry?, any Error>], statements: Int) {
        let entered = Mutex(false)
        let release = Mutex(false)
        let holder = Task {
            try await store.groupedTransaction { _ in
                entered.withLock { $0 = true }
                while !release.withLock({ $0 }) { Thread.sleep(forTimeInterval: 0.002) }
            }
        }
        while !entered.withLock({ $0 }) { try await Task.sleep(nanoseconds: 1_000_000) }
        let before = store.counters.statements
        let outcomes = await withTaskGroup(of: (String, Result<OutboxEntry?, any Error>).self) { group in
            for (name, step) in steps {
                group.addTask {
                    do { return (name, .success(try await store.finish(step))) } catch { return (name, .failure(error)) }
                }
            }
            if let alongside {
                group.addTask {
                    do { try await store.groupedTransaction(alongside) } catch { Issue.record(error) }
                    return ("", .success(nil))
                }
            }
            while store.queuedGroupedWrites < steps.count + (alongside == nil ? 0 : 1) { try? await Task.sleep(nanoseconds: 1_000_000) }
            release.withLock { $0 = true }
            var outcomes: [String: Result<OutboxEntry?, any Error>] = [:]
            for await (name, outcome) in group { outcomes[name] = outcome }
            return outcomes
        }
        try await holder.value
        return (outcomes, store.counters.statements - before)
    }

    @Test(arguments: StoreKind.allCases) func finishesOfOneBatchEachHaveTheirOwnOutcome(_ kind: StoreKind) async throws {
        var setup = try setUp(kind, lanes: ["a", "b", "c", "d"], depth: 2)
        let store = setup.store
        // d's tenure is not the one holding its lease (another owner took it over meanwhile).
        setup.fences["d"]!.token += 1
        let mapping = { (n: String) in StoreTransaction.Mapping(source: ("wk", MessageID("m-\(n)"), .group(GroupID(n))),
                                                               target: ("rc", MessageID("r-\(n)"), .group(GroupID(n)))) }
        let steps: [String: StoreTransaction.Finish] = [
            "a": .init(setup.heads["a"]!.id, lane: lane("a"), at: 5, mapping: mapping("a"), claimNext: true, fence: setup.fences["a"]!),
            "b": .init(setup.heads["b"]!.id, lane: lane("b"), at: 5, mapping: nil, claimNext: false, fence: setup.fences["b"]!),
            "c": .init(setup.heads["c"]!.id, lane: lane("c"), at: 5, mapping: mapping("c"), claimNext: true, fence: setup.fences["c"]!),
            "d": .init(setup.heads["d"]!.id, lane: lane("d"), at: 5, mapping: mapping("d"), claimNext: true, fence: setup.fences["d"]!),
        ]
        let (outcomes, statements) = try await finishTogether(store, steps)
        // The holder's COMMIT, then the finishes' batch: one statement for the four, outside a transaction
        // (alone, each would be BEGIN, the finish, COMMIT). A holder kept idle past the server's 2 s limit on
        // a loaded machine is run again (BEGIN and COMMIT on a new connection: one statement more).
        if kind == .postgres { #expect(statements == 1 + 1 + store.counters.transactionsRerun) }

        let nextA = try #require(try outcomes["a"]!.get())
        #expect(nextA.id == setup.ids["a"]![1] && nextA.attempts == 0, "a: its next entry, claimed, attempts as before the claim")
        #expect(try store.read { try $0.head(of: lane("a")) }?.attempts == 1)
        #expect(try outcomes["b"]!.get() == nil, "b: not asked to go on")
        #expect(try outcomes["c"]!.get()?.id == setup.ids["c"]![1], "c: its next entry is claimed too")
        #expect(try store.read { try $0.head(of: lane("c")) }?.attempts == 1)
        #expect(throws: StoreTransaction.LeaseLost.self) { try outcomes["d"]!.get() }

        let real = Int64(Date().timeIntervalSince1970 * 1000)
        #expect(try store.read { try $0.leaseHolder(lane("a").leaseName, at: real) } == "me", "a goes on: its lease stays")
        #expect(try store.read { try $0.leaseHolder(lane("b").leaseName, at: real) } == nil, "b stopped: its lease released")
        #expect(try store.read { try $0.leaseHolder(lane("d").leaseName, at: real) } == "me", "d: the lease row is not d's tenure's to release")
        for name in ["a", "c"] {
            #expect(try store.read { try $0.mapped(MessageID("m-\(name)"), from: "wk", to: "rc") }?.toMessage == MessageID("r-\(name)"))
            #expect(try store.read { try $0.mapped(MessageID("r-\(name)"), from: "rc", to: "wk") }?.toMessage == MessageID("m-\(name)"))
        }
        #expect(try store.read { try $0.mapped("m-d", from: "wk", to: "rc") } == nil, "d: fenced, nothing mapped")
        #expect(try store.read { try $0.head(of: lane("d")) }?.id == setup.heads["d"]!.id, "d: its entry is still pending")
        #expect(try store.read { try $0.count(state: .done) } == 3)
    }

    /// A step the database refuses (a message id PostgreSQL cannot store as text) fails the combined
    /// statement; the batch runs again with each finish alone, so only that one fails.
    @Test(arguments: StoreKind.allCases) func aFailingFinishTakesOnlyItselfDown(_ kind: StoreKind) async throws {
        let setup = try setUp(kind, lanes: ["a", "b", "c"], depth: 1)
        let store = setup.store
        let bad = StoreTransaction.Mapping(source: ("wk", "m\u{0}b", .group("b")), target: ("rc", "r-b", .group("b")))
        let good = StoreTransaction.Mapping(source: ("wk", "m-a", .group("a")), target: ("rc", "r-a", .group("a")))
        let steps: [String: StoreTransaction.Finish] = [
            "a": .init(setup.heads["a"]!.id, lane: lane("a"), at: 5, mapping: good, claimNext: true, fence: setup.fences["a"]!),
            "b": .init(setup.heads["b"]!.id, lane: lane("b"), at: 5, mapping: bad, claimNext: true, fence: setup.fences["b"]!),
            "c": .init(setup.heads["c"]!.id, lane: lane("c"), at: 5, mapping: nil, claimNext: true, fence: setup.fences["c"]!),
        ]
        let (outcomes, _) = try await finishTogether(store, steps)
        #expect(try outcomes["a"]!.get() == nil)
        #expect(try outcomes["c"]!.get() == nil)
        #expect(try store.read { try $0.mapped("m-a", from: "wk", to: "rc") }?.toMessage == "r-a")
        if kind == .postgres {
            #expect(throws: (any Error).self) { try outcomes["b"]!.get() }
            #expect(try store.read { try $0.head(of: lane("b")) }?.id == setup.heads["b"]!.id, "b's finish left no change")
            #expect(try store.read { try $0.count(state: .done) } == 2)
        }
    }

    /// Finishes that meet other writes in their batch run after them, in the same transaction: a lane's
    /// finish sees the entry a write of its batch queued in its lane, and claims it.
    @Test(arguments: StoreKind.allCases) func finishesRunAfterTheOtherWritesOfTheirBatch(_ kind: StoreKind) async throws {
        let setup = try setUp(kind, lanes: ["a", "b"], depth: 1)
        let store = setup.store
        let steps: [String: StoreTransaction.Finish] = [
            "a": .init(setup.heads["a"]!.id, lane: lane("a"), at: 5, mapping: nil, claimNext: true, fence: setup.fences["a"]!),
            "b": .init(setup.heads["b"]!.id, lane: lane("b"), at: 5, mapping: nil, claimNext: true, fence: setup.fences["b"]!),
        ]
        let a = lane("a")
        let (outcomes, statements) = try await finishTogether(store, steps) { tx in
            _ = try tx.enqueue(lane: a, sourceBackend: "wk", sourceEventID: "late", kind: "send", payload: Data([2]), at: 4)
        }
        #expect(try outcomes["b"]!.get() == nil)
        let late = try store.read { try $0.pendingEntries(of: a, limit: 5) }
        #expect(late.map(\.sourceEventID) == ["late"])
        if kind == .postgres {
            // The holder's COMMIT; BEGIN, the enqueue, the two finishes in one statement, COMMIT (a rerun
            // of the holder: one statement more; of the batch, which runs without pauses: not expected).
            #expect(statements == 1 + 4 + store.counters.transactionsRerun)
            #expect(try outcomes["a"]!.get()?.sourceEventID == "late", "a's finish ran after the enqueue and claimed it")
            #expect(late.first?.attempts == 1)
        } else {
            // SQLite runs a batch in submission order: a's finish claimed the entry or released the lane.
            let next = try outcomes["a"]!.get()
            #expect(next == nil || next?.sourceEventID == "late")
        }
    }

    /// A finish waited for on a thread of the cooperative pool (`BridgeStore.transaction` is synchronous)
    /// while every other pool thread does the same: the prepared statement's async call must not need a
    /// pool thread (else each waits for the statement's answer timeout, 30 s, and fails as unavailable).
    @Test func finishesWaitedForOnEveryPoolThreadStillComplete() async throws {
        let names = (0..<4 * max(2, ProcessInfo.processInfo.activeProcessorCount)).map { "p\($0)" }
        let setup = try setUp(.postgres, lanes: names, depth: 1)
        let store = setup.store
        let outcomes = await withTaskGroup(of: Bool.self) { group in
            for name in names {
                let (entry, fence, key) = (setup.heads[name]!, setup.fences[name]!, lane(name))
                group.addTask {
                    do {
                        _ = try store.transaction { try $0.finish(entry.id, lane: key, at: 5, mapping: nil, claimNext: true, fence: fence) }
                        return true
                    } catch {
                        Issue.record(error, "finish of \(name)")
                        return false
                    }
                }
            }
            var outcomes: [Bool] = []
            for await done in group { outcomes.append(done) }
            return outcomes
        }
        #expect(outcomes.count == names.count && outcomes.allSatisfy { $0 }, "\(outcomes.filter { !$0 }.count) finishes failed")
        #expect(try store.read { try $0.count(state: .done) } == names.count)
    }
}
