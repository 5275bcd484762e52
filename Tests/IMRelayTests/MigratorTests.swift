import Foundation
import IMCore
import IMMapping
import IMRelay
@_spi(Testing) import IMStore
import IMTesting
import Synchronization
import Testing
import IMMigration
import IMOutbox

/// Forwards to a memory backend; `acceptThenFail` stores the next N messages and then reports a
/// failure, as a vendor does when the connection drops after it committed.
final class LossyAckBackend: IMBackend, Recalling, ClientIDLookup {
    let inner: MemoryBackend
    let acceptThenFail = Mutex(0)
    init(_ inner: MemoryBackend) { self.inner = inner }
    var id: BackendID { inner.id }
    var capabilities: Capabilities { inner.capabilities }
    func send(_ message: OutgoingMessage) async throws -> Message {
        let sent = try await inner.send(message)
        let fail = acceptThenFail.withLock { left -> Bool in
            guard left > 0 else { return false }
            left -= 1
            return true
        }
        if fail { throw IMError(.invalidArgument, "connection reset after commit", vendorCode: "reset") }
        return sent
    }
    func events() -> AsyncStream<IMEvent> { inner.events() }
    func history(_ query: HistoryQuery) async throws -> HistoryPage { try await inner.history(query) }
    func recall(_ message: MessageID, in conversation: ConversationRef, by user: UserID) async throws {
        try await inner.recall(message, in: conversation, by: user)
    }
    func message(withClientID id: ClientMessageID, in conversation: ConversationRef, readingAs viewer: UserID?) async throws -> Message? {
        try await inner.message(withClientID: id, in: conversation, readingAs: viewer)
    }
}

@Suite struct MigratorTests {
    let g = ConversationRef.group("g")

    func seeded() async throws -> (MemoryBackend, [Message]) {
        let wk = MemoryBackend(id: "wk", capabilities: .wukong, clock: SystemClock())
        var sent: [Message] = []
        for n in 1...30 { sent.append(try await wk.send(OutgoingMessage(conversation: g, sender: UserID("u\(n % 3)"), content: .text("m\(n)")))) }
        try await wk.edit(sent[1].id, in: g, by: sent[1].sender, content: .text("m2 edited"))
        try await wk.recall(sent[2].id, in: g, by: sent[2].sender)
        let order = try await wk.send(OutgoingMessage(conversation: g, sender: "shop", content: .text("order"), expansion: ["status": "new"]))
        _ = try await wk.updateExpansion(of: order.id, in: g, by: "buyer", .set(["status": "paid"]))
        sent.append(order)
        return (wk, sent)
    }

    func store() throws -> BridgeStore {
        try BridgeStore(path: FileManager.default.temporaryDirectory.appendingPathComponent("mig-\(UUID().uuidString).sqlite").path)
    }

    func plan(dryRun: Bool = false) -> MigrationPlan {
        MigrationPlan(source: "wk", target: "rc", conversations: [(g, g)], dryRun: dryRun, pageSize: 7)
    }

    func targetMessages(_ rc: any IMBackend) async throws -> [Message] {
        try await rc.history(HistoryQuery(conversation: g, anchor: .latest, limit: 1000)).messages
    }

    @Test func copiesEverythingInOrderWithItsFinalState() async throws {
        let (wk, _) = try await seeded()
        let rc = MemoryBackend(id: "rc", capabilities: .rongCloud, clock: SystemClock())
        let report = try await Migrator(store: try store(), source: wk, target: rc, sendsPerSecond: 10_000).run(plan())
        let copied = try await targetMessages(rc)
        #expect(copied.count == 31)
        #expect(copied.map(\.content).prefix(4) == [.text("m1"), .text("m2 edited"), .text("m3"), .text("m4")])
        #expect(copied[2].isRecalled, "the recall travels as the target's recall")
        #expect(copied[30].expansion?.values == ["status": "paid"], "expansions travel as their current values")
        let senders = try await wk.history(HistoryQuery(conversation: g, anchor: .oldest, limit: 1000)).messages.map(\.sender)
        #expect(copied.map(\.sender) == senders, "users keep their ids by default")
        #expect(copied.allSatisfy { !$0.options.countUnread && !$0.options.push })
        #expect(copied[0].vendorExtras["imbridge_source_sent_at"] != nil && copied[0].sentAt > 0)
        #expect(report.total.sentTotal == 31 && report.total.failedTotal == 0)
        #expect(report.total.converted == 1, "the edited message is sent as its latest content")
    }

