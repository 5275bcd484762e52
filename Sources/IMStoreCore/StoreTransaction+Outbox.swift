import Foundation
import IMCore

/// The outbox: lanes of work per target, their heads, claims and finishes, and the outbound dead letters.
extension StoreTransaction {
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
        /// The source message's own time and sender, when known (`StoreTransaction.relayedMessages`).
        public var sentAt: Int64?
        public var sender: UserID?
        public init(source: (BackendID, MessageID, ConversationRef), target: (BackendID, MessageID, ConversationRef), sentAt: Int64? = nil,
                    sender: UserID? = nil) {
            self.source = source
            self.target = target
            self.sentAt = sentAt
            self.sender = sender
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
}
