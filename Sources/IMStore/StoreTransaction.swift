import Foundation
import IMCore

/// A queue of work for one target: the target backend and the conversation there.
public struct LaneKey: Hashable, Sendable, Codable, CustomStringConvertible {
    public var backend: BackendID
    public var conversation: ConversationRef
    public init(backend: BackendID, conversation: ConversationRef) {
        self.backend = backend
        self.conversation = conversation
    }
    public var description: String { "\(backend)/\(conversation)" }
    init?(_ text: String) {
        guard let slash = text.firstIndex(of: "/"),
              let conversation = try? ConversationRef(parsing: String(text[text.index(after: slash)...])) else { return nil }
        self.init(backend: BackendID(String(text[..<slash])), conversation: conversation)
    }
    /// The name of the lane's lease (see `StoreTransaction.takeLease`).
    public var leaseName: String { "lane:\(description)" }
}

/// One tenure of a lease: `owner` holding `name` since it took it, told apart from its other tenures
/// and from everyone else's by `token` (drawn at random when the lease changes owner). Writes that only
/// the lease's holder may make check it (`StoreTransaction.holds`) — a fencing token.
public struct LeaseFence: Sendable, Hashable, CustomStringConvertible {
    public var name: String
    public var owner: String
    public var token: Int64
    public init(name: String, owner: String, token: Int64) {
        (self.name, self.owner, self.token) = (name, owner, token)
    }
    public var description: String { "\(name) held by \(owner)" }
}

/// One unit of outbound work.
public struct OutboxEntry: Sendable, Hashable {
    public enum State: String, Sendable { case pending, done, dead }
    public var id: Int64
    public var lane: LaneKey
    public var sourceBackend: BackendID
    public var sourceEventID: EventID
    public var kind: String
    public var payload: Data
    public var state: State
    public var attempts: Int
    public var nextAttemptAt: Int64
    public var lastError: String?
    public var createdAt: Int64
}

/// An inbound dead letter: a poison message (authenticated, but its content did not convert) kept with
/// its raw bytes and the reason, until an operator retries it (`imbridge deadletters retry`).
public struct InboundDeadLetter: Sendable, Hashable {
    public var id: Int64
    public var backend: BackendID
    /// Stable across redeliveries (the vendor's message id, or a hash of the bytes).
    public var key: String
    /// The adapter's name for what `payload` is (how to replay it).
    public var format: String
    public var payload: Data
    public var reason: String
    public var receivedAt: Int64
    /// Retries that did not convert it either.
    public var retries: Int
}

/// A lane with pending work, as the status page shows it: its depth and when its oldest pending entry
/// was queued.
public struct LaneSummary: Sendable, Hashable {
    public var lane: LaneKey
    public var depth: Int
    public var oldestCreatedAt: Int64
    public init(lane: LaneKey, depth: Int, oldestCreatedAt: Int64) {
        self.lane = lane
        self.depth = depth
        self.oldestCreatedAt = oldestCreatedAt
    }
}

/// A row of the message-id map: `from` on one backend corresponds to `to` on another.
/// `bridgeCreated` is true when the bridge wrote `to` (an echo of it must not be relayed).
public struct MessageMapping: Sendable, Hashable {
    public var fromBackend: BackendID
    public var fromMessage: MessageID
    public var toBackend: BackendID
    public var toMessage: MessageID
    public var toConversation: ConversationRef
    public var bridgeCreated: Bool
}

/// The store contract's operations: what each implementation (`SQLiteOperations`,
/// `PostgresOperations`) provides inside one transaction. The semantics are written once, on
/// `StoreTransaction`, and checked against both by the one store test suite (Tests/IMStoreTests).
protocol StoreOperations {
    func recordEvent(_ backend: BackendID, _ eventID: EventID, kind: String, at now: Int64) throws -> Bool
    func ledgerCount() throws -> Int
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
    func map(source: (BackendID, MessageID, ConversationRef), target: (BackendID, MessageID, ConversationRef), at now: Int64) throws
    func mapped(_ message: MessageID, from: BackendID, to: BackendID) throws -> MessageMapping?
    func isBridgeCreated(_ message: MessageID, on backend: BackendID) throws -> Bool
    func mappingCount() throws -> Int
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
    func recordEvents(_ events: [StoreTransaction.InboundEvent], at now: Int64) throws -> [StoreTransaction.EventRecord]
    func expansionKeys(of message: MessageID, on backend: BackendID) throws -> [String: ExpansionKeyRecord]
    func putExpansionKeys(_ records: [ExpansionKeyRecord], of message: MessageID, on backend: BackendID) throws
    func enqueueAll(_ entries: [StoreTransaction.NewEntry], at now: Int64) throws -> [Int64]
}

