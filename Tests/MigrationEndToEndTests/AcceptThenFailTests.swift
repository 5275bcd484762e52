import Foundation
import IMCore
import IMRelay
import IMStore
import Synchronization
import Testing
import IMMigration
import IMOutbox

/// A real adapter whose next N sends reach the vendor and then report a failure, as when the connection
/// drops after the vendor committed (the window between the target's accept and the id-map write).
final class AcceptThenFail: IMBackend, Recalling, UserProvisioning {
    let inner: any IMBackend
    let failures: Mutex<Int>
    init(_ inner: any IMBackend, failures: Int) {
        self.inner = inner
        self.failures = Mutex(failures)
    }
    var id: BackendID { inner.id }
    var capabilities: Capabilities { inner.capabilities }
    func send(_ message: OutgoingMessage) async throws -> Message {
        let sent = try await inner.send(message)
        let fail = failures.withLock { left -> Bool in
            guard left > 0 else { return false }
            left -= 1
            return true
        }
        if fail { throw IMError(.unavailable, "connection reset after the vendor committed", vendorCode: "reset") }
        return sent
    }
    func events() -> AsyncStream<IMEvent> { inner.events() }
    func history(_ query: HistoryQuery) async throws -> HistoryPage { try await inner.history(query) }
    func recall(_ message: MessageID, in conversation: ConversationRef, by user: UserID) async throws {
        try await (inner as! any Recalling).recall(message, in: conversation, by: user)
    }
    func ensureUser(_ profile: UserProfile) async throws { try await (inner as! any UserProvisioning).ensureUser(profile) }
}

@Suite struct AcceptThenFailTests {
    /// WuKong finds the unrecorded copy by `client_msg_no` in its history; RongCloud (no client id in
    /// history) by sender, kind, digest and time; NIM and JMessage through `ClientIDLookup`.
    @Test(arguments: [("nim", "wk"), ("wk", "rc"), ("rc", "nim"), ("nim", "jm")] as [(BackendID, BackendID)])
    func aSendAcceptedButNotRecordedIsFoundNotRepeated(source: BackendID, target: BackendID) async throws {
        let lab = try await MigrationLab()
        let seed = Seed(source: source)
        try await lab.provision([seed.a, seed.b])
        try await lab.write(seed, on: source)
        let expected = Expectation.expected(from: try await lab.records(source, between: (seed.a, seed.b)), source: source)
        let store = try lab.newStore()
        let plan = MigrationPlan(source: source, target: target, conversations: [(seed.conversation, seed.conversation)],
                                 users: .puppet(prefix: ""), pageSize: 4)
        // Not retryable by the migrator itself here (count it, move on): a permanent-looking failure after commit.
        let flaky = AcceptThenFail(try await lab.backend(target, store: store), failures: 3)
        let first = try await Migrator(store: store, source: try await lab.backend(source, store: store), target: flaky,
                                       retry: RetryPolicy(baseMs: 5, maxMs: 20)).run(plan)
        let afterFirst = try await lab.records(target, between: (seed.a, seed.b))
        #expect(afterFirst.count == expected.count,
                "retried sends were recognised within the run: \(first.summary) \(afterFirst.map { "\($0.kind):\($0.text)" })")
        let second = try await Migrator(store: store, source: try await lab.backend(source, store: store),
                                        target: try await lab.backend(target, store: store)).run(plan)
        #expect(second.total.failedTotal == 0, "\(second.summary)")
        let copies = try await lab.records(target, between: (seed.a, seed.b))
        #expect(copies.count == expected.count, "exactly one copy each: \(copies.map(\.text))")
        #expect(Set(copies.map(\.id)).count == copies.count)
        await lab.stop()
    }
}
