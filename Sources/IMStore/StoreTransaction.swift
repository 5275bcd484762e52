import Foundation
import GRDB
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

/// Typed operations inside one store transaction (see `BridgeStore`). Statements go through the
/// connection's statement cache, so SQLite parses each SQL text once per connection, not per call.
public struct StoreTransaction {
    let db: Database

    // MARK: ledger

    /// Records an inbound event; false when (backend, eventID) was already recorded.
    public func recordEvent(_ backend: BackendID, _ eventID: EventID, kind: String, at now: Int64) throws -> Bool {
        try db.cachedStatement(sql: "INSERT OR IGNORE INTO ledger (backend, event_id, kind, received_at) VALUES (?, ?, ?, ?)").execute(
            arguments: [backend.rawValue, eventID.rawValue, kind, now])
        return db.changesCount == 1
    }

    public func ledgerCount() throws -> Int {
        try Int.fetchOne(db.cachedStatement(sql: "SELECT COUNT(*) FROM ledger")) ?? 0
    }

    // MARK: outbox

    @discardableResult
    public func enqueue(lane: LaneKey, sourceBackend: BackendID, sourceEventID: EventID, kind: String, payload: Data,
                        at now: Int64) throws -> Int64 {
        try db.cachedStatement(sql: """
            INSERT INTO outbox (lane, target_backend, source_backend, source_event_id, kind, payload, created_at, next_attempt_at)
            VALUES (?, ?, ?, ?, ?, ?, ?, 0)
            """).execute(arguments: [lane.description, lane.backend.rawValue, sourceBackend.rawValue, sourceEventID.rawValue, kind, payload, now])
        return db.lastInsertedRowID
    }

    /// Lanes with pending work whose head is due at `now`, with their head entry; at most `limit`.
    public func dueLanes(at now: Int64, limit: Int = 10_000) throws -> [OutboxEntry] {
        try Row.fetchAll(db.cachedStatement(sql: """
            SELECT o.* FROM outbox o
            JOIN (\(Self.laneHeads)) h ON o.id = h.head
            WHERE o.next_attempt_at <= ?
            ORDER BY o.id LIMIT ?
            """), arguments: [now, limit]).compactMap(Self.entry)
    }

    /// The earliest time a waiting lane head becomes due (nil when nothing waits).
    public func nextWakeUp() throws -> Int64? {
        try Int64.fetchOne(db.cachedStatement(sql: """
            SELECT MIN(o.next_attempt_at) FROM outbox o
            JOIN (\(Self.laneHeads)) h ON o.id = h.head
            """))
    }

    /// The earliest time after `now` a lane head becomes due (nil when no head waits for a later time).
    /// Heads due already are not counted: the scheduler is woken when the lane running them finishes.
    public func nextWakeUp(after now: Int64) throws -> Int64? {
        try Int64.fetchOne(db.cachedStatement(sql: """
            SELECT MIN(o.next_attempt_at) FROM outbox o
            JOIN (\(Self.laneHeads)) h ON o.id = h.head
            WHERE o.next_attempt_at > ?
            """), arguments: [now])
    }

    /// Each lane's head id. `INDEXED BY` the partial (lane, id) index: without statistics SQLite picks
    /// `outbox_state` and sorts every pending row into a temporary B-tree instead.
    static let laneHeads = "SELECT lane, MIN(id) AS head FROM outbox INDEXED BY outbox_pending WHERE state = 'pending' GROUP BY lane"

    /// The first pending entry of a lane (an index search on (lane, id), whatever else is pending).
    public func head(of lane: LaneKey) throws -> OutboxEntry? {
        try Row.fetchOne(db.cachedStatement(sql: "SELECT * FROM outbox INDEXED BY outbox_pending WHERE lane = ? AND state = 'pending' ORDER BY id LIMIT 1"),
                         arguments: [lane.description]).flatMap(Self.entry)
    }

