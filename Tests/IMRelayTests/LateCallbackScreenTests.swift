import Foundation
import IMAdapterKit
import IMCore
@_spi(Testing) @testable import IMRelay
import IMStore
import IMTesting
import Synchronization
import Testing
import IMOutbox
@_spi(Testing) @testable import IMCatchUp
import IMPositions
import IMMigration

/// A memory source positioned by time (no sequence gaps, as NIM) whose history can leave messages out —
/// one recalled (gone for good), one not listed yet when catch-up reads — and that looks a message up
/// again as NIM's adapter does (`showsInHistory`), counting the lookups.
final class WindowHistorySource: ChangeWindowSource {
    let inner: MemoryBackend
    let hidden = Mutex<Set<MessageID>>([])
    /// Messages the vendor's history no longer lists but this adapter shows recalled in place (as NIM's
    /// adapter shows the messages it saw recalled): `isLocalTombstone`.
    let tombstoned = Mutex<Set<MessageID>>([])
    let lookups = Mutex(0)
    /// Runs once, after the next history page is read and before it is returned (a change landing
    /// between a reader's read and its use of the page).
    let afterNextRead = Mutex<(@Sendable () async throws -> Void)?>(nil)
    init(_ inner: MemoryBackend) { self.inner = inner }
    var id: BackendID { inner.id }
    var capabilities: Capabilities { inner.capabilities }
    var gapSignal: CatchUpGapSignal { .none }
    func events() -> AsyncStream<IMEvent> { inner.events() }
    func send(_ message: OutgoingMessage) async throws -> Message { try await inner.send(message) }
    func cursor(for message: Message) throws -> HistoryCursor { try inner.cursor(for: message) }
    func history(_ query: HistoryQuery) async throws -> HistoryPage {
        var page = try await inner.history(query)
        let hide = hidden.withLock { $0 }
        page.messages.removeAll { hide.contains($0.id) }
        let tombstones = tombstoned.withLock { $0 }
        for index in page.messages.indices where tombstones.contains(page.messages[index].id) {
            page.messages[index].recall = RecallState(by: page.messages[index].sender, at: page.messages[index].sentAt + 1)
        }
        if let hook = afterNextRead.withLock({ hook in defer { hook = nil }; return hook }) { try await hook() }
        return page
    }
    func catchUpEvent(for message: Message) -> IMEvent? {
        IMEvent(eventID: EventID("msg:\(message.id)"), backend: id, kind: .message(message))
    }
    func catchUpConversations(of user: UserID) async throws -> [ConversationRef] { [] }
    func recentMessages(of conversation: ConversationRef, sentSince: Int64, viewer: UserID?) async throws -> [Message] { [] }
    func recallEvent(for message: Message) -> IMEvent? {
        guard let recall = message.recall else { return nil }
        return IMEvent(eventID: EventID("recall:\(message.id)"), backend: id,
                       kind: .recalled(messageID: message.id, conversation: message.conversation, by: recall.by, at: recall.at))
    }
    func absenceEvent(of message: MessageID, in conversation: ConversationRef, at: Int64, by sender: UserID?) -> IMEvent? {
        guard let sender else { return nil }
        return IMEvent(eventID: EventID("recall:\(message)"), backend: id,
                       kind: .recalled(messageID: message, conversation: conversation, by: sender, at: at))
    }
    func isLocalTombstone(_ message: Message) -> Bool { message.recall != nil && tombstoned.withLock { $0.contains(message.id) } }
    func showsInHistory(_ message: Message) async throws -> Bool? {
        lookups.withLock { $0 += 1 }
        return try await history(HistoryQuery(conversation: message.conversation, anchor: .latest, limit: 100)).messages
            .contains { $0.id == message.id && $0.recall == nil }
    }
}

extension WindowHistorySource {
    /// Sends `text` to group `g` as ann and returns it as history lists it, each message in a millisecond
    /// of its own (positions compare send times).
    func sendText(_ text: String) async throws -> Message {
        _ = try await send(OutgoingMessage(conversation: .group("g"), sender: "ann", content: .text(text)))
        try await Task.sleep(nanoseconds: 5_000_000)
        return try #require(try await inner.history(HistoryQuery(conversation: .group("g"), anchor: .latest, limit: 1)).messages.last)
    }
}

