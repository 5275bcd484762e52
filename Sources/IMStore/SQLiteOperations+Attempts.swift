import Foundation
import GRDB
import IMCore
import IMStoreCore

/// Retention pruning, failed attempts and the operator's trace reads on SQLite (semantics on
/// `StoreTransaction`, MessageTraceRecords.swift).
extension SQLiteOperations {
    // MARK: pruning

    /// Deletes up to `limit` done outbox entries finished before `cutoff` and up to `limit` ledger rows
    /// received before `cutoff`, oldest first. Ledger rows as recent as the oldest pending entry are kept
    /// (a redelivery of an event whose work is still queued must stay a duplicate). Pending and dead
    /// entries, the id map (edits, recalls, replies and echo detection need it) and checkpoints are never
    /// pruned. Outbox ids are AUTOINCREMENT, so a pruned id is never reused and the client ids `imb-<id>`
    /// stay unique.
    package func prune(before cutoff: Int64, limit: Int) throws -> StoreTransaction.Pruned {
        let oldestPending = try Int64.fetchOne(db.cachedStatement(sql: "SELECT MIN(created_at) FROM outbox INDEXED BY outbox_pending WHERE state = 'pending'"))
        let ledgerCutoff = min(cutoff, oldestPending ?? .max)
        var pruned = StoreTransaction.Pruned()
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
        try db.cachedStatement(sql: """
            DELETE FROM attempts WHERE (outbox_id, attempt, at) IN (
                SELECT a.outbox_id, a.attempt, a.at FROM attempts a INDEXED BY attempts_at
                WHERE a.at < ? AND NOT EXISTS (SELECT 1 FROM outbox o WHERE o.id = a.outbox_id AND o.state <> 'done')
                ORDER BY a.at LIMIT ?)
            """).execute(arguments: [cutoff, limit])
        pruned.attempts = db.changesCount
        return pruned
    }

    // MARK: attempts and trace reads

    package func recordAttempt(_ attempt: AttemptRecord) throws {
        try db.cachedStatement(sql: """
            INSERT OR REPLACE INTO attempts (outbox_id, attempt, at, outcome, error_class, error_code, vendor_code, error, retry_at, instance)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
            """).execute(arguments: [attempt.outboxID, attempt.attempt, attempt.at, attempt.outcome.rawValue, attempt.errorClass, attempt.errorCode,
                                     attempt.vendorCode, attempt.error, attempt.retryAt, attempt.instance])
    }

    package func attempts(of outboxIDs: [Int64]) throws -> [AttemptRecord] {
        try outboxIDs.flatMap { id in
            try Row.fetchAll(db.cachedStatement(sql: "SELECT * FROM attempts WHERE outbox_id = ? ORDER BY attempt, at"), arguments: [id]).map { row in
                AttemptRecord(outboxID: row["outbox_id"], attempt: row["attempt"], at: row["at"],
                              outcome: AttemptRecord.Outcome(rawValue: row["outcome"]) ?? .retry, errorClass: row["error_class"],
                              errorCode: row["error_code"], vendorCode: row["vendor_code"], error: row["error"], retryAt: row["retry_at"],
                              instance: row["instance"])
            }
        }
    }

    package func ledgerRecords(matching key: String, limit: Int) throws -> [LedgerRecord] {
        try Row.fetchAll(db.cachedStatement(sql: """
            SELECT * FROM ledger WHERE event_id = ? OR event_id LIKE ? ESCAPE '\\' ORDER BY received_at LIMIT ?
            """), arguments: [key, endsWithColonPattern(key), limit]).map { row in
            let (listener, instance): (String?, String?) = (row["listener"], row["instance"])
            return LedgerRecord(backend: BackendID(row["backend"] as String), eventID: EventID(row["event_id"] as String), kind: row["kind"],
                                receivedAt: row["received_at"],
                                origin: listener.map { EventOrigin(listener: $0, instance: instance ?? "") })
        }
    }

    package func mappingRecords(of message: String) throws -> [MappingRecord] {
        try Row.fetchAll(db.cachedStatement(sql: "SELECT * FROM id_map WHERE from_message = ? OR to_message = ? ORDER BY created_at"),
                         arguments: [message, message]).compactMap(Self.mappingRecord)
    }

    package func mappingRecords(in conversation: ConversationRef, on backend: BackendID?, from: Int64, to: Int64, limit: Int) throws -> [MappingRecord] {
        try Row.fetchAll(db.cachedStatement(sql: """
            SELECT * FROM id_map WHERE to_conversation = ? AND (? IS NULL OR to_backend = ?)
              AND COALESCE(source_time, created_at) BETWEEN ? AND ? ORDER BY COALESCE(source_time, created_at) LIMIT ?
            """), arguments: [conversation.description, backend?.rawValue, backend?.rawValue, from, to, limit]).compactMap(Self.mappingRecord)
    }

    static func mappingRecord(_ row: Row) -> MappingRecord? {
        guard let mapping = Self.mapping(row) else { return nil }
        return MappingRecord(mapping: mapping, createdAt: row["created_at"], sourceTime: row["source_time"])
    }

    package func tracedEntries(matching key: String, limit: Int) throws -> [TracedEntry] {
        try Row.fetchAll(db.cachedStatement(sql: "SELECT * FROM outbox WHERE source_event_id = ? OR source_event_id LIKE ? ESCAPE '\\' ORDER BY id LIMIT ?"),
                         arguments: [key, endsWithColonPattern(key), limit]).compactMap(Self.tracedEntry)
    }

    package func tracedEntries(createdFrom from: Int64, to: Int64, limit: Int) throws -> [TracedEntry] {
        try Row.fetchAll(db.cachedStatement(sql: "SELECT * FROM outbox WHERE created_at BETWEEN ? AND ? ORDER BY id LIMIT ?"),
                         arguments: [from, to, limit]).compactMap(Self.tracedEntry)
    }

    static func tracedEntry(_ row: Row) -> TracedEntry? {
        entry(row).map { TracedEntry(entry: $0, finishedAt: row["finished_at"]) }
    }

    package func inboundDeadLetters(key: String) throws -> [InboundDeadLetter] {
        try Row.fetchAll(db.cachedStatement(sql: "SELECT * FROM inbound_dead_letters WHERE item_key = ? ORDER BY id"), arguments: [key]).map { row in
            InboundDeadLetter(id: row["id"], backend: BackendID(row["backend"] as String), key: row["item_key"], format: row["format"],
                              payload: row["payload"], reason: row["reason"], receivedAt: row["received_at"], retries: row["retries"])
        }
    }
}
