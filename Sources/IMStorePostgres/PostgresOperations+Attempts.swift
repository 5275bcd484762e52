import Foundation
import IMCore
import PostgresNIO
import IMStoreCore

/// Failed attempts and the operator's trace reads on PostgreSQL (semantics on `StoreTransaction`,
/// MessageTraceRecords.swift). Absent times travel as `Int64.min` (NULL in the table).
extension PostgresOperations {
    package static let attemptColumns = "outbox_id, attempt, at, outcome, error_class, error_code, vendor_code, error, retry_at, instance"
    package static let mappingColumns = "from_backend, from_message, to_backend, to_message, to_conversation, bridge_created, created_at, source_time"

    package func recordAttempt(_ attempt: AttemptRecord) throws {
        try session.query("""
            INSERT INTO attempts (\(Self.attemptColumns)) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, NULLIF($9, \(Int64.min)), $10)
            ON CONFLICT (outbox_id, attempt, at) DO NOTHING
            """, [.int(attempt.outboxID), .int(Int64(attempt.attempt)), .int(attempt.at), .text(attempt.outcome.rawValue), .text(attempt.errorClass),
                  .textOrNull(attempt.errorCode), .textOrNull(attempt.vendorCode), .text(attempt.error), .int(attempt.retryAt ?? .min),
                  .text(attempt.instance)])
    }

    package func attempts(of outboxIDs: [Int64]) throws -> [AttemptRecord] {
        try rows("SELECT \(Self.attemptColumns) FROM attempts WHERE outbox_id = ANY($1) ORDER BY outbox_id, attempt, at", [.ints(outboxIDs)]).map { row in
            let (id, attempt, at, outcome, errorClass, code, vendor, error, retryAt, instance) =
                try row.decode((Int64, Int64, Int64, String, String, String?, String?, String, Int64?, String).self)
            return AttemptRecord(outboxID: id, attempt: Int(attempt), at: at, outcome: AttemptRecord.Outcome(rawValue: outcome) ?? .retry,
                                 errorClass: errorClass, errorCode: code, vendorCode: vendor, error: error, retryAt: retryAt, instance: instance)
        }
    }

    package func ledgerRecords(matching key: String, limit: Int) throws -> [LedgerRecord] {
        try rows("""
            SELECT backend, event_id, kind, received_at, listener, instance FROM ledger WHERE event_id = $1 OR event_id LIKE $2 ESCAPE '\\'
            ORDER BY received_at LIMIT $3
            """, [.text(key), .text(endsWithColonPattern(key)), .int(Int64(limit))]).map { row in
            let (backend, event, kind, received, listener, instance) = try row.decode((String, String, String, Int64, String?, String?).self)
            return LedgerRecord(backend: BackendID(backend), eventID: EventID(event), kind: kind, receivedAt: received,
                                origin: listener.map { EventOrigin(listener: $0, instance: instance ?? "") })
        }
    }

    package func mappingRecords(of message: String) throws -> [MappingRecord] {
        try rows("SELECT \(Self.mappingColumns) FROM id_map WHERE from_message = $1 OR to_message = $1 ORDER BY created_at", [.text(message)])
            .compactMap(Self.mappingRecord)
    }

    package func mappingRecords(in conversation: ConversationRef, on backend: BackendID?, from: Int64, to: Int64, limit: Int) throws -> [MappingRecord] {
        try rows("""
            SELECT \(Self.mappingColumns) FROM id_map WHERE to_conversation = $1 AND ($2 = '' OR to_backend = $2)
              AND COALESCE(source_time, created_at) BETWEEN $3 AND $4 ORDER BY COALESCE(source_time, created_at) LIMIT $5
            """, [.text(conversation.description), .text(backend?.rawValue ?? ""), .int(from), .int(to), .int(Int64(limit))])
            .compactMap(Self.mappingRecord)
    }

    static func mappingRecord(_ row: PostgresRow) -> MappingRecord? {
        guard let (fromBackend, fromMessage, toBackend, toMessage, conversation, created, createdAt, sourceTime) =
                try? row.decode((String, String, String, String, String, Bool, Int64, Int64?).self),
              let toConversation = try? ConversationRef(parsing: conversation) else { return nil }
        return MappingRecord(mapping: MessageMapping(fromBackend: BackendID(fromBackend), fromMessage: MessageID(fromMessage),
                                                     toBackend: BackendID(toBackend), toMessage: MessageID(toMessage),
                                                     toConversation: toConversation, bridgeCreated: created),
                             createdAt: createdAt, sourceTime: sourceTime)
    }

    package func tracedEntries(matching key: String, limit: Int) throws -> [TracedEntry] {
        try rows("""
            SELECT \(Self.entryColumns), finished_at FROM outbox WHERE source_event_id = $1 OR source_event_id LIKE $2 ESCAPE '\\'
            ORDER BY id LIMIT $3
            """, [.text(key), .text(endsWithColonPattern(key)), .int(Int64(limit))]).compactMap(Self.tracedEntry)
    }

    package func tracedEntries(createdFrom from: Int64, to: Int64, limit: Int) throws -> [TracedEntry] {
        try rows("SELECT \(Self.entryColumns), finished_at FROM outbox WHERE created_at BETWEEN $1 AND $2 ORDER BY id LIMIT $3",
                 [.int(from), .int(to), .int(Int64(limit))]).compactMap(Self.tracedEntry)
    }

    /// An outbox row (`entryColumns`, then `finished_at`).
    static func tracedEntry(_ row: PostgresRow) -> TracedEntry? {
        guard let entry = entry(row),
              let (_, _, _, _, _, _, _, _, _, _, _, finished) =
                try? row.decode((Int64, String, String, String, String, Data, String, Int64, Int64, String?, Int64, Int64?).self) else { return nil }
        return TracedEntry(entry: entry, finishedAt: finished)
    }

    package func inboundDeadLetters(key: String) throws -> [InboundDeadLetter] {
        try rows("SELECT \(Self.inboundColumns) FROM inbound_dead_letters WHERE item_key = $1 ORDER BY id", [.text(key)]).map { row in
            let (id, backend, key, format, payload, reason, received, retries) =
                try row.decode((Int64, String, String, String, Data, String, Int64, Int64).self)
            return InboundDeadLetter(id: id, backend: BackendID(backend), key: key, format: format, payload: payload, reason: reason,
                                     receivedAt: received, retries: Int(retries))
        }
    }
}