extension StoreOperations {
    /// `StoreTransaction.recordEvents` one event at a time: the ledger insert, then the id-map echo check.
    func recordEvents(_ events: [StoreTransaction.InboundEvent], at now: Int64) throws -> [StoreTransaction.EventRecord] {
        try events.map { event in
            guard try recordEvent(event.backend, event.eventID, kind: event.kind, at: now) else { return .duplicate }
            guard let message = event.message else { return .new }
            return try isBridgeCreated(message, on: event.backend) ? .echo : .new
        }
    }

    /// `StoreTransaction.enqueueAll` one entry at a time.
    func enqueueAll(_ entries: [StoreTransaction.NewEntry], at now: Int64) throws -> [Int64] {
        try entries.map { try enqueue(lane: $0.lane, sourceBackend: $0.sourceBackend, sourceEventID: $0.sourceEventID, kind: $0.kind,
                                      payload: $0.payload, at: now) }
    }

    /// `StoreTransaction.finish` as the separate operations it stands for (SQLite: each is a call into
    /// the library, no round trip to save).
    func finish(_ id: Int64, lane: LaneKey, at now: Int64, mapping: StoreTransaction.Mapping?, claimNext: Bool,
                fence: LeaseFence) throws -> OutboxEntry? {
        guard try holds(fence) else { throw StoreTransaction.LeaseLost(fence: fence) }
        if let mapping { try map(source: mapping.source, target: mapping.target, at: now) }
        try complete(id, at: now)
        let next = claimNext ? try claimHead(of: lane, dueBy: now, leaseOwner: fence.owner) : nil
        if next == nil { try releaseLease(lane.leaseName, owner: fence.owner) }
        return next
    }

    func reschedule(_ id: Int64, at next: Int64, error: String, fence: LeaseFence) throws -> Bool {
        guard try holds(fence) else { return false }
        try reschedule(id, at: next, error: error)
        return true
    }

    func markDead(_ id: Int64, error: String, at now: Int64, fence: LeaseFence) throws -> Bool {
        guard try holds(fence) else { return false }
        try markDead(id, error: error, at: now)
        return true
    }
}

/// Typed operations inside one store transaction (see `BridgeStore`), the same on every implementation.
public struct StoreTransaction {
    let ops: any StoreOperations

    init(_ ops: any StoreOperations) { self.ops = ops }

    // MARK: ledger

    /// Records an inbound event; false when (backend, eventID) was already recorded.
    public func recordEvent(_ backend: BackendID, _ eventID: EventID, kind: String, at now: Int64) throws -> Bool {
        try ops.recordEvent(backend, eventID, kind: kind, at: now)
    }

    /// An inbound event to record (`recordEvents`); `message` is checked against the id map for echoes.
    public struct InboundEvent: Sendable {
        public var backend: BackendID
        public var eventID: EventID
        public var kind: String
        public var message: MessageID?
        public init(backend: BackendID, eventID: EventID, kind: String, message: MessageID?) {
            (self.backend, self.eventID, self.kind, self.message) = (backend, eventID, kind, message)
        }
    }

    /// `recordEvent` (with `echoOf:` for events with a message) for a whole callback's events at once, in
    /// order; an event repeated within `events` is a duplicate from its second occurrence. On PostgreSQL
    /// one statement for all of them.
    public func recordEvents(_ events: [InboundEvent], at now: Int64) throws -> [EventRecord] {
        var seen = Set<String>(), firsts: [InboundEvent] = [], positions: [Int?] = []
        for event in events {
            if seen.insert("\(event.backend.rawValue)\u{1}\(event.eventID.rawValue)").inserted {
                positions.append(firsts.count)
                firsts.append(event)
            } else {
                positions.append(nil)
            }
        }
        let recorded = firsts.isEmpty ? [] : try ops.recordEvents(firsts, at: now)
        return positions.map { $0.map { recorded[$0] } ?? .duplicate }
    }

