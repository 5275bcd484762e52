import Foundation
import IMCore

/// The store contract's operations: what each implementation (`SQLiteOperations`,
/// `PostgresOperations`) provides inside one transaction. The semantics are written once, on
/// `StoreTransaction`, and checked against both by the one store test suite (Tests/IMStoreTests).
package protocol StoreOperations {
    func recordEvent(_ backend: BackendID, _ eventID: EventID, kind: String, at now: Int64, origin: EventOrigin?) throws -> Bool
    func ledgerCount() throws -> Int
    func hasEvent(_ backend: BackendID, _ eventID: EventID) throws -> Bool
    func enqueue(lane: LaneKey, sourceBackend: BackendID, sourceEventID: EventID, kind: String, payload: Data, at now: Int64) throws -> Int64
    func dueLanes(at now: Int64, limit: Int, leaseOwner: String?) throws -> [OutboxEntry]
    func dueLaneKeys(at now: Int64, limit: Int, leaseOwner: String?) throws -> [LaneKey]
    func nextWakeUp() throws -> Int64?
    func nextWakeUp(after now: Int64) throws -> Int64?
    func head(of lane: LaneKey) throws -> OutboxEntry?
    func pendingEntries(of lane: LaneKey, limit: Int) throws -> [OutboxEntry]
    func entries(ids: [Int64]) throws -> [OutboxEntry]
    func claim(_ id: Int64) throws
    func claimHead(of lane: LaneKey, dueBy now: Int64, leaseOwner: String?) throws -> OutboxEntry?
    func complete(_ id: Int64, at now: Int64) throws
    func reschedule(_ id: Int64, at next: Int64, error: String) throws
    func markDead(_ id: Int64, error: String, at now: Int64) throws
    func deadLetters(limit: Int) throws -> [OutboxEntry]
    func retryDeadLetters(ids: [Int64]?) throws -> Int
    func count(state: OutboxEntry.State) throws -> Int
    func keepInbound(backend: BackendID, key: String, format: String, payload: Data, reason: String, at now: Int64) throws -> Bool
    func inboundDeadLetters(ids: [Int64]?, limit: Int) throws -> [InboundDeadLetter]
    func removeInboundDeadLetter(_ id: Int64) throws
    func failedInboundRetry(_ id: Int64, reason: String) throws
    func inboundDeadLetterCount() throws -> Int
    func laneDepths() throws -> [String: Int]
    func oldestPendingByTarget() throws -> [String: Int64]
    func laneSummaries(limit: Int) throws -> [LaneSummary]
    func recentDeadLetters(limit: Int) throws -> [OutboxEntry]
    func recentInboundDeadLetters(limit: Int) throws -> [InboundDeadLetter]
    func prune(before cutoff: Int64, limit: Int) throws -> StoreTransaction.Pruned
    func map(source: (BackendID, MessageID, ConversationRef), target: (BackendID, MessageID, ConversationRef), sentAt: Int64?, sender: UserID?, at now: Int64) throws
    func mapped(_ message: MessageID, from: BackendID, to: BackendID) throws -> MessageMapping?
    func isBridgeCreated(_ message: MessageID, on backend: BackendID) throws -> Bool
    func mappingCount() throws -> Int
    func sourceClockLead(of backend: BackendID, sample: Int) throws -> Int64?
    func relayedMessages(from backend: BackendID, in conversation: ConversationRef, sentSince: Int64, limit: Int) throws -> [RelayedMessage]
    func checkpoint(_ name: String) throws -> String?
    func setCheckpoint(_ name: String, _ value: String, at now: Int64) throws
    func checkpoints(prefix: String) throws -> [(name: String, value: String)]
    func takeLease(_ name: String, owner: String, ttlMs: Int64, now: Int64, token: Int64) throws -> Int64?
    func renewLeases(owner: String, ttlMs: Int64, now: Int64) throws -> [(name: String, token: Int64)]
    func holds(_ fence: LeaseFence) throws -> Bool
    func reschedule(_ id: Int64, at next: Int64, error: String, fence: LeaseFence) throws -> Bool
    func markDead(_ id: Int64, error: String, at now: Int64, fence: LeaseFence) throws -> Bool
    func releaseLease(_ name: String, owner: String) throws
    func leaseHolder(_ name: String, at now: Int64) throws -> String?
    func leaseOwners(_ names: [String]) throws -> [String: String]
    func foreignLeases(prefix: String, notOwnedBy owner: String, limit: Int) throws -> [String]
    func markLeases(_ names: [String], notOwnedBy owner: String) throws -> [String]
    func leaseToken(_ name: String, owner: String) throws -> Int64?
    func releaseLease(_ name: String, owner: String, token: Int64) throws -> Bool
    func dropAllLeases() throws -> Int
    func finish(_ id: Int64, lane: LaneKey, at now: Int64, mapping: StoreTransaction.Mapping?, claimNext: Bool,
                fence: LeaseFence) throws -> OutboxEntry?
    func recordEvents(_ events: [StoreTransaction.InboundEvent], at now: Int64, origin: EventOrigin?) throws -> [StoreTransaction.EventRecord]
    func lockExpansionKeys(of messages: [(MessageID, BackendID)]) throws
    func expansionKeys(of message: MessageID, on backend: BackendID) throws -> [String: ExpansionKeyRecord]
    func putExpansionKeys(_ records: [ExpansionKeyRecord], of message: MessageID, on backend: BackendID) throws
    func enqueueAll(_ entries: [StoreTransaction.NewEntry], at now: Int64) throws -> [Int64]
    func recordAttempt(_ attempt: AttemptRecord) throws
    func attempts(of outboxIDs: [Int64]) throws -> [AttemptRecord]
    func ledgerRecords(matching key: String, limit: Int) throws -> [LedgerRecord]
    func mappingRecords(of message: String) throws -> [MappingRecord]
    func mappingRecords(in conversation: ConversationRef, on backend: BackendID?, from: Int64, to: Int64, limit: Int) throws -> [MappingRecord]
    func tracedEntries(matching key: String, limit: Int) throws -> [TracedEntry]
    func tracedEntries(createdFrom from: Int64, to: Int64, limit: Int) throws -> [TracedEntry]
    func inboundDeadLetters(key: String) throws -> [InboundDeadLetter]
    func rememberCallback(_ mark: CallbackMark, at now: Int64) throws -> CallbackMark.Outcome
    func forgetCallbackMarks(expiredBefore now: Int64, limit: Int) throws -> Int
}

