import Foundation
import IMAdapterKit
import IMCore
import IMHTTP
import IMSandbox
import Testing
import WuKong
import WuKongSandbox

/// The business server's extras as a change feed (docs/adapters/wukong.md, "Changes while the bridge is
/// down"): with stored positions a fresh backend (a restarted bridge) reads on from them, never from 0
/// again; without, positions stay in memory and no batch carries any.
@Suite struct WuKongChangeFeedTests {
    static func edits(_ batch: InboundBatch) -> [MessageContent] {
        batch.events.compactMap { if case .edited(_, _, _, let content, _) = $0.kind { content } else { nil } }
    }

    @Test func aRestartedBackendReadsOnFromTheStoredPosition() async throws {
        let rig = try await WuKongRig.start()
        defer { Task { await rig.stop() } }
        func backend() -> WuKongBackend {
            WuKongBackend(id: "wk", settings: .at(rig.sandbox.baseURL, managerToken: "mgr", webhookSecret: "hook-secret"))
        }
        let dm = ConversationRef.direct("f1", "f2")
        let sent = try await rig.backend.send(OutgoingMessage(conversation: dm, sender: "f1", content: .text("hello")))
        try await rig.backend.edit(sent.id, in: dm, by: "f1", content: .text("v1"))

        let storage = InMemoryCheckpointStorage()
        let first = backend()
        await first.useStoredPositions(storage)
        let read = try await first.readChanges(of: dm)
        #expect(Self.edits(read) == [.text("v1")])
        let extras = try #require(read.positions.first { $0.feed == "extras" })
        #expect(extras.from == nil && extras.to > 0, "nothing was stored: read from the start, up to the newest version")
        try await storage.setCheckpoint(named: extras.checkpointName, to: String(extras.to))   // as the sink stores it

        let restarted = backend()
        await restarted.useStoredPositions(storage)
        let again = try await restarted.readChanges(of: dm)
        #expect(again.events.isEmpty && again.positions.isEmpty, "what was recorded is not read again: \(again.events.map(\.eventID))")
        try await rig.backend.edit(sent.id, in: dm, by: "f1", content: .text("v2"))
        let next = try await restarted.readChanges(of: dm)
        #expect(Self.edits(next) == [.text("v2")])
        #expect(next.positions.first { $0.feed == "extras" }?.from == extras.to)

        let inMemory = backend()
        let plain = try await inMemory.readChanges(of: dm)
        #expect(Self.edits(plain) == [.text("v2")] && plain.positions.isEmpty, "without stored positions nothing is positioned")
    }