    /// An outbox entry to append (`enqueueAll`).
    public struct NewEntry: Sendable {
        public var lane: LaneKey
        public var sourceBackend: BackendID
        public var sourceEventID: EventID
        public var kind: String
        public var payload: Data
        public init(lane: LaneKey, sourceBackend: BackendID, sourceEventID: EventID, kind: String, payload: Data) {
            (self.lane, self.sourceBackend, self.sourceEventID, self.kind, self.payload) = (lane, sourceBackend, sourceEventID, kind, payload)
        }
    }

    /// `enqueue` for several entries, in order; returns their ids (growing). On PostgreSQL one statement.
    public func enqueueAll(_ entries: [NewEntry], at now: Int64) throws -> [Int64] {
        entries.isEmpty ? [] : try ops.enqueueAll(entries, at: now)
    }

    /// What recording an inbound message found.
    public enum EventRecord: Sendable, Equatable {
        /// (backend, eventID) was recorded before: a redelivery.
        case duplicate
        /// Recorded now; `message` is one the bridge wrote on that backend (`isBridgeCreated`).
        case echo
        /// Recorded now, and not the bridge's own.
        case new
    }

    /// `recordEvent`, and for a new event whether `message` is the bridge's own copy on `backend`
    /// (`recordEvents` for one event).
    public func recordEvent(_ backend: BackendID, _ eventID: EventID, kind: String, at now: Int64, echoOf message: MessageID) throws
        -> EventRecord {
        try recordEvents([InboundEvent(backend: backend, eventID: eventID, kind: kind, message: message)], at: now)[0]
    }

    /// How many events the ledger holds; for tests.
    @_spi(Testing) public func ledgerCount() throws -> Int { try ops.ledgerCount() }

    // MARK: outbox

    /// Appends an entry to its lane; returns its id. Ids grow and are never reused (client ids `imb-<id>`).
    @discardableResult
    public func enqueue(lane: LaneKey, sourceBackend: BackendID, sourceEventID: EventID, kind: String, payload: Data,
                        at now: Int64) throws -> Int64 {
        try ops.enqueue(lane: lane, sourceBackend: sourceBackend, sourceEventID: sourceEventID, kind: kind, payload: payload, at: now)
    }

    /// Lanes with pending work whose head is due at `now`, with their head entry, oldest first; at most
    /// `limit`. With `leaseOwner`, lanes whose lease another owner holds (unexpired at `now`) are left out.
    public func dueLanes(at now: Int64, limit: Int = 10_000, leaseOwner: String? = nil) throws -> [OutboxEntry] {
        try ops.dueLanes(at: now, limit: limit, leaseOwner: leaseOwner)
    }

    /// The lanes of `dueLanes`, without their heads (what the scheduler needs: no payload is read).
    public func dueLaneKeys(at now: Int64, limit: Int = 10_000, leaseOwner: String? = nil) throws -> [LaneKey] {
        try ops.dueLaneKeys(at: now, limit: limit, leaseOwner: leaseOwner)
    }

    /// The earliest time a waiting lane head becomes due (nil when nothing waits).
    public func nextWakeUp() throws -> Int64? { try ops.nextWakeUp() }

    /// The earliest time after `now` a lane head becomes due (nil when no head waits for a later time).
    /// Heads due already are not counted: the scheduler is woken when the lane running them finishes.
    public func nextWakeUp(after now: Int64) throws -> Int64? { try ops.nextWakeUp(after: now) }

    /// The first pending entry of a lane.
    public func head(of lane: LaneKey) throws -> OutboxEntry? { try ops.head(of: lane) }

    /// A lane's pending entries in lane order, at most `limit`.
    public func pendingEntries(of lane: LaneKey, limit: Int) throws -> [OutboxEntry] {
        try ops.pendingEntries(of: lane, limit: max(0, limit))
    }

    /// The entries with these ids, in any state, by id (ids not found are left out). A done entry's
    /// payload is empty (`complete` drops it).
    public func entries(ids: [Int64]) throws -> [OutboxEntry] { ids.isEmpty ? [] : try ops.entries(ids: ids) }

    /// Notes that an attempt is starting (before the call leaves the process), so that after a crash
    /// the entry is known to have possibly reached the target.
    public func claim(_ id: Int64) throws { try ops.claim(id) }