extension StoreOperations {
    /// `StoreTransaction.recordEvents` one event at a time: the ledger insert, then the id-map echo check.
    package func recordEvents(_ events: [StoreTransaction.InboundEvent], at now: Int64, origin: EventOrigin?) throws
        -> [StoreTransaction.EventRecord] {
        try events.map { event in
            guard try recordEvent(event.backend, event.eventID, kind: event.kind, at: now, origin: origin) else { return .duplicate }
            guard let message = event.message else { return .new }
            return try isBridgeCreated(message, on: event.backend) ? .echo : .new
        }
    }

    /// `StoreTransaction.enqueueAll` one entry at a time.
    package func enqueueAll(_ entries: [StoreTransaction.NewEntry], at now: Int64) throws -> [Int64] {
        try entries.map { try enqueue(lane: $0.lane, sourceBackend: $0.sourceBackend, sourceEventID: $0.sourceEventID, kind: $0.kind,
                                      payload: $0.payload, at: now) }
    }

    /// `StoreTransaction.finish` as the separate operations it stands for (SQLite: each is a call into
    /// the library, no round trip to save).
    package func finish(_ id: Int64, lane: LaneKey, at now: Int64, mapping: StoreTransaction.Mapping?, claimNext: Bool,
                fence: LeaseFence) throws -> OutboxEntry? {
        guard try holds(fence) else { throw StoreTransaction.LeaseLost(fence: fence) }
        if let mapping { try map(source: mapping.source, target: mapping.target, sentAt: mapping.sentAt, sender: mapping.sender, at: now) }
        try complete(id, at: now)
        let next = claimNext ? try claimHead(of: lane, dueBy: now, leaseOwner: fence.owner) : nil
        if next == nil { try releaseLease(lane.leaseName, owner: fence.owner) }
        return next
    }

    package func reschedule(_ id: Int64, at next: Int64, error: String, fence: LeaseFence) throws -> Bool {
        guard try holds(fence) else { return false }
        try reschedule(id, at: next, error: error)
        return true
    }

    package func markDead(_ id: Int64, error: String, at now: Int64, fence: LeaseFence) throws -> Bool {
        guard try holds(fence) else { return false }
        try markDead(id, error: error, at: now)
        return true
    }
}