    /// A declared custom type the target's vendor has no form for is copied as its fallback text
    /// (mappings/custom/title_card.yaml has none for JMessage), with its current expansion.
    @Test func aDeclaredCustomTypeFallsBackOnAVendorWithoutIt() async throws {
        let wk = MemoryBackend(id: "wk", capabilities: .wukong, clock: SystemClock())
        let title = CustomContent(raw: "title_card", payload: #"{"subtitle":"World","title":"Hello"}"#)
        _ = try await wk.send(OutgoingMessage(conversation: g, sender: "u1", content: .custom(title)))
        let jm = MemoryBackend(id: "jm", capabilities: .jMessage, clock: SystemClock())
        jm.world.seedGroup(GroupProfile(id: GroupID(g.id), owner: "u1"))  // the plan names a JMessage group that exists
        let fallbacks = CustomTypeFallbacks(mappings: .shipped, vendors: ["wk": "wukong", "jm": "jmessage"])
        let report = try await Migrator(store: try store(), source: wk, target: jm, sendsPerSecond: 10_000, customFallbacks: fallbacks)
            .run(MigrationPlan(source: "wk", target: "jm", conversations: [(g, g)]))
        #expect(try await targetMessages(jm).map(\.content) == [.text("Hello — World")])
        #expect(report.total.fellBack == 1, "\(report.summary)")
    }

    @Test func aRerunWritesNothingTwice() async throws {
        let (wk, _) = try await seeded()
        let rc = MemoryBackend(id: "rc", capabilities: .rongCloud, clock: SystemClock())
        let store = try store()
        _ = try await Migrator(store: store, source: wk, target: rc, sendsPerSecond: 10_000).run(plan())
        _ = try await wk.send(OutgoingMessage(conversation: g, sender: "u1", content: .text("later")))
        let again = try await Migrator(store: store, source: wk, target: rc, sendsPerSecond: 10_000).run(plan())
        #expect(again.total.sentTotal == 1, "only the new message")
        #expect(try await targetMessages(rc).count == 32)
    }

    @Test func anInterruptionBetweenAcceptAndRecordIsHealedByTheRerun() async throws {
        let (wk, _) = try await seeded()
        let inner = MemoryBackend(id: "rc", capabilities: .rongCloud, clock: SystemClock())
        let lossy = LossyAckBackend(inner)
        lossy.acceptThenFail.withLock { $0 = 5 }
        let store = try store()
        let first = try await Migrator(store: store, source: wk, target: lossy, sendsPerSecond: 10_000).run(plan())
        #expect(first.total.failed == ["reset": 5])
        #expect(try await targetMessages(inner).count == 31, "the vendor kept the 5 it reported as failed")
        #expect(try store.read { try $0.deadLetters() }.count >= 5, "the failed copies are dead letters")
        // The rerun reads on after the checkpoint (all queued) and puts the dead entries back in their lane:
        // the same entries, so the same client ids, which the target finds.
        let second = try await Migrator(store: store, source: wk, target: lossy, sendsPerSecond: 10_000).run(plan())
        #expect(second.total.sentTotal == 5 && second.total.failedTotal == 0, "\(second.summary)")
        #expect(try await targetMessages(inner).count == 31, "found by client id, not sent again")
        #expect(try store.read { try $0.deadLetters() }.isEmpty && store.read { try $0.mappingCount() } == 31, "every copy mapped")
        #expect(try await targetMessages(inner)[2].isRecalled, "the recall that waited for its copy was carried out")
    }

    @Test func aThrottlingTargetSlowsTheRunWithoutLossOrDoubles() async throws {
        let (wk, sent) = try await seeded()
        let rcMemory = MemoryBackend(id: "rc", capabilities: .rongCloud, clock: SystemClock())
        let flaky = FlakyBackend(rcMemory)
        flaky.failing.withLock { $0[.group("g")] = 12 }
        let report = try await Migrator(store: try store(), source: wk, target: flaky, retry: RetryPolicy(baseMs: 1, maxMs: 5),
                                        sendsPerSecond: 10_000).run(plan())
        #expect(report.total.failedTotal == 0 && report.total.sentTotal == 31)
        let copied = try await targetMessages(rcMemory)
        #expect(copied.count == 31)
        #expect(copied.map { $0.vendorExtras["imbridge_source_id"] } == sent.map { .string($0.id.rawValue) })
    }

    @Test func aWindowedRunDoesNotHideTheMessagesOutsideItFromALaterRun() async throws {
        let clock = TestClock(startMs: 1_000_000)
        let wk = MemoryBackend(id: "wk", capabilities: .wukong, clock: clock)
        for n in 1...20 {
            clock.advance(bySeconds: 1)
            _ = try await wk.send(OutgoingMessage(conversation: g, sender: "u1", content: .text("m\(n)")))
        }
        let rc = MemoryBackend(id: "rc", capabilities: .rongCloud, clock: SystemClock())
        let store = try store()
        let recent = MigrationPlan(source: "wk", target: "rc", conversations: [(g, g)], sinceMs: 1_000_000 + 11_000, pageSize: 7)
        let first = try await Migrator(store: store, source: wk, target: rc, sendsPerSecond: 10_000).run(recent)
        #expect(first.total.sentTotal == 10 && first.total.skipped["before_since"] == 10, "\(first.summary)")
        let everything = try await Migrator(store: store, source: wk, target: rc, sendsPerSecond: 10_000).run(plan())
        #expect(everything.total.sentTotal == 10 && everything.total.skipped["already_copied"] == 10, "\(everything.summary)")
        #expect(try await targetMessages(rc).count == 20)
    }

    @Test func aDryRunWritesNothingAndSaysWhatItWouldDo() async throws {
        let (wk, _) = try await seeded()
        let nim = MemoryBackend(id: "nim", capabilities: .nim, clock: SystemClock())
        let store = try store()
        let report = try await Migrator(store: store, source: wk, target: nim, sendsPerSecond: 10_000)
            .run(MigrationPlan(source: "wk", target: "nim", conversations: [(g, g)], dryRun: true))
        #expect(try await targetMessages(nim).isEmpty)
        #expect(try store.read { try $0.mappingCount() } == 0)
        #expect(report.dryRun && report.total.sentTotal == 31)
        #expect(report.total.fellBack == 0, "NIM recalls natively and carries the order's expansion as data: \(report.summary)")
        #expect(report.summary.contains("dry run"))
    }

    /// A copy on NIM (no expansions; changes travel as `imbridge.expansion` carriers) is followed by a
    /// carrier of its source's current values, as the relay sends one, so a migrated order card ends in
    /// the same state as a relayed one; a rerun sends no second carrier.
    @Test func aCopyOnNIMIsFollowedByTheCarrierOfItsValues() async throws {
        let (wk, _) = try await seeded()
        let nim = MemoryBackend(id: "nim", capabilities: .nim, clock: SystemClock())
        nim.world.seedGroup(GroupProfile(id: GroupID(g.id), owner: "u0", members: ["u1", "u2", "shop"]))  // NIM: the team, its senders in it
        let store = try store()
        let plan = MigrationPlan(source: "wk", target: "nim", conversations: [(g, g)], pageSize: 7)
        let report = try await Migrator(store: store, source: wk, target: nim, sendsPerSecond: 10_000).run(plan)
        #expect(report.total.failedTotal == 0 && report.total.fellBack == 0, "\(report.summary)")
        let copied = try await targetMessages(nim)
        let order = try #require(copied.first { $0.currentContent == .text("order") })
        func carriers() async throws -> [Message] {
            try await targetMessages(nim).filter {
                if case .custom(let custom) = $0.currentContent { return custom.typeName == "imbridge.expansion" }
                return false
            }
        }
        let carried = try await carriers()
        #expect(carried.count == 1)
        let payload = try JSONValue.parse(try #require(carried.first.flatMap { message -> String? in
            if case .custom(let custom) = message.currentContent { return custom.payload }
            return nil
        }))
        #expect(payload["msgid"]?.stringValue == order.id.rawValue && payload["set"]?["status"]?.stringValue == "paid",
                "the carrier names the copy with the source's current values: \(payload.jsonString())")
        #expect(try #require(carried.first).sentAt >= order.sentAt)
        let again = try await Migrator(store: store, source: wk, target: nim, sendsPerSecond: 10_000).run(plan)
        #expect(again.total.sentTotal == 0, "\(again.summary)")
        #expect(try await carriers().count == 1)
    }
}