    /// The lane's head when it is due at `now`, claimed (`claim`) in this transaction; nil otherwise.
    /// The returned entry shows the attempts made before this claim. With `leaseOwner`, nothing is
    /// claimed unless that owner holds the lane's lease (`LaneKey.leaseName`) unexpired at `now`: an
    /// instance whose lease lapsed (and may have been taken over) cannot start another attempt.
    public func claimHead(of lane: LaneKey, dueBy now: Int64, leaseOwner: String? = nil) throws -> OutboxEntry? {
        try ops.claimHead(of: lane, dueBy: now, leaseOwner: leaseOwner)
    }

    public func complete(_ id: Int64, at now: Int64) throws { try ops.complete(id, at: now) }

    /// The two sides of an id-map row (`map`).
    public struct Mapping: Sendable {
        public var source: (BackendID, MessageID, ConversationRef)
        public var target: (BackendID, MessageID, ConversationRef)
        public init(source: (BackendID, MessageID, ConversationRef), target: (BackendID, MessageID, ConversationRef)) {
            self.source = source
            self.target = target
        }
    }

    /// What a lane does after a carried-out entry, at once: records `mapping` (a send's id-map row),
    /// completes entry `id`, and — when `claimNext` — claims the lane's next due head (`claimHead`, the
    /// lease unexpired); when nothing is claimed, releases the lane's lease. All of it fenced: when the
    /// tenure `fence` no longer holds the lane's lease (`holds`), nothing is written and `LeaseLost` is
    /// thrown. On PostgreSQL one statement (one round trip instead of five).
    public func finish(_ id: Int64, lane: LaneKey, at now: Int64, mapping: Mapping?, claimNext: Bool,
                       fence: LeaseFence) throws -> OutboxEntry? {
        try ops.finish(id, lane: lane, at: now, mapping: mapping, claimNext: claimNext, fence: fence)
    }

    /// `finish` for one step.
    public func finish(_ step: Finish) throws -> OutboxEntry? {
        try finish(step.id, lane: step.lane, at: step.now, mapping: step.mapping, claimNext: step.claimNext, fence: step.fence)
    }

    /// One lane's `finish`, as `BridgeStore.finish` submits it to the group commit (where PostgreSQL runs
    /// a batch's finishes in one statement).
    public struct Finish: Sendable {
        public var id: Int64
        public var lane: LaneKey
        public var now: Int64
        public var mapping: Mapping?
        public var claimNext: Bool
        public var fence: LeaseFence
        public init(_ id: Int64, lane: LaneKey, at now: Int64, mapping: Mapping?, claimNext: Bool, fence: LeaseFence) {
            (self.id, self.lane, self.now, self.mapping, self.claimNext, self.fence) = (id, lane, now, mapping, claimNext, fence)
        }
    }

    /// A fenced write found that its tenure no longer holds the lease (another owner took it over).
    public struct LeaseLost: Error, CustomStringConvertible {
        public var fence: LeaseFence
        public init(fence: LeaseFence) { self.fence = fence }
        public var description: String { "the lease \(fence.name) was taken over: this instance no longer works it" }
    }

    /// `reschedule`, only while `fence` holds its lease (`holds`); false (nothing written) otherwise.
    public func reschedule(_ id: Int64, at next: Int64, error: String, fence: LeaseFence) throws -> Bool {
        try ops.reschedule(id, at: next, error: error, fence: fence)
    }

    /// `markDead`, only while `fence` holds its lease (`holds`); false (nothing written) otherwise.
    public func markDead(_ id: Int64, error: String, at now: Int64, fence: LeaseFence) throws -> Bool {
        try ops.markDead(id, error: error, at: now, fence: fence)
    }

    public func reschedule(_ id: Int64, at next: Int64, error: String) throws { try ops.reschedule(id, at: next, error: error) }

    /// Moves an entry to the dead letters; its lane goes on with the next entry.
    public func markDead(_ id: Int64, error: String, at now: Int64) throws { try ops.markDead(id, error: error, at: now) }

    public func deadLetters(limit: Int = 1000) throws -> [OutboxEntry] { try ops.deadLetters(limit: limit) }

    /// Puts dead letters back in their lanes (all, or the given ids); returns how many.
    @discardableResult
    public func retryDeadLetters(ids: [Int64]? = nil) throws -> Int { try ops.retryDeadLetters(ids: ids) }

    public func count(state: OutboxEntry.State) throws -> Int { try ops.count(state: state) }

