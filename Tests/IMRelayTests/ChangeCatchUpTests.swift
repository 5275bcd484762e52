import Foundation
import IMAdapterKit
import IMBridgeApp
import IMCore
import IMStore
@testable import IMRelay
import IMTesting
import IMOutbox
import Testing
@testable import IMPositions
@_spi(Testing) @testable import IMCatchUp

/// The pieces of catch-up that keep positions honest (docs/architecture.md, "Catch-up" and "Catch-up of
/// changes"): the gate moves a `.sequence` position only along an unbroken run, feed positions are stored
/// forward only and refuse a read that began past them, `change_window` is bounded by `max_age`. End to
/// end: Tests/EndToEndTests/ChangesWhileDownTests.swift and RestartPositionsTests.swift.
@Suite struct ChangeCatchUpTests {
    /// A re-read of history takes a key as removed only when the store held it before the read began: a
    /// key the store learned while history was being read (its callback, another instance's read) is newer
    /// than the read, and a removal stamped past its version outranked the set for good (seed 300). A key
    /// held before the read that the read does not show is still a removal.
    @Test func aKeyLearnedWhileHistoryWasReadIsNotTakenAsRemovedByThatRead() async throws {
        let h = try RelayHarness()
        let source = WindowHistorySource(MemoryBackend(id: "wk", capabilities: .rongCloud, clock: SystemClock()))
        let engine = RelayEngine(store: h.store, backends: [source, h.rc], routes: h.routes, retry: RetryPolicy(baseMs: 5, maxMs: 50))
        let runner = CatchUpRunner(engine: engine, backends: [source, h.rc], routes: h.routes,
                                   settings: CatchUpSettings(maxAgeMs: 3_600_000, maxMessagesPerConversation: 100, intervalMs: 600_000))
        let id = MessageID("m1"), key = CatchUpGate.Key(backend: "wk", conversation: .group("g"))
        func put(_ name: String, _ value: String, at version: Int64) throws {
            try h.store.transaction { tx in
                try tx.putExpansionKeys([ExpansionKeyRecord(key: name, value: value, version: version, origin: "wk", held: .known(value), heldAt: version)],
                                        of: id, on: "wk")
            }
        }
        try put("note", "v6", at: 101)
        let before = try h.store.read { ["m1": try $0.expansionKeys(of: id, on: "wk")] as [MessageID: [String: ExpansionKeyRecord]] }
        try put("st", "v9", at: 205)
        // The read, made before `st` was set, shows `note` alone.
        var message = Message(id: id, conversation: .group("g"), sender: "ann", sentAt: 100, content: .text("x"))
        message.expansion = Expansion(entries: ["note": ExpansionEntry(value: "v6", version: 101)])
        let stale = try await runner.expansionChanges([message], key, source: source, keysBeforeRead: before)
        #expect(stale.isEmpty, "a key learned during the read is not removed by it: \(stale.map(\.eventID))")

        let held = try h.store.read { ["m1": try $0.expansionKeys(of: id, on: "wk")] as [MessageID: [String: ExpansionKeyRecord]] }
        let later = try await runner.expansionChanges([message], key, source: source, keysBeforeRead: held)
        guard case .expansionChanged(_, _, _, let delta)? = later.first?.kind else {
            Issue.record("a key held before the read and not shown by it is a removal: \(later)")
            return
        }
        #expect(delta.removed == ["st"] && delta.set.isEmpty && delta.version > 205)
    }

    @Test func aRecordedMessagePastThePositionDoesNotMoveIt() {
        let gate = CatchUpGate()
        gate.watch("wk", signal: .sequence, starting: false)
        let key = CatchUpGate.Key(backend: "wk", conversation: .group("g1"))
        gate.recorded(gate.admit([CatchUpTests.message(1), CatchUpTests.message(2)]))
        #expect(gate.drainObserved()[key]?.last?.seq == 2)
        // A message 1,000 past: held (a gap), read from history, which does not have it, then recorded.
        #expect(gate.admit([CatchUpTests.message(1002)]).isEmpty)
        gate.begin(key)
        _ = gate.takeMissed(key)
        gate.caughtUp(key, seq: 2)
        let held = gate.finish(key, force: true) ?? []
        gate.recorded(held)
        #expect(gate.finish(key, force: true) == [], "nothing came while it was recorded: live again")
        #expect(gate.drainObserved()[key]?.last == nil, "the position stays where history confirmed it")
        #expect(CatchUpTests.seqs(gate.admit([CatchUpTests.message(3)])) == [3], "the real next message is no gap")
        gate.recorded([CatchUpTests.message(3)])
        #expect(gate.drainObserved()[key]?.last?.seq == 3)
        #expect(gate.admit([CatchUpTests.message(5)]).isEmpty, "a real gap after it still shows")
    }