/// One bridge with catch-up on a real SQLite store, reading a `WindowHistorySource`: its first catch-up
/// pass done and a first message ("first") relayed to RongCloud's group `g`.
struct CatchingUpBridge {
    let h: RelayHarness
    let source: WindowHistorySource
    let bridge: RelayEngine
    let runner: CatchUpRunner

    static func start() async throws -> CatchingUpBridge {
        let h = try RelayHarness()
        let source = WindowHistorySource(MemoryBackend(id: "wk", capabilities: .wukong, clock: SystemClock()))
        let bridge = RelayEngine(store: h.store, backends: [source, h.rc], routes: h.routes, retry: RetryPolicy(baseMs: 5, maxMs: 50))
        let runner = CatchUpRunner(engine: bridge, backends: [source, h.rc], routes: h.routes,
                                   settings: CatchUpSettings(maxAgeMs: 3_600_000, maxMessagesPerConversation: 1000, intervalMs: 600_000))
        await bridge.start()
        try await runner.start()
        #expect(await eventually { await runner.finishedPasses >= 1 })
        let first = try await source.sendText("first")
        try await bridge.accept([try #require(source.catchUpEvent(for: first))])
        #expect(try await eventually { try await h.relayedTexts() == ["first"] })
        return CatchingUpBridge(h: h, source: source, bridge: bridge, runner: runner)
    }
}

extension RelayHarness {
    /// The texts RongCloud's group `g` shows, in order.
    func relayedTexts() async throws -> [String] {
        try await history(rc, "g").compactMap { if case .text(let t) = $0.content { t.text } else { nil } }
    }
}

/// Callbacks behind the catch-up position (docs/architecture.md, "Callbacks behind the catch-up
/// position"), in process over a real SQLite store.
@Suite(.serialized) struct LateCallbackScreenTests {
    /// A catch-up reads past two messages its source's history does not list, and their callbacks come
    /// afterwards: the one history lists by then (it was only late) is relayed, the one history dropped
    /// (recalled) is withheld — never shown behind the newer message — and its recall, when it comes, is a
    /// duplicate. Only those two callbacks cost a lookup; live callbacks ahead of the position cost none.
    @Test func aCallbackBehindTheCatchUpPositionIsRelayedOnlyWhileHistoryShowsIt() async throws {
        let rig = try await CatchingUpBridge.start()
        let (h, source, engine, runner) = (rig.h, rig.source, rig.bridge, rig.runner)
        func send(_ text: String) async throws -> Message { try await source.sendText(text) }
        func deliver(_ message: Message) async throws { try await engine.accept([try #require(source.catchUpEvent(for: message))]) }
        func relayed() async throws -> [String] { try await h.relayedTexts() }

        let late = try await send("late"), gone = try await send("gone")
        _ = try await send("after")
        source.hidden.withLock { $0 = [late.id, gone.id] }
        await runner.catchUp(CatchUpGate.Key(backend: "wk", conversation: .group("g")), reason: "interval")
        #expect(try await eventually { try await relayed() == ["first", "after"] })
        #expect(source.lookups.withLock { $0 } == 0, "a catch-up read looks nothing up")

        source.hidden.withLock { $0 = [gone.id] }   // late is listed now; gone stays dropped (recalled)
        try await deliver(late)
        try await deliver(gone)
        try await engine.accept([IMEvent(eventID: EventID("recall:\(gone.id)"), backend: "wk",
                                         kind: .recalled(messageID: gone.id, conversation: .group("g"), by: "ann", at: gone.sentAt + 1))])
        let newest = try await send("newest")
        try await deliver(newest)
        let expected = ["first", "after", "late", "newest"]
        let arrived = try await eventually { try await relayed() == expected }
        let got = try await relayed()
        #expect(arrived, "got \(got)")
        #expect(source.lookups.withLock { $0 } == 2, "only the two callbacks behind the position were looked up")
        let withheld = try h.store.read { try $0.hasEvent("wk", EventID("withheld:\(gone.id)")) }
        #expect(withheld)
        let dead = try h.store.read { try $0.deadLetters(limit: 5) }
        #expect(dead.isEmpty, "no dead letters: \(dead.map { $0.lastError ?? "" })")
        await runner.stop()
        await engine.stop()
    }

    /// `imbridge migrate` beside the bridge reads a conversation past a message its source's history no
    /// longer lists (recalled before the read), and copies the newer ones; that message's callback comes
    /// only afterwards. It is screened as one behind the catch-up position: withheld, never shown behind
    /// the copies the migration made (docs/architecture.md, "Callbacks behind the catch-up position").
    @Test func aCallbackBehindAMigrationsReadIsWithheldNotShownBehindItsCopies() async throws {
        let h = try RelayHarness()
        let source = WindowHistorySource(MemoryBackend(id: "wk", capabilities: .wukong, clock: SystemClock()))
        let bridge = RelayEngine(store: h.store, backends: [source, h.rc], routes: h.routes, retry: RetryPolicy(baseMs: 5, maxMs: 50))
        await bridge.start()
        func send(_ text: String) async throws -> Message { try await source.sendText(text) }
        func deliver(_ message: Message) async throws { try await bridge.accept([try #require(source.catchUpEvent(for: message))]) }
        func relayed() async throws -> [String] { try await h.relayedTexts() }

        let first = try await send("first")
        try await deliver(first)
        #expect(try await eventually { try await relayed() == ["first"] })
        let gone = try await send("gone")
        _ = try await send("after")
        _ = try await send("latest")
        source.hidden.withLock { $0 = [gone.id] }   // recalled before the migration reads, its callback not recorded yet
        let report = try await Migrator(store: h.store, source: source, target: h.rc, sendsPerSecond: 100_000, routes: h.routes)
            .run(MigrationPlan(source: "wk", target: "rc", conversations: [(.group("g"), .group("g"))], account: false))
        #expect(report.total.sentTotal == 2 && report.total.failedTotal == 0, "\(report.summary)")
        #expect(try await eventually { try await relayed() == ["first", "after", "latest"] })

        try await deliver(gone)
        let newest = try await send("newest")
        try await deliver(newest)
        let expected = ["first", "after", "latest", "newest"]
        let arrived = try await eventually { try await relayed() == expected }
        let got = try await relayed()
        #expect(arrived, "got \(got)")
        #expect(try h.store.read { try $0.hasEvent("wk", EventID("withheld:\(gone.id)")) })
        #expect(source.lookups.withLock { $0 } == 1, "only the callback behind the migration's read was looked up")
        // Its recall, when it comes, is a duplicate: nothing waits for a copy, nothing is a dead letter.
        try await bridge.accept([IMEvent(eventID: EventID("recall:\(gone.id)"), backend: "wk",
                                         kind: .recalled(messageID: gone.id, conversation: .group("g"), by: "ann", at: gone.sentAt + 1))])
        #expect(await bridge.waitUntilIdle(timeoutMs: 10_000))
        let dead = try h.store.read { try $0.deadLetters(limit: 5) }
        #expect(dead.isEmpty, "no dead letters: \(dead.map { $0.lastError ?? "" })")
        #expect(try await relayed() == expected)
        await bridge.stop()
    }

    /// With several instances on one store, one instance's catch-up reads past a message its source's
    /// history no longer lists (recalled before the read); that message's late callback reaches another
    /// instance, whose gate never saw the read. It is screened by the stored catch-up checkpoint: withheld,
    /// never shown behind the newer message the read relayed.
    @Test func aCallbackBehindAnotherInstancesCatchUpReadIsWithheld() async throws {
        let h = try RelayHarness()
        let source = WindowHistorySource(MemoryBackend(id: "wk", capabilities: .wukong, clock: SystemClock()))
        func instance() -> RelayEngine {
            RelayEngine(store: h.store, backends: [source, h.rc], routes: h.routes, retry: RetryPolicy(baseMs: 5, maxMs: 50))
        }
        let reader = instance()
        let runner = CatchUpRunner(engine: reader, backends: [source, h.rc], routes: h.routes,
                                   settings: CatchUpSettings(maxAgeMs: 3_600_000, maxMessagesPerConversation: 1000, intervalMs: 600_000))
        await reader.start()
        try await runner.start()
        #expect(await eventually { await runner.finishedPasses >= 1 })
        func send(_ text: String) async throws -> Message { try await source.sendText(text) }
        func relayed() async throws -> [String] { try await h.relayedTexts() }

        let first = try await send("first")
        try await reader.accept([try #require(source.catchUpEvent(for: first))])
        #expect(try await eventually { try await relayed() == ["first"] })
        let gone = try await send("gone")
        _ = try await send("after")
        source.hidden.withLock { $0 = [gone.id] }   // recalled before the read, its callback not recorded yet
        await runner.catchUp(CatchUpGate.Key(backend: "wk", conversation: .group("g")), reason: "interval")
        #expect(try await eventually { try await relayed() == ["first", "after"] })
        await runner.stop()
        await reader.stop()

        // The other instance: its gate knows no read of this conversation.
        let other = instance()
        await other.start()
        try await other.accept([try #require(source.catchUpEvent(for: gone))])
        let newest = try await send("newest")
        try await other.accept([try #require(source.catchUpEvent(for: newest))])
        let expected = ["first", "after", "newest"]
        let arrived = try await eventually { try await relayed() == expected }
        let got = try await relayed()
        #expect(arrived, "got \(got)")
        #expect(try h.store.read { try $0.hasEvent("wk", EventID("withheld:\(gone.id)")) })
        #expect(source.lookups.withLock { $0 } == 1, "only the callback behind the other instance's read was looked up")
        await other.stop()
    }

    /// The same, for a live message held while its conversation was caught up and recorded after the read
    /// (`CatchUpRunner.recordHeld`): a migration that read past it meanwhile has it withheld too.
    @Test func aHeldMessageBehindAMigrationsReadIsWithheld() async throws {
        let h = try RelayHarness()
        let source = WindowHistorySource(MemoryBackend(id: "wk", capabilities: .wukong, clock: SystemClock()))
        let bridge = RelayEngine(store: h.store, backends: [source, h.rc], routes: h.routes, retry: RetryPolicy(baseMs: 5, maxMs: 50))
        let runner = CatchUpRunner(engine: bridge, backends: [source, h.rc], routes: h.routes,
                                   settings: CatchUpSettings(maxAgeMs: 3_600_000, maxMessagesPerConversation: 1000, intervalMs: 600_000))
        await bridge.start()
        func send(_ text: String) async throws -> Message { try await source.sendText(text) }
        func relayed() async throws -> [String] { try await h.relayedTexts() }

        let first = try await send("first")
        try await bridge.accept([try #require(source.catchUpEvent(for: first))])
        #expect(try await eventually { try await relayed() == ["first"] })
        let gone = try await send("gone")
        _ = try await send("after")
        source.hidden.withLock { $0 = [gone.id] }
        let report = try await Migrator(store: h.store, source: source, target: h.rc, sendsPerSecond: 100_000, routes: h.routes)
            .run(MigrationPlan(source: "wk", target: "rc", conversations: [(.group("g"), .group("g"))], account: false))
        #expect(report.total.sentTotal == 1 && report.total.failedTotal == 0, "\(report.summary)")
        try await runner.recordHeld([try #require(source.catchUpEvent(for: gone))], release: nil)
        let newest = try await send("newest")
        try await bridge.accept([try #require(source.catchUpEvent(for: newest))])
        let expected = ["first", "after", "newest"]
        let arrived = try await eventually { try await relayed() == expected }
        let got = try await relayed()
        #expect(arrived, "got \(got)")
        #expect(try h.store.read { try $0.hasEvent("wk", EventID("withheld:\(gone.id)")) })
        await bridge.stop()
    }

    /// A migration reads a page holding a message that is recalled right after the read; before the page is
    /// queued, the bridge's catch-up reads past it (gone from history) and relays the newer message. The
    /// page is looked up again before it is queued: the recalled message is withheld, never copied behind
    /// the newer one (docs/migration.md, "Through the outbox").
    @Test func aMigrationsCopyOfAMessageRecalledAfterItsReadIsWithheldBehindACatchUpsRead() async throws {
        let run = try await migrationBesideACatchUpReadPast(recalled: true)
        #expect(run.relayed == ["first", "after", "newest"])
        #expect(run.skippedWithheld == 1, "\(run.summary)")
        #expect(run.withheldRow)
        #expect(run.lookups == 1, "only the recalled message was looked up again")
    }

    /// The same page, where the message was only not listed yet when the catch-up read: looked up again,
    /// still shown, so it is copied (late, not lost).
    @Test func aMigrationsCopyOfAMessageACatchUpMissedIsCopiedLateNotLost() async throws {
        let run = try await migrationBesideACatchUpReadPast(recalled: false)
        #expect(run.relayed == ["first", "after", "gone", "newest"])
        #expect(run.skippedWithheld == nil, "\(run.summary)")
        #expect(!run.withheldRow)
        #expect(run.lookups == 1)
    }

    struct MigrationBesideCatchUp {
        var relayed: [String]
        var skippedWithheld: Int?
        var summary: String
        var withheldRow: Bool
        var lookups: Int
    }

    /// first relayed; "gone" and "after" sent; a migration reads the group, and between its read and its
    /// queueing "gone" is hidden from history and the bridge's catch-up reads the group (hidden for good if
    /// `recalled`, else listed again afterwards); then "newest" comes live.
    func migrationBesideACatchUpReadPast(recalled: Bool) async throws -> MigrationBesideCatchUp {
        let rig = try await CatchingUpBridge.start()
        let (h, source, bridge, runner) = (rig.h, rig.source, rig.bridge, rig.runner)
        func send(_ text: String) async throws -> Message { try await source.sendText(text) }
        func relayed() async throws -> [String] { try await h.relayedTexts() }
        let gone = try await send("gone")
        _ = try await send("after")
        source.afterNextRead.withLock {
            $0 = { [source, runner] in
                source.hidden.withLock { $0 = [gone.id] }
                await runner.catchUp(CatchUpGate.Key(backend: "wk", conversation: .group("g")), reason: "interval")
                if !recalled { source.hidden.withLock { $0 = [] } }
            }
        }
        let report = try await Migrator(store: h.store, source: source, target: h.rc, sendsPerSecond: 100_000, routes: h.routes)
            .run(MigrationPlan(source: "wk", target: "rc", conversations: [(.group("g"), .group("g"))], account: false))
        #expect(report.total.failedTotal == 0, "\(report.summary)")
        let newest = try await send("newest")
        try await bridge.accept([try #require(source.catchUpEvent(for: newest))])
        let count = recalled ? 3 : 4
        _ = try await eventually { let got = try await relayed(); return got.count >= count && got.last == "newest" }
        #expect(await bridge.waitUntilIdle(timeoutMs: 10_000))
        let run = MigrationBesideCatchUp(relayed: try await relayed(), skippedWithheld: report.conversations.first?.counts.skipped["withheld"],
                                         summary: report.summary,
                                         withheldRow: try h.store.read { try $0.hasEvent("wk", EventID("withheld:\(gone.id)")) },
                                         lookups: source.lookups.withLock { $0 })
        await runner.stop()
        await bridge.stop()
        return run
    }

    /// Two instances save one conversation's catch-up checkpoint. One whose view is older (its read came
    /// before the other's, or it was paused) and that saves it again — here because a live message shows a
    /// new member to read history as — keeps the other's position: moved back, the intake's screen would
    /// let a late callback behind the other's read through, shown behind newer messages (chaos seed 4).
    @Test func aCheckpointIsNotMovedBackByAnInstanceWhoseViewIsOlder() async throws {
        let h = try RelayHarness()
        let source = WindowHistorySource(MemoryBackend(id: "wk", capabilities: .wukong, clock: SystemClock()))
        let key = CatchUpGate.Key(backend: "wk", conversation: .group("g"))
        let settings = CatchUpSettings(maxAgeMs: 3_600_000, maxMessagesPerConversation: 1000, intervalMs: 600_000)
        func instance() -> (RelayEngine, CatchUpRunner) {
            let engine = RelayEngine(store: h.store, backends: [source, h.rc], routes: h.routes, retry: RetryPolicy(baseMs: 5, maxMs: 50))
            return (engine, CatchUpRunner(engine: engine, backends: [source, h.rc], routes: h.routes, settings: settings))
        }
        func stored() throws -> CatchUpCheckpoint.Record? {
            try h.store.read { try $0.checkpoint(CatchUpCheckpoint.name(for: key)) }.flatMap(CatchUpCheckpoint.Record.init(stored:))
        }
        let (older, olderRunner) = instance()
        let (newer, newerRunner) = instance()
        await older.start()
        await newer.start()
        try await olderRunner.start()
        try await newerRunner.start()
        #expect(await eventually { await olderRunner.finishedPasses >= 1 })
        #expect(await eventually { await newerRunner.finishedPasses >= 1 })

        let first = try await source.sendText("first")
        await olderRunner.catchUp(key, reason: "interval")
        #expect(try stored()?.id == first.id.rawValue)
        _ = try await source.sendText("second")
        let third = try await source.sendText("third")
        await newerRunner.catchUp(key, reason: "interval")
        #expect(try stored()?.id == third.id.rawValue)

        // A live message from a member the older instance has not read as: its runner saves the checkpoint.
        _ = try await source.send(OutgoingMessage(conversation: .group("g"), sender: "bob", content: .text("from bob")))
        let bobs = try #require(try await source.inner.history(HistoryQuery(conversation: .group("g"), anchor: .latest, limit: 1)).messages.last)
        try await older.accept([try #require(source.catchUpEvent(for: bobs))])
        await olderRunner.flushObserved()
        let after = try #require(try stored())
        #expect(after.id == third.id.rawValue, "the position moved back to \(after.id ?? "none")")
        #expect(after.viewer == "bob")
        await olderRunner.stop()
        await newerRunner.stop()
        await older.stop()
        await newer.stop()
    }

    /// An adapter that shows a message its vendor's history dropped as a tombstone in place (NIM's, for a
    /// message it saw recalled): a catch-up read does not record it — relayed from the read, it would come
    /// behind the newer messages recorded before (chaos seed 52) — and its late callback is withheld.
    @Test func aCatchUpReadDoesNotRecordALocalTombstone() async throws {
        let rig = try await CatchingUpBridge.start()
        let (h, source, bridge, runner) = (rig.h, rig.source, rig.bridge, rig.runner)
        func send(_ text: String) async throws -> Message { try await source.sendText(text) }
        func relayed() async throws -> [String] { try await h.relayedTexts() }
        let gone = try await send("gone")
        let after = try await send("after")
        try await bridge.accept([try #require(source.catchUpEvent(for: after))])
        #expect(try await eventually { try await relayed() == ["first", "after"] })
        source.tombstoned.withLock { $0 = [gone.id] }   // recalled; the vendor dropped it, the adapter shows it
        await runner.catchUp(CatchUpGate.Key(backend: "wk", conversation: .group("g")), reason: "interval")
        #expect(try h.store.read { try !$0.hasEvent("wk", EventID("msg:\(gone.id)")) }, "the read recorded the tombstone")
        try await bridge.accept([try #require(source.catchUpEvent(for: gone))])
        let newest = try await send("newest")
        try await bridge.accept([try #require(source.catchUpEvent(for: newest))])
        let expected = ["first", "after", "newest"]
        let arrived = try await eventually { try await relayed() == expected }
        let got = try await relayed()
        #expect(arrived, "got \(got)")
        #expect(try h.store.read { try $0.hasEvent("wk", EventID("withheld:\(gone.id)")) })
        await runner.stop()
        await bridge.stop()
    }
}