    /// WuKongIM keeps a message's latest edit only: two edits before any read reach the feed as the last.
    /// `GET /_sandbox/extras-served` tells which edited contents a feed read (fewer than 10,000 rows) and a
    /// history page's full read (10,000) served — the campaign's checker excuses an edit no feed read served.
    @Test func editsOverwrittenBeforeAnyReadAreNeverServed() async throws {
        // No webhook: nothing reads the feed between the two edits.
        let clock = SandboxClock()
        let sandbox = SandboxServer(vendor: try WuKongSandbox(configuration: .init(managerToken: "mgr", callbackURL: nil), clock: clock), clock: clock)
        try await sandbox.start()
        defer { Task { await sandbox.stop() } }
        let reader = WuKongBackend(id: "wk", settings: .at(sandbox.baseURL, managerToken: "mgr", webhookSecret: "hook-secret"))
        let dm = ConversationRef.direct("f1", "f2")
        let sent = try await reader.send(OutgoingMessage(conversation: dm, sender: "f1", content: .text("hello")))
        try await reader.edit(sent.id, in: dm, by: "f1", content: .text("v1"))
        try await reader.edit(sent.id, in: dm, by: "f1", content: .text("v2"))
        #expect(Self.edits(try await reader.readChanges(of: dm)) == [.text("v2")])
        _ = try await reader.history(HistoryQuery(conversation: dm))
        let answer = try await HTTPClientWrapper().send(OutboundRequest(method: "GET", url: sandbox.baseURL + "/_sandbox/extras-served"))
        let served = try JSONValue.parse(Data(answer.body))["served"]?.arrayValue ?? []
        let rows = Set(served.compactMap { row in
            row["text"]?.stringValue.flatMap { text in row["limit"]?.int64Value.map { "\(text)@\($0)" } }
        })
        #expect(served.allSatisfy { $0["message_id"]?.stringValue == sent.id.rawValue })
        #expect(rows == ["v2@1000", "v2@10000"], "served: \(served)")
    }
    /// An instance whose memory of a feed fell behind the store (another instance recorded further) reads
    /// from the stored position and hands its last read's edits on once more (the ledger drops them as
    /// recorded). A read from there that finds no newer row must leave the memory standing at the stored
    /// position: left empty, every later read took it for an unrecorded one and handed the same edit on
    /// again, every catch-up interval — until the edit's ledger row was pruned and it was relayed a second
    /// time (seed 808, docs/reliability.md).
    @Test func aReadThatFindsNothingNewStandsWhereTheStoreDoes() async throws {
        let rig = try await WuKongRig.start()
        defer { Task { await rig.stop() } }
        let storage = InMemoryCheckpointStorage()
        func backend() async -> WuKongBackend {
            let instance = WuKongBackend(id: "wk", settings: .at(rig.sandbox.baseURL, managerToken: "mgr", webhookSecret: "hook-secret"))
            await instance.useStoredPositions(storage)
            return instance
        }
        func readAndRecord(_ instance: WuKongBackend, _ conversation: ConversationRef) async throws -> InboundBatch {
            let batch = try await instance.readChanges(of: conversation)
            for position in batch.positions { try await storage.setCheckpoint(named: position.checkpointName, to: String(position.to)) }
            return batch
        }
        let dm = ConversationRef.direct("f1", "f2")
        let sent = try await rig.backend.send(OutgoingMessage(conversation: dm, sender: "f1", content: .text("hello")))
        try await rig.backend.edit(sent.id, in: dm, by: "f1", content: .text("v1"))
        let first = await backend(), second = await backend()
        #expect(Self.edits(try await readAndRecord(first, dm)) == [.text("v1")])
        // The other instance records a newer row: the first one's memory is behind the store now.
        try await rig.backend.edit(sent.id, in: dm, by: "f1", content: .text("v2"))
        #expect(Self.edits(try await readAndRecord(second, dm)) == [.text("v2")])
        let behind = try await readAndRecord(first, dm)
        #expect(Self.edits(behind) == [.text("v1")], "the last read's edit is handed on once, from the stored position: \(behind.events.map(\.eventID))")
        for read in 1...3 {
            let quiet = try await readAndRecord(first, dm)
            #expect(quiet.events.isEmpty, "read \(read) after it hands nothing on again: \(quiet.events.map(\.eventID))")
        }
    }