    // MARK: inbound dead letters (poison messages)

    /// Keeps a poison message; false when (backend, key) is kept already (a redelivery: nothing changes).
    @discardableResult
    public func keepInbound(backend: BackendID, key: String, format: String, payload: Data, reason: String, at now: Int64) throws -> Bool {
        try ops.keepInbound(backend: backend, key: key, format: format, payload: payload, reason: reason, at: now)
    }

    /// Inbound dead letters, oldest first (all, or the given ids).
    public func inboundDeadLetters(ids: [Int64]? = nil, limit: Int = 1000) throws -> [InboundDeadLetter] {
        try ops.inboundDeadLetters(ids: ids, limit: limit)
    }

    /// Forgets an inbound dead letter (its retry converted and was taken in the same transaction).
    public func removeInboundDeadLetter(_ id: Int64) throws { try ops.removeInboundDeadLetter(id) }

    /// Notes a retry that still did not convert: the new reason, one more retry.
    public func failedInboundRetry(_ id: Int64, reason: String) throws { try ops.failedInboundRetry(id, reason: reason) }

    public func inboundDeadLetterCount() throws -> Int { try ops.inboundDeadLetterCount() }

    /// Pending entries per lane.
    public func laneDepths() throws -> [String: Int] { try ops.laneDepths() }

    /// The `created_at` of the oldest pending outbox entry for each target backend that has any
    /// (`/healthz` shows its age).
    public func oldestPendingByTarget() throws -> [BackendID: Int64] {
        Dictionary(uniqueKeysWithValues: try ops.oldestPendingByTarget().map { (BackendID($0.key), $0.value) })
    }

    /// Up to `limit` lanes with pending work, the one whose oldest pending entry is oldest first (then
    /// the deeper one): the lanes an operator looks at first. Cost: one grouped scan of the pending entries.
    public func laneSummaries(limit: Int) throws -> [LaneSummary] { try ops.laneSummaries(limit: max(0, limit)) }

    /// The `limit` newest outbound dead letters, newest first (`deadLetters` lists oldest first).
    public func recentDeadLetters(limit: Int) throws -> [OutboxEntry] { try ops.recentDeadLetters(limit: max(0, limit)) }

    /// The `limit` newest inbound dead letters, newest first.
    public func recentInboundDeadLetters(limit: Int) throws -> [InboundDeadLetter] { try ops.recentInboundDeadLetters(limit: max(0, limit)) }

    // MARK: pruning

    /// Rows removed by one `prune` call.
    public struct Pruned: Sendable, Equatable {
        public var outbox = 0
        public var ledger = 0
        public init(outbox: Int = 0, ledger: Int = 0) {
            self.outbox = outbox
            self.ledger = ledger
        }
    }

    /// Deletes up to `limit` done outbox entries finished before `cutoff` and up to `limit` ledger rows
    /// received before `cutoff`, oldest first. Ledger rows as recent as the oldest pending entry are kept
    /// (a redelivery of an event whose work is still queued must stay a duplicate). Pending and dead
    /// entries, the id map (edits, recalls, replies and echo detection need it), checkpoints and leases
    /// are never pruned. Outbox ids are never reused, so the client ids `imb-<id>` stay unique.
    public func prune(before cutoff: Int64, limit: Int) throws -> Pruned { try ops.prune(before: cutoff, limit: limit) }

    // MARK: id map

    /// Records that `source` on one backend and `target` on another are the same message, both ways.
    public func map(source: (BackendID, MessageID, ConversationRef), target: (BackendID, MessageID, ConversationRef),
                    at now: Int64) throws {
        try ops.map(source: source, target: target, at: now)
    }

    /// The message on `to` that corresponds to `message` on `from`.
    public func mapped(_ message: MessageID, from: BackendID, to: BackendID) throws -> MessageMapping? {
        try ops.mapped(message, from: from, to: to)
    }

    /// Whether the bridge wrote `message` on `backend` (it is the target side of some mapping).
    public func isBridgeCreated(_ message: MessageID, on backend: BackendID) throws -> Bool {
        try ops.isBridgeCreated(message, on: backend)
    }

    /// How many messages the bridge wrote (id-map rows it created); for tests.
    @_spi(Testing) public func mappingCount() throws -> Int { try ops.mappingCount() }

    // MARK: checkpoints

