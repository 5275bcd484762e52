import Foundation
import IMCore

/// Typed operations inside one store transaction (see `BridgeStore`), the same on every implementation.
public struct StoreTransaction {
    package let ops: any StoreOperations

    package init(_ ops: any StoreOperations) { self.ops = ops }

    // MARK: ledger

    /// Records an inbound event; false when (backend, eventID) was already recorded. `origin`: who took it
    /// in, kept on its ledger row (nil: not known, shown as `unknown`).
    public func recordEvent(_ backend: BackendID, _ eventID: EventID, kind: String, at now: Int64, origin: EventOrigin? = nil) throws -> Bool {
        try ops.recordEvent(backend, eventID, kind: kind, at: now, origin: origin)
    }

    /// Whether (backend, eventID) is in the ledger (recorded, and not pruned yet).
    public func hasEvent(_ backend: BackendID, _ eventID: EventID) throws -> Bool { try ops.hasEvent(backend, eventID) }

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
    /// one statement for all of them. `origin` is kept on each new ledger row.
    public func recordEvents(_ events: [InboundEvent], at now: Int64, origin: EventOrigin? = nil) throws -> [EventRecord] {
        var seen = Set<String>(), firsts: [InboundEvent] = [], positions: [Int?] = []
        for event in events {
            if seen.insert("\(event.backend.rawValue)\u{1}\(event.eventID.rawValue)").inserted {
                positions.append(firsts.count)
                firsts.append(event)
            } else {
                positions.append(nil)
            }
        }
        let recorded = firsts.isEmpty ? [] : try ops.recordEvents(firsts, at: now, origin: origin)
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
    public func recordEvent(_ backend: BackendID, _ eventID: EventID, kind: String, at now: Int64, echoOf message: MessageID,
                            origin: EventOrigin? = nil) throws -> EventRecord {
        try recordEvents([InboundEvent(backend: backend, eventID: eventID, kind: kind, message: message)], at: now, origin: origin)[0]
    }

    /// How many events the ledger holds; for tests.
    @_spi(Testing) public func ledgerCount() throws -> Int { try ops.ledgerCount() }

    // MARK: pruning

    /// Rows removed by one `prune` call.
    public struct Pruned: Sendable, Equatable {
        public var outbox = 0
        public var ledger = 0
        /// Failed-attempt rows (`recordAttempt`) of entries that are done or gone, older than the cutoff.
        public var attempts = 0
        public init(outbox: Int = 0, ledger: Int = 0, attempts: Int = 0) {
            self.outbox = outbox
            self.ledger = ledger
            self.attempts = attempts
        }
    }

    /// Deletes up to `limit` done outbox entries finished before `cutoff` and up to `limit` ledger rows
    /// received before `cutoff`, oldest first. Ledger rows as recent as the oldest pending entry are kept
    /// (a redelivery of an event whose work is still queued must stay a duplicate). Pending and dead
    /// entries, the id map (edits, recalls, replies and echo detection need it), checkpoints and leases
    /// are never pruned; failed-attempt rows go with the same cutoff, except those of pending and dead
    /// entries (`imbridge trace` shows them). Outbox ids are never reused, so the client ids `imb-<id>` stay unique.
    public func prune(before cutoff: Int64, limit: Int) throws -> Pruned { try ops.prune(before: cutoff, limit: limit) }

    // MARK: id map

    /// Records that `source` on one backend and `target` on another are the same message, both ways.
    /// `sentAt`, `sender`: the source message's own time and sender (`relayedMessages` lists it by them).
    public func map(source: (BackendID, MessageID, ConversationRef), target: (BackendID, MessageID, ConversationRef),
                    sentAt: Int64? = nil, sender: UserID? = nil, at now: Int64) throws {
        try ops.map(source: source, target: target, sentAt: sentAt, sender: sender, at: now)
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

    /// How far the bridge's clock is ahead of `backend`'s, seen from the `sample` copies the bridge made last
    /// of that backend's messages: the least (id-map row's time − source message's send time), which is the
    /// clocks' offset plus the quickest relay. Nil when no copy records a send time.
    public func sourceClockLead(of backend: BackendID, sample: Int = 200) throws -> Int64? {
        try ops.sourceClockLead(of: backend, sample: sample)
    }

    // MARK: checkpoints

    public func checkpoint(_ name: String) throws -> String? { try ops.checkpoint(name) }

    public func setCheckpoint(_ name: String, _ value: String, at now: Int64) throws { try ops.setCheckpoint(name, value, at: now) }

    /// Every checkpoint whose name starts with `prefix`, by name (catch-up keeps one per conversation).
    public func checkpoints(prefix: String) throws -> [(name: String, value: String)] { try ops.checkpoints(prefix: prefix) }
}