    @Test func feedPositionsMoveForwardOnlyAndRefuseAReadThatSkippedSome() throws {
        let store = try BridgeStore(path: FileManager.default.temporaryDirectory.appendingPathComponent("feed-\(UUID().uuidString).sqlite").path)
        func position(from: Int64?, to: Int64) -> FeedPosition {
            FeedPosition(backend: "wk", conversation: .group("g1"), feed: "extras", from: from, to: to)
        }
        let name = position(from: nil, to: 0).checkpointName
        #expect(name == "feed/wk/extras/group:g1")
        func stored() throws -> String? { try store.read { try $0.checkpoint(name) } }
        try store.transaction { try FeedPositions.store([position(from: nil, to: 5)], $0, at: 1) }
        #expect(try stored() == "5")
        try store.transaction { try FeedPositions.store([position(from: 5, to: 9), position(from: 9, to: 12)], $0, at: 2) }
        #expect(try stored() == "12", "positions of one batch apply in order")
        try store.transaction { try FeedPositions.store([position(from: nil, to: 7)], $0, at: 3) }
        #expect(try stored() == "12", "never moved back")
        #expect(throws: FeedPositions.Behind.self, "a read that began at 20 skipped 13…20, which were never recorded") {
            try store.transaction { try FeedPositions.store([position(from: 20, to: 25)], $0, at: 4) }
        }
        #expect(try stored() == "12")
    }

    @Test func theChangeWindowIsBoundedByMaxAge() throws {
        #expect(try BridgeConfig.parse(CatchUpTests.config("")).catchUp.changeWindowMs == 6 * 3_600_000)
        #expect(try BridgeConfig.parse(CatchUpTests.config("catch_up:\n  change_window: 30m\n")).catchUp.changeWindowMs == 1_800_000)
        #expect(try BridgeConfig.parse(CatchUpTests.config("catch_up:\n  max_age: 1h\n")).catchUp.changeWindowMs == 3_600_000,
                "the default is cut to max_age")
        do {
            _ = try BridgeConfig.parse(CatchUpTests.config("catch_up:\n  max_age: 1h\n  change_window: 2h\n"))
            Issue.record("a change_window past max_age was accepted")
        } catch let error as IMError {
            #expect(error.message.contains("catch_up.change_window: must not exceed max_age"), "\(error.message)")
        }
    }

    /// A feed read from its start (nothing stored yet) keeps no edit or reaction older than `retention`:
    /// its ledger row may be pruned, and it would be relayed again as new.
    @Test func aFeedReadFromItsStartLeavesOutEditsOlderThanRetention() {
        let group = ConversationRef.group("g1"), other = ConversationRef.group("g2")
        func edit(_ id: String, at: Int64, in conversation: ConversationRef = .group("g1")) -> IMEvent {
            IMEvent(eventID: EventID("edit:\(id)"), backend: "wk",
                    kind: .edited(messageID: MessageID(id), conversation: conversation, by: "ann", content: .text(id), at: at))
        }
        let recall = IMEvent(eventID: "recall:r", backend: "wk", kind: .recalled(messageID: "r", conversation: group, by: "ann", at: 0))
        let events = [edit("old", at: 1_000), edit("new", at: 95_000), recall, edit("elsewhere", at: 1_000, in: other)]
        let fromStart = [FeedPosition(backend: "wk", conversation: group, feed: "extras", from: nil, to: 9)]
        let kept = FeedPositions.withoutStale(events, positions: fromStart, retentionMs: 10_000, now: 100_000).map(\.eventID)
        #expect(kept == ["edit:new", "recall:r", "edit:elsewhere"], "a change without a time stays; other conversations are untouched")
        let onward = [FeedPosition(backend: "wk", conversation: group, feed: "extras", from: 5, to: 9)]
        #expect(FeedPositions.withoutStale(events, positions: onward, retentionMs: 10_000, now: 100_000).count == 4,
                "read on from a stored position, everything is new")
        #expect(FeedPositions.withoutStale(events, positions: fromStart, retentionMs: nil, now: 100_000).count == 4, "a ledger kept for ever")
    }
}