    /// Notes that an attempt is starting (before the call leaves the process), so that after a crash
    /// the entry is known to have possibly reached the target.
    public func claim(_ id: Int64) throws {
        try db.cachedStatement(sql: "UPDATE outbox SET attempts = attempts + 1 WHERE id = ?").execute(arguments: [id])
    }

    /// The lane's head when it is due at `now`, claimed (`claim`) in this transaction; nil otherwise.
    /// The returned entry shows the attempts made before this claim.
    public func claimHead(of lane: LaneKey, dueBy now: Int64) throws -> OutboxEntry? {
        guard let head = try head(of: lane), head.nextAttemptAt <= now else { return nil }
        try claim(head.id)
        return head
    }

    public func complete(_ id: Int64, at now: Int64) throws {
        try db.cachedStatement(sql: "UPDATE outbox SET state = 'done', finished_at = ?, payload = x'' WHERE id = ?").execute(
            arguments: [now, id])
    }

    public func reschedule(_ id: Int64, at next: Int64, error: String) throws {
        try db.cachedStatement(sql: "UPDATE outbox SET next_attempt_at = ?, last_error = ? WHERE id = ?").execute(
            arguments: [next, error, id])
    }

    /// Moves an entry to the dead letters; its lane goes on with the next entry.
    public func markDead(_ id: Int64, error: String, at now: Int64) throws {
        try db.cachedStatement(sql: "UPDATE outbox SET state = 'dead', last_error = ?, finished_at = ? WHERE id = ?").execute(
            arguments: [error, now, id])
    }

    public func deadLetters(limit: Int = 1000) throws -> [OutboxEntry] {
        try Row.fetchAll(db.cachedStatement(sql: "SELECT * FROM outbox WHERE state = 'dead' ORDER BY id LIMIT ?"), arguments: [limit]).compactMap(Self.entry)
    }

    /// Puts dead letters back in their lanes (all, or the given ids); returns how many.
    @discardableResult
    public func retryDeadLetters(ids: [Int64]? = nil) throws -> Int {
        if let ids {
            for id in ids {
                try db.cachedStatement(sql: "UPDATE outbox SET state = 'pending', next_attempt_at = 0 WHERE id = ? AND state = 'dead'").execute(arguments: [id])
            }
        } else {
            try db.cachedStatement(sql: "UPDATE outbox SET state = 'pending', next_attempt_at = 0 WHERE state = 'dead'").execute()
        }
        return db.changesCount
    }

    public func count(state: OutboxEntry.State) throws -> Int {
        try Int.fetchOne(db.cachedStatement(sql: "SELECT COUNT(*) FROM outbox WHERE state = ?"), arguments: [state.rawValue]) ?? 0
    }

    /// Pending entries per lane.
    public func laneDepths() throws -> [String: Int] {
        var depths: [String: Int] = [:]
        for row in try Row.fetchAll(db.cachedStatement(sql: "SELECT lane, COUNT(*) AS n FROM outbox INDEXED BY outbox_pending WHERE state = 'pending' GROUP BY lane")) {
            depths[row["lane"]] = row["n"]
        }
        return depths
    }