    /// Two instances on one store (docs/high-availability.md): one read a message's first values, the other
    /// read and recorded a key added to them, then the key was removed. The first instance's memory of the
    /// message is the values before the addition — the same as after the removal — so compared with it the
    /// removal was no change at all, and its read moved the stored position past it (seed 107,
    /// docs/reliability.md). A memory that does not stand where the store does is dropped: the read starts
    /// from the stored position and gives the message's whole state.
    @Test func aRemovalReadAfterAnotherInstanceRecordedTheAdditionIsNotLost() async throws {
        let rig = try await WuKongRig.start()
        defer { Task { await rig.stop() } }
        func backend() async -> WuKongBackend {
            let instance = WuKongBackend(id: "wk", settings: .at(rig.sandbox.baseURL, managerToken: "mgr", webhookSecret: "hook-secret"))
            await instance.useStoredPositions(storage)
            return instance
        }
        let storage = InMemoryCheckpointStorage()
        /// Reads as an instance does, and records the read's positions as the sink does.
        func readAndRecord(_ instance: WuKongBackend, _ conversation: ConversationRef) async throws -> InboundBatch {
            let batch = try await instance.readChanges(of: conversation)
            for position in batch.positions { try await storage.setCheckpoint(named: position.checkpointName, to: String(position.to)) }
            return batch
        }
        func expansions(_ batch: InboundBatch) -> [ExpansionDelta] {
            batch.events.compactMap { if case .expansionChanged(_, _, _, let delta) = $0.kind { delta } else { nil } }
        }
        let dm = ConversationRef.direct("f1", "f2")
        let sent = try await rig.backend.send(OutgoingMessage(conversation: dm, sender: "f1", content: .text("order"), expansion: ["n": "1"]))
        let first = await backend(), second = await backend()
        _ = try await readAndRecord(first, dm)
        let updating = try #require(rig.backend as (any ExpansionUpdating)?)
        _ = try await updating.updateExpansion(of: sent.id, in: dm, by: "f2", .set(["pri": "high"]))
        let added = try await readAndRecord(second, dm)
        #expect(expansions(added).contains { $0.set["pri"] == "high" }, "the other instance read the addition: \(added.events.map(\.eventID))")
        _ = try await updating.updateExpansion(of: sent.id, in: dm, by: "f2", .remove(["pri"]))

        let removal = try await readAndRecord(first, dm)
        let deltas = expansions(removal)
        #expect(deltas.contains { $0.removed.contains("pri") || ($0.cleared && $0.set["pri"] == nil) },
                "the removal reaches the first instance's read: \(deltas)")
        let stored = try await storage.checkpoint(named: FeedPosition.checkpointName(backend: "wk", conversation: dm, feed: "extras"))
        #expect(removal.positions.first { $0.feed == "extras" }.map { String($0.to) } == stored)
    }

    /// A sync read taken before this backend's own `extra` write landed, and taken in after it (its answer
    /// slow), restates the values the write replaced: stamped when it was taken in, it would win over them
    /// (Finding 34, docs/reliability.md). Its row is older than the one the write was made over, so it is
    /// read as the written dictionary: the read says the message holds the written value.
    @Test func aReadTakenBeforeTheBackendsOwnWriteDoesNotRestateWhatTheWriteReplaced() async throws {
        // No webhook: no sync CMD sets off a read of its own between the test's.
        let clock = SandboxClock()
        let sandbox = SandboxServer(vendor: try WuKongSandbox(configuration: .init(managerToken: "mgr", callbackURL: nil), clock: clock), clock: clock)
        try await sandbox.start()
        defer { Task { await sandbox.stop() } }
        let backend = WuKongBackend(id: "wk", settings: .at(sandbox.baseURL, managerToken: "mgr", webhookSecret: "hook-secret"))
        func expansions(_ batch: InboundBatch) -> [ExpansionDelta] {
            batch.events.compactMap { if case .expansionChanged(_, _, _, let delta) = $0.kind { delta } else { nil } }
        }
        let dm = ConversationRef.direct("f1", "f2")
        let sent = try await backend.send(OutgoingMessage(conversation: dm, sender: "f1", content: .text("order"), expansion: ["status": "new"]))
        // As after a restart: no memory of the message's row, so the next read gives its whole state.
        await backend.forgetPositions()
        // The read's answer is held while the write lands: 6 s, so that the write lands inside the hold on a
        // busy machine too (at 1.5 s the answer once came first, and rightly showed the value before the write).
        sandbox.faults.add(FaultInjector.Rule(status: 0, count: 1, pathPrefix: "/v1/message/extra/sync", holdMs: 6_000))
        let slow = Task { try await backend.readChanges(of: dm) }
        var waited = 0
        while !sandbox.faults.pendingRules.isEmpty && waited < 1_000 {
            try await Task.sleep(nanoseconds: 10_000_000)
            waited += 1
        }
        #expect(sandbox.faults.pendingRules.isEmpty, "the read was taken")
        let updating = try #require(backend as (any ExpansionUpdating)?)
        _ = try await updating.updateExpansion(of: sent.id, in: dm, by: "f2", .set(["status": "paid"]))
        let deltas = expansions(try await slow.value)
        #expect(!deltas.contains { $0.set["status"] == "new" }, "the read taken before the write does not restate the old value: \(deltas)")
        #expect(deltas.allSatisfy { $0.set["status"] == "paid" || !$0.cleared }, "as a whole state it holds the written value: \(deltas)")
        // The write's own row ends what was kept of it: a change made after it is read as it is.
        _ = try await updating.updateExpansion(of: sent.id, in: dm, by: "f2", .remove(["status"]))
        let after = expansions(try await backend.readChanges(of: dm))
        #expect(after.contains { $0.removed.contains("status") || ($0.cleared && $0.set["status"] == nil) }, "the later removal is read: \(after)")
    }
}
