import Foundation
import GRDB
import IMCore
import IMStoreCore

/// The store contract's operations on SQLite (semantics on `StoreTransaction`). Statements go through
/// the connection's statement cache, so SQLite parses each SQL text once per connection, not per call.
package struct SQLiteOperations: StoreOperations {
    package let db: Database

    // MARK: ledger

    /// Records an inbound event; false when (backend, eventID) was already recorded.
    package func recordEvent(_ backend: BackendID, _ eventID: EventID, kind: String, at now: Int64, origin: EventOrigin?) throws -> Bool {
        try db.cachedStatement(sql: """
            INSERT OR IGNORE INTO ledger (backend, event_id, kind, received_at, listener, instance) VALUES (?, ?, ?, ?, ?, ?)
            """).execute(arguments: [backend.rawValue, eventID.rawValue, kind, now, origin?.listener, origin?.instance])
        return db.changesCount == 1
    }

    package func ledgerCount() throws -> Int {
        try Int.fetchOne(db.cachedStatement(sql: "SELECT COUNT(*) FROM ledger")) ?? 0
    }

    // MARK: outbox

    package func enqueue(lane: LaneKey, sourceBackend: BackendID, sourceEventID: EventID, kind: String, payload: Data,
                        at now: Int64) throws -> Int64 {
        try db.cachedStatement(sql: """
            INSERT INTO outbox (lane, target_backend, source_backend, source_event_id, kind, payload, created_at, next_attempt_at)
            VALUES (?, ?, ?, ?, ?, ?, ?, 0)
            """).execute(arguments: [lane.description, lane.backend.rawValue, sourceBackend.rawValue, sourceEventID.rawValue, kind, payload, now])
        return db.lastInsertedRowID
    }

    /// Lanes with pending work whose head is due at `now`, with their head entry; at most `limit`.
    package func dueLanes(at now: Int64, limit: Int, leaseOwner: String?) throws -> [OutboxEntry] {
        try Row.fetchAll(db.cachedStatement(sql: Self.dueLanes("o.*", leased: leaseOwner != nil)),
                         arguments: Self.dueLaneArguments(now, limit, leaseOwner)).compactMap(Self.entry)
    }

    package func dueLaneKeys(at now: Int64, limit: Int, leaseOwner: String?) throws -> [LaneKey] {
        try String.fetchAll(db.cachedStatement(sql: Self.dueLanes("o.lane", leased: leaseOwner != nil)),
                            arguments: Self.dueLaneArguments(now, limit, leaseOwner)).compactMap(LaneKey.init)
    }

    /// The lane heads due at `?1`, oldest first, at most `?2` (`?4`); with `leased`, without the lanes
    /// another owner than `?2` holds unexpired at `?3`.
    package static func dueLanes(_ select: String, leased: Bool) -> String {
        guard leased else {
            return "SELECT \(select) FROM outbox o JOIN (\(laneHeads)) h ON o.id = h.head WHERE o.next_attempt_at <= ? ORDER BY o.id LIMIT ?"
        }
        return """
            SELECT \(select) FROM outbox o
            JOIN (\(laneHeads)) h ON o.id = h.head
            LEFT JOIN leases l ON l.name = 'lane:' || o.lane
            WHERE o.next_attempt_at <= ? AND (l.name IS NULL OR l.owner = ? OR l.expires_at <= ?)
            ORDER BY o.id LIMIT ?
            """
    }

    package static func dueLaneArguments(_ now: Int64, _ limit: Int, _ leaseOwner: String?) -> StatementArguments {
        guard let leaseOwner else { return [now, limit] }
        return [now, leaseOwner, now, limit]
    }

    /// The earliest time a waiting lane head becomes due (nil when nothing waits).
    package func nextWakeUp() throws -> Int64? {
        try Int64.fetchOne(db.cachedStatement(sql: """
            SELECT MIN(o.next_attempt_at) FROM outbox o
            JOIN (\(Self.laneHeads)) h ON o.id = h.head
            """))
    }

    /// The earliest time after `now` a lane head becomes due (nil when no head waits for a later time).
    /// Heads due already are not counted: the scheduler is woken when the lane running them finishes.
    package func nextWakeUp(after now: Int64) throws -> Int64? {
        try Int64.fetchOne(db.cachedStatement(sql: """
            SELECT MIN(o.next_attempt_at) FROM outbox o
            JOIN (\(Self.laneHeads)) h ON o.id = h.head
            WHERE o.next_attempt_at > ?
            """), arguments: [now])
    }

    /// Each lane's head id. `INDEXED BY` the partial (lane, id) index: without statistics SQLite picks
    /// `outbox_state` and sorts every pending row into a temporary B-tree instead.
    package static let laneHeads = "SELECT lane, MIN(id) AS head FROM outbox INDEXED BY outbox_pending WHERE state = 'pending' GROUP BY lane"

    /// The first pending entry of a lane (an index search on (lane, id), whatever else is pending).
    package func head(of lane: LaneKey) throws -> OutboxEntry? {
        try Row.fetchOne(db.cachedStatement(sql: "SELECT * FROM outbox INDEXED BY outbox_pending WHERE lane = ? AND state = 'pending' ORDER BY id LIMIT 1"),
                         arguments: [lane.description]).flatMap(Self.entry)
    }

    package func pendingEntries(of lane: LaneKey, limit: Int) throws -> [OutboxEntry] {
        try Row.fetchAll(db.cachedStatement(sql: "SELECT * FROM outbox INDEXED BY outbox_pending WHERE lane = ? AND state = 'pending' ORDER BY id LIMIT ?"),
                         arguments: [lane.description, limit]).compactMap(Self.entry)
    }

    package func entries(ids: [Int64]) throws -> [OutboxEntry] {
        var found: [OutboxEntry] = []
        for start in stride(from: 0, to: ids.count, by: 500) {
            let chunk = Array(ids[start..<min(ids.count, start + 500)])
            let marks = Array(repeating: "?", count: chunk.count).joined(separator: ",")
            found += try Row.fetchAll(db, sql: "SELECT * FROM outbox WHERE id IN (\(marks))", arguments: StatementArguments(chunk))
                .compactMap(Self.entry)
        }
        return found.sorted { $0.id < $1.id }
    }

    /// Notes that an attempt is starting (before the call leaves the process), so that after a crash
    /// the entry is known to have possibly reached the target.
    package func claim(_ id: Int64) throws {
        try db.cachedStatement(sql: "UPDATE outbox SET attempts = attempts + 1 WHERE id = ?").execute(arguments: [id])
    }

    /// The lane's head when it is due at `now`, claimed (`claim`) in this transaction; nil otherwise.
    /// The returned entry shows the attempts made before this claim.
    /// One statement (it runs once per relayed message): the head, due, fenced by the lane's lease when
    /// `leaseOwner` is given, and claimed.
    package func claimHead(of lane: LaneKey, dueBy now: Int64, leaseOwner: String?) throws -> OutboxEntry? {
        if let leaseOwner {
            return try Row.fetchOne(db.cachedStatement(sql: Self.claimFencedSQL), arguments: [lane.description, now, lane.leaseName, leaseOwner, now])
                .flatMap(Self.claimedEntry)
        }
        return try Row.fetchOne(db.cachedStatement(sql: Self.claimSQL), arguments: [lane.description, now]).flatMap(Self.claimedEntry)
    }

    /// `entry(_:)` of a row of `claimStatement`'s `RETURNING` list, read by position in that list. GRDB
    /// finds a column by name by lowercasing it and every column name before it, on every lookup: 77
    /// lowercased strings per claimed entry, once per relayed message (docs/performance.md, "Columns by
    /// position, text by bytes").
    static func claimedEntry(_ row: Row) -> OutboxEntry? {
        guard let lane = LaneKey(row[1]), let state = OutboxEntry.State(rawValue: row[6]) else { return nil }
        return OutboxEntry(id: row[0], lane: lane, sourceBackend: BackendID(row[2] as String), sourceEventID: EventID(row[3] as String),
                           kind: row[4], payload: row[5], state: state, attempts: row[7], nextAttemptAt: row[8], lastError: row[9],
                           createdAt: row[10])
    }

    /// The texts of `claimHead`'s statement, built once (it runs once per relayed message).
    package static let claimSQL = claimStatement(fence: "")
    package static let claimFencedSQL = claimStatement(fence: " AND EXISTS (SELECT 1 FROM leases WHERE name = ? AND owner = ? AND expires_at > ?)")

    /// Its `RETURNING` list is read by position (`claimedEntry`): a column moved here is moved there.
    private static func claimStatement(fence: String) -> String {
        """
        UPDATE outbox SET attempts = attempts + 1
        WHERE id = (SELECT id FROM outbox INDEXED BY outbox_pending WHERE lane = ? AND state = 'pending' ORDER BY id LIMIT 1)
          AND next_attempt_at <= ?\(fence)
        RETURNING id, lane, source_backend, source_event_id, kind, payload, state, attempts - 1 AS attempts, next_attempt_at, last_error, created_at
        """
    }

    package func complete(_ id: Int64, at now: Int64) throws {
        try db.cachedStatement(sql: "UPDATE outbox SET state = 'done', finished_at = ?, payload = x'' WHERE id = ?").execute(
            arguments: [now, id])
    }

    package func reschedule(_ id: Int64, at next: Int64, error: String) throws {
        try db.cachedStatement(sql: "UPDATE outbox SET next_attempt_at = ?, last_error = ? WHERE id = ?").execute(
            arguments: [next, error, id])
    }

    /// Moves an entry to the dead letters; its lane goes on with the next entry.
    package func markDead(_ id: Int64, error: String, at now: Int64) throws {
        try db.cachedStatement(sql: "UPDATE outbox SET state = 'dead', last_error = ?, finished_at = ? WHERE id = ?").execute(
            arguments: [error, now, id])
    }

    package func deadLetters(limit: Int) throws -> [OutboxEntry] {
        try Row.fetchAll(db.cachedStatement(sql: "SELECT * FROM outbox WHERE state = 'dead' ORDER BY id LIMIT ?"), arguments: [limit]).compactMap(Self.entry)
    }

    /// Puts dead letters back in their lanes (all, or the given ids); returns how many.
    package func retryDeadLetters(ids: [Int64]?) throws -> Int {
        if let ids {
            for id in ids {
                try db.cachedStatement(sql: "UPDATE outbox SET state = 'pending', next_attempt_at = 0 WHERE id = ? AND state = 'dead'").execute(arguments: [id])
            }
        } else {
            try db.cachedStatement(sql: "UPDATE outbox SET state = 'pending', next_attempt_at = 0 WHERE state = 'dead'").execute()
        }
        return db.changesCount
    }

    package func count(state: OutboxEntry.State) throws -> Int {
        try Int.fetchOne(db.cachedStatement(sql: "SELECT COUNT(*) FROM outbox WHERE state = ?"), arguments: [state.rawValue]) ?? 0
    }

    // MARK: inbound dead letters

    package func keepInbound(backend: BackendID, key: String, format: String, payload: Data, reason: String, at now: Int64) throws -> Bool {
        try db.cachedStatement(sql: """
            INSERT OR IGNORE INTO inbound_dead_letters (backend, item_key, format, payload, reason, received_at) VALUES (?, ?, ?, ?, ?, ?)
            """).execute(arguments: [backend.rawValue, key, format, payload, reason, now])
        return db.changesCount == 1
    }

    package func inboundDeadLetters(ids: [Int64]?, limit: Int) throws -> [InboundDeadLetter] {
        let rows: [Row]
        if let ids {
            rows = try ids.compactMap { id in
                try Row.fetchOne(db.cachedStatement(sql: "SELECT * FROM inbound_dead_letters WHERE id = ?"), arguments: [id])
            }.sorted { ($0["id"] as Int64) < ($1["id"] as Int64) }
        } else {
            rows = try Row.fetchAll(db.cachedStatement(sql: "SELECT * FROM inbound_dead_letters ORDER BY id LIMIT ?"), arguments: [limit])
        }
        return rows.prefix(limit).map { row in
            InboundDeadLetter(id: row["id"], backend: BackendID(row["backend"] as String), key: row["item_key"], format: row["format"],
                              payload: row["payload"], reason: row["reason"], receivedAt: row["received_at"], retries: row["retries"])
        }
    }

    package func removeInboundDeadLetter(_ id: Int64) throws {
        try db.cachedStatement(sql: "DELETE FROM inbound_dead_letters WHERE id = ?").execute(arguments: [id])
    }

    package func failedInboundRetry(_ id: Int64, reason: String) throws {
        try db.cachedStatement(sql: "UPDATE inbound_dead_letters SET reason = ?, retries = retries + 1 WHERE id = ?").execute(arguments: [reason, id])
    }

    package func inboundDeadLetterCount() throws -> Int {
        try Int.fetchOne(db.cachedStatement(sql: "SELECT COUNT(*) FROM inbound_dead_letters")) ?? 0
    }

    /// Pending entries per lane.
    package func laneDepths() throws -> [String: Int] {
        var depths: [String: Int] = [:]
        for row in try Row.fetchAll(db.cachedStatement(sql: "SELECT lane, COUNT(*) AS n FROM outbox INDEXED BY outbox_pending WHERE state = 'pending' GROUP BY lane")) {
            depths[row["lane"]] = row["n"]
        }
        return depths
    }

    package func oldestPendingByTarget() throws -> [String: Int64] {
        var oldest: [String: Int64] = [:]
        for row in try Row.fetchAll(db.cachedStatement(sql: "SELECT target_backend, MIN(created_at) AS t FROM outbox WHERE state = 'pending' GROUP BY target_backend")) {
            oldest[row["target_backend"]] = row["t"]
        }
        return oldest
    }

    package func laneSummaries(limit: Int) throws -> [LaneSummary] {
        try Row.fetchAll(db.cachedStatement(sql: """
            SELECT lane, COUNT(*) AS n, MIN(created_at) AS t FROM outbox INDEXED BY outbox_pending WHERE state = 'pending'
            GROUP BY lane ORDER BY t, n DESC, lane LIMIT ?
            """), arguments: [limit]).compactMap { row in
            LaneKey(row["lane"]).map { LaneSummary(lane: $0, depth: row["n"], oldestCreatedAt: row["t"]) }
        }
    }

    package func recentDeadLetters(limit: Int) throws -> [OutboxEntry] {
        try Row.fetchAll(db.cachedStatement(sql: "SELECT * FROM outbox WHERE state = 'dead' ORDER BY id DESC LIMIT ?"), arguments: [limit]).compactMap(Self.entry)
    }

    package func recentInboundDeadLetters(limit: Int) throws -> [InboundDeadLetter] {
        try Row.fetchAll(db.cachedStatement(sql: "SELECT * FROM inbound_dead_letters ORDER BY id DESC LIMIT ?"), arguments: [limit]).map { row in
            InboundDeadLetter(id: row["id"], backend: BackendID(row["backend"] as String), key: row["item_key"], format: row["format"],
                              payload: row["payload"], reason: row["reason"], receivedAt: row["received_at"], retries: row["retries"])
        }
    }

    package static func entry(_ row: Row) -> OutboxEntry? {
        guard let lane = LaneKey(row["lane"]), let state = OutboxEntry.State(rawValue: row["state"]) else { return nil }
        return OutboxEntry(id: row["id"], lane: lane, sourceBackend: BackendID(row["source_backend"] as String),
                           sourceEventID: EventID(row["source_event_id"] as String), kind: row["kind"], payload: row["payload"],
                           state: state, attempts: row["attempts"], nextAttemptAt: row["next_attempt_at"],
                           lastError: row["last_error"], createdAt: row["created_at"])
    }

    // MARK: id map

    /// Records that `source` on one backend and `target` on another are the same message, both ways.
    package func map(source: (BackendID, MessageID, ConversationRef), target: (BackendID, MessageID, ConversationRef), sentAt: Int64?, sender: UserID?, at now: Int64) throws {
        try db.cachedStatement(sql: """
            INSERT OR REPLACE INTO id_map (from_backend, from_message, to_backend, to_message, to_conversation, bridge_created, created_at, source_time, source_sender)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?), (?, ?, ?, ?, ?, ?, ?, ?, ?)
            """).execute(arguments: [source.0.rawValue, source.1.rawValue, target.0.rawValue, target.1.rawValue, target.2.description, true, now, sentAt, sender?.rawValue,
                                     target.0.rawValue, target.1.rawValue, source.0.rawValue, source.1.rawValue, source.2.description, false, now, sentAt, sender?.rawValue])
    }

    /// The message on `to` that corresponds to `message` on `from`.
    package func mapped(_ message: MessageID, from: BackendID, to: BackendID) throws -> MessageMapping? {
        try Row.fetchOne(db.cachedStatement(sql: "SELECT * FROM id_map WHERE from_backend = ? AND from_message = ? AND to_backend = ?"),
                         arguments: [from.rawValue, message.rawValue, to.rawValue]).flatMap(Self.mapping)
    }

    /// Whether the bridge wrote `message` on `backend` (it is the target side of some mapping).
    package func isBridgeCreated(_ message: MessageID, on backend: BackendID) throws -> Bool {
        try Bool.fetchOne(db.cachedStatement(sql: "SELECT 1 FROM id_map WHERE to_backend = ? AND to_message = ? AND bridge_created = 1 LIMIT 1"),
                          arguments: [backend.rawValue, message.rawValue]) ?? false
    }

    package func mappingCount() throws -> Int {
        try Int.fetchOne(db.cachedStatement(sql: "SELECT COUNT(*) FROM id_map WHERE bridge_created = 1")) ?? 0
    }

    package func sourceClockLead(of backend: BackendID, sample: Int) throws -> Int64? {
        try Int64.fetchOne(db.cachedStatement(sql: """
            SELECT MIN(created_at - source_time) FROM (SELECT created_at, source_time FROM id_map
            WHERE from_backend = ? AND bridge_created = 1 AND source_time IS NOT NULL ORDER BY created_at DESC LIMIT ?)
            """), arguments: [backend.rawValue, sample])
    }

    package static func mapping(_ row: Row) -> MessageMapping? {
        guard let conversation = try? ConversationRef(parsing: row["to_conversation"]) else { return nil }
        return MessageMapping(fromBackend: BackendID(row["from_backend"] as String), fromMessage: MessageID(row["from_message"] as String),
                              toBackend: BackendID(row["to_backend"] as String), toMessage: MessageID(row["to_message"] as String),
                              toConversation: conversation, bridgeCreated: row["bridge_created"], createdAt: row["created_at"])
    }

    // MARK: checkpoints

    package func hasEvent(_ backend: BackendID, _ eventID: EventID) throws -> Bool {
        try Int.fetchOne(db.cachedStatement(sql: "SELECT 1 FROM ledger WHERE backend = ? AND event_id = ?"),
                         arguments: [backend.rawValue, eventID.rawValue]) != nil
    }

    package func checkpoint(_ name: String) throws -> String? {
        try String.fetchOne(db.cachedStatement(sql: "SELECT value FROM checkpoints WHERE name = ?"), arguments: [name])
    }

    package func checkpoints(prefix: String) throws -> [(name: String, value: String)] {
        // `substr` instead of LIKE: a prefix may hold `%` or `_`.
        try Row.fetchAll(db.cachedStatement(sql: "SELECT name, value FROM checkpoints WHERE substr(name, 1, ?) = ? ORDER BY name"),
                         arguments: [prefix.count, prefix]).map { (name: $0["name"], value: $0["value"]) }
    }

    package func setCheckpoint(_ name: String, _ value: String, at now: Int64) throws {
        try db.cachedStatement(sql: "INSERT OR REPLACE INTO checkpoints (name, value, updated_at) VALUES (?, ?, ?)").execute(arguments: [name, value, now])
    }

    // MARK: leases

    package func takeLease(_ name: String, owner: String, ttlMs: Int64, now: Int64, token: Int64) throws -> Int64? {
        try Int64.fetchOne(db.cachedStatement(sql: """
            INSERT INTO leases (name, owner, expires_at, token) VALUES (?, ?, ?, ?)
            ON CONFLICT (name) DO UPDATE SET owner = excluded.owner, expires_at = excluded.expires_at,
                token = CASE WHEN leases.owner = excluded.owner THEN leases.token ELSE excluded.token END
            WHERE leases.owner = excluded.owner OR leases.expires_at <= ?
            RETURNING token
            """), arguments: [name, owner, now + ttlMs, token, now])
    }

    package func renewLeases(owner: String, ttlMs: Int64, now: Int64) throws -> [(name: String, token: Int64)] {
        try Row.fetchAll(db.cachedStatement(sql: "UPDATE leases SET expires_at = ? WHERE owner = ? RETURNING name, token"),
                         arguments: [now + ttlMs, owner]).map { (name: $0["name"], token: $0["token"]) }
    }

    package func holds(_ fence: LeaseFence) throws -> Bool {
        try Bool.fetchOne(db.cachedStatement(sql: "SELECT 1 FROM leases WHERE name = ? AND owner = ? AND token = ?"),
                          arguments: [fence.name, fence.owner, fence.token]) ?? false
    }

    package func releaseLease(_ name: String, owner: String) throws {
        try db.cachedStatement(sql: "DELETE FROM leases WHERE name = ? AND owner = ?").execute(arguments: [name, owner])
    }

    package func dropAllLeases() throws -> Int {
        try db.cachedStatement(sql: "DELETE FROM leases").execute()
        return db.changesCount
    }

    package func leaseHolder(_ name: String, at now: Int64) throws -> String? {
        try String.fetchOne(db.cachedStatement(sql: "SELECT owner FROM leases WHERE name = ? AND expires_at > ?"), arguments: [name, now])
    }

    package func markLeases(_ names: [String], notOwnedBy owner: String) throws -> [String] {
        var marked: [String] = []
        for name in names {
            try db.cachedStatement(sql: "UPDATE leases SET token = CASE WHEN token = 9223372036854775807 THEN 1 ELSE token + 1 END WHERE name = ? AND owner <> ?").execute(arguments: [name, owner])
            if db.changesCount > 0 { marked.append(name) }
        }
        return marked
    }

    package func leaseToken(_ name: String, owner: String) throws -> Int64? {
        try Int64.fetchOne(db.cachedStatement(sql: "SELECT token FROM leases WHERE name = ? AND owner = ?"), arguments: [name, owner])
    }

    package func releaseLease(_ name: String, owner: String, token: Int64) throws -> Bool {
        try db.cachedStatement(sql: "DELETE FROM leases WHERE name = ? AND owner = ? AND token = ?").execute(arguments: [name, owner, token])
        return db.changesCount > 0
    }

    package func foreignLeases(prefix: String, notOwnedBy owner: String, limit: Int) throws -> [String] {
        try String.fetchAll(db.cachedStatement(sql: "SELECT name FROM leases WHERE substr(name, 1, ?) = ? AND owner <> ? LIMIT ?"),
                            arguments: [prefix.count, prefix, owner, limit])
    }

    package func leaseOwners(_ names: [String]) throws -> [String: String] {
        var owners: [String: String] = [:]
        for name in names {
            if let owner = try String.fetchOne(db.cachedStatement(sql: "SELECT owner FROM leases WHERE name = ?"), arguments: [name]) {
                owners[name] = owner
            }
        }
        return owners
    }
}