    static func entry(_ row: Row) -> OutboxEntry? {
        guard let lane = LaneKey(row["lane"]), let state = OutboxEntry.State(rawValue: row["state"]) else { return nil }
        return OutboxEntry(id: row["id"], lane: lane, sourceBackend: BackendID(row["source_backend"] as String),
                           sourceEventID: EventID(row["source_event_id"] as String), kind: row["kind"], payload: row["payload"],
                           state: state, attempts: row["attempts"], nextAttemptAt: row["next_attempt_at"],
                           lastError: row["last_error"], createdAt: row["created_at"])
    }

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
    /// entries, the id map (edits, recalls, replies and echo detection need it) and checkpoints are never
    /// pruned. Outbox ids are AUTOINCREMENT, so a pruned id is never reused and the client ids `imb-<id>`
    /// stay unique.
    public func prune(before cutoff: Int64, limit: Int) throws -> Pruned {
        let oldestPending = try Int64.fetchOne(db.cachedStatement(sql: "SELECT MIN(created_at) FROM outbox INDEXED BY outbox_pending WHERE state = 'pending'"))
        let ledgerCutoff = min(cutoff, oldestPending ?? .max)
        var pruned = Pruned()
        try db.cachedStatement(sql: """
            DELETE FROM outbox WHERE id IN (SELECT id FROM outbox INDEXED BY outbox_finished
                                            WHERE state = 'done' AND finished_at < ? ORDER BY finished_at LIMIT ?)
            """).execute(arguments: [cutoff, limit])
        pruned.outbox = db.changesCount
        try db.cachedStatement(sql: """
            DELETE FROM ledger WHERE (backend, event_id) IN (SELECT backend, event_id FROM ledger INDEXED BY ledger_received
                                                             WHERE received_at < ? ORDER BY received_at LIMIT ?)
            """).execute(arguments: [ledgerCutoff, limit])
        pruned.ledger = db.changesCount
        return pruned
    }

    // MARK: id map

    /// Records that `source` on one backend and `target` on another are the same message, both ways.
    public func map(source: (BackendID, MessageID, ConversationRef), target: (BackendID, MessageID, ConversationRef),
                    at now: Int64) throws {
        let sql = """
            INSERT OR REPLACE INTO id_map (from_backend, from_message, to_backend, to_message, to_conversation, bridge_created, created_at)
            VALUES (?, ?, ?, ?, ?, ?, ?)
            """
        try db.cachedStatement(sql: sql).execute(arguments: [source.0.rawValue, source.1.rawValue, target.0.rawValue, target.1.rawValue,
                                             target.2.description, true, now])
        try db.cachedStatement(sql: sql).execute(arguments: [target.0.rawValue, target.1.rawValue, source.0.rawValue, source.1.rawValue,
                                             source.2.description, false, now])
    }

    /// The message on `to` that corresponds to `message` on `from`.
    public func mapped(_ message: MessageID, from: BackendID, to: BackendID) throws -> MessageMapping? {
        try Row.fetchOne(db.cachedStatement(sql: "SELECT * FROM id_map WHERE from_backend = ? AND from_message = ? AND to_backend = ?"),
                         arguments: [from.rawValue, message.rawValue, to.rawValue]).flatMap(Self.mapping)
    }

    /// Whether the bridge wrote `message` on `backend` (it is the target side of some mapping).
    public func isBridgeCreated(_ message: MessageID, on backend: BackendID) throws -> Bool {
        try Bool.fetchOne(db.cachedStatement(sql: "SELECT 1 FROM id_map WHERE to_backend = ? AND to_message = ? AND bridge_created = 1 LIMIT 1"),
                          arguments: [backend.rawValue, message.rawValue]) ?? false
    }

    public func mappingCount() throws -> Int {
        try Int.fetchOne(db.cachedStatement(sql: "SELECT COUNT(*) FROM id_map WHERE bridge_created = 1")) ?? 0
    }

    static func mapping(_ row: Row) -> MessageMapping? {
        guard let conversation = try? ConversationRef(parsing: row["to_conversation"]) else { return nil }
        return MessageMapping(fromBackend: BackendID(row["from_backend"] as String), fromMessage: MessageID(row["from_message"] as String),
                              toBackend: BackendID(row["to_backend"] as String), toMessage: MessageID(row["to_message"] as String),
                              toConversation: conversation, bridgeCreated: row["bridge_created"])
    }

    // MARK: checkpoints

    public func checkpoint(_ name: String) throws -> String? {
        try String.fetchOne(db.cachedStatement(sql: "SELECT value FROM checkpoints WHERE name = ?"), arguments: [name])
    }

    public func setCheckpoint(_ name: String, _ value: String, at now: Int64) throws {
        try db.cachedStatement(sql: "INSERT OR REPLACE INTO checkpoints (name, value, updated_at) VALUES (?, ?, ?)").execute(arguments: [name, value, now])
    }
}