    public func checkpoint(_ name: String) throws -> String? { try ops.checkpoint(name) }

    public func setCheckpoint(_ name: String, _ value: String, at now: Int64) throws { try ops.setCheckpoint(name, value, at: now) }

    /// Every checkpoint whose name starts with `prefix`, by name (catch-up keeps one per conversation).
    public func checkpoints(prefix: String) throws -> [(name: String, value: String)] { try ops.checkpoints(prefix: prefix) }

    // MARK: leases (docs/high-availability.md)

    /// Takes the lease `name` for `owner` for `ttlMs` when it is free, expired, or already `owner`'s (then
    /// it is renewed); nil when another owner holds it unexpired. Expiry is counted on the store's clock:
    /// PostgreSQL's own (`clock_timestamp()`, the same for every instance, and read when the statement
    /// runs, not when the caller decided to run it); SQLite, which one machine uses, the caller's `now`.
    /// The returned fence names this tenure: its token is drawn anew whenever the lease changes owner,
    /// and kept while the same owner renews or re-takes it.
    public func takeLease(_ name: String, owner: String, ttlMs: Int64, now: Int64) throws -> LeaseFence? {
        try ops.takeLease(name, owner: owner, ttlMs: ttlMs, now: now, token: Int64.random(in: 1...Int64.max))
            .map { LeaseFence(name: name, owner: owner, token: $0) }
    }

    /// Extends every lease `owner` holds to `ttlMs` from now (the store's clock, see `takeLease`); returns
    /// the leases renewed — a lease another owner took over meanwhile is not among them.
    @discardableResult
    public func renewLeases(owner: String, ttlMs: Int64, now: Int64) throws -> [LeaseFence] {
        try ops.renewLeases(owner: owner, ttlMs: ttlMs, now: now).map { LeaseFence(name: $0.name, owner: owner, token: $0.token) }
    }

    /// Whether the tenure `fence` names still holds its lease: same owner, same token — nobody took the
    /// lease over since, so nobody else can have worked what it guards (even if it expired meanwhile).
    public func holds(_ fence: LeaseFence) throws -> Bool { try ops.holds(fence) }

    /// Gives the lease up (nothing happens when `owner` does not hold it).
    public func releaseLease(_ name: String, owner: String) throws { try ops.releaseLease(name, owner: owner) }

    /// Who holds the lease unexpired at `now` (nil: free); on PostgreSQL at the server's clock.
    public func leaseHolder(_ name: String, at now: Int64) throws -> String? { try ops.leaseHolder(name, at: now) }

    /// The owners of those of `names` that have a lease row, expired or not (a row an instance left
    /// behind when it died still says that its work under the lease was not finished).
    public func leaseOwners(_ names: [String]) throws -> [String: String] {
        names.isEmpty ? [:] : try ops.leaseOwners(names)
    }

    /// The names of up to `limit` lease rows whose name starts with `prefix` and whose owner is not
    /// `owner`, expired or not (as `leaseOwners`).
    public func foreignLeases(prefix: String, notOwnedBy owner: String, limit: Int) throws -> [String] {
        try ops.foreignLeases(prefix: prefix, notOwnedBy: owner, limit: limit)
    }

    /// Marks those of `names` another owner has a row for (expired or not) by moving their token, and
    /// returns them: the owner's `releaseLease(_:owner:token:)` then fails, telling it that somebody met
    /// its lease meanwhile. The row lock orders the mark and the release.
    public func markLeases(_ names: [String], notOwnedBy owner: String) throws -> [String] {
        names.isEmpty ? [] : try ops.markLeases(names, notOwnedBy: owner)
    }

    /// The token of `owner`'s row for `name` (nil: the owner has none, or it was taken over).
    public func leaseToken(_ name: String, owner: String) throws -> Int64? { try ops.leaseToken(name, owner: owner) }

    /// Gives the lease up only if its token is still `token` (not marked since); true when given up.
    public func releaseLease(_ name: String, owner: String, token: Int64) throws -> Bool {
        try ops.releaseLease(name, owner: owner, token: token)
    }

    /// Forgets every lease (whoever holds it); returns how many. Only for a store that one instance uses
    /// (SQLite): what a killed predecessor held is then free at once instead of after its expiry.
    @discardableResult
    public func dropAllLeases() throws -> Int { try ops.dropAllLeases() }
}
