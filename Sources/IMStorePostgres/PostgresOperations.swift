import Foundation
import IMCore
import PostgresNIO
import IMStoreCore

/// The store contract's operations on PostgreSQL (semantics on `StoreTransaction`). Claiming a lane's
/// head is one statement (`UPDATE … RETURNING`), fenced by the lane's lease when an owner is given.
package struct PostgresOperations: StoreOperations {
    package let session: PostgresSession

    /// The server's clock in milliseconds since 1970, read when the statement runs: what leases are
    /// counted on (`StoreTransaction.takeLease`), the same for every instance, whatever their clocks say.
    package static let serverNow = "(EXTRACT(EPOCH FROM clock_timestamp()) * 1000)::BIGINT"

    package static let entryColumns = "id, lane, source_backend, source_event_id, kind, payload, state, attempts, next_attempt_at, last_error, created_at"

    package func rows(_ sql: String, _ values: [PostgresValue] = []) throws -> [PostgresRow] {
        Array(try session.query(sql, values).rows)
    }

    package func changed(_ sql: String, _ values: [PostgresValue]) throws -> Int {
        try session.query(sql, values).metadata.rows ?? 0
    }

    package func int(_ sql: String, _ values: [PostgresValue] = []) throws -> Int64? {
        guard let row = try rows(sql, values).first else { return nil }
        return try row.decode(Int64?.self)
    }

    /// An outbox row (`entryColumns`) as an entry; nil when a column does not decode.
    package static func entry(_ row: PostgresRow) -> OutboxEntry? {
        guard let (id, laneText, source, event, kind, payload, stateText, attempts, next, lastError, created) =
                try? row.decode((Int64, String, String, String, String, Data, String, Int64, Int64, String?, Int64).self),
              let lane = LaneKey(laneText), let state = OutboxEntry.State(rawValue: stateText) else { return nil }
        return OutboxEntry(id: id, lane: lane, sourceBackend: BackendID(source), sourceEventID: EventID(event), kind: kind, payload: payload,
                           state: state, attempts: Int(attempts), nextAttemptAt: next, lastError: lastError, createdAt: created)
    }

    // MARK: ledger

    package func recordEvent(_ backend: BackendID, _ eventID: EventID, kind: String, at now: Int64, origin: EventOrigin?) throws -> Bool {
        try changed("""
            INSERT INTO ledger (backend, event_id, kind, received_at, listener, instance) VALUES ($1, $2, $3, $4, $5, $6)
            ON CONFLICT DO NOTHING
            """, [.text(backend.rawValue), .text(eventID.rawValue), .text(kind), .int(now), .textOrNull(origin?.listener),
                  .textOrNull(origin?.instance)]) == 1
    }

    package func recordEvents(_ events: [StoreTransaction.InboundEvent], at now: Int64, origin: EventOrigin?) throws
        -> [StoreTransaction.EventRecord] {
        let rows = try rows("""
            WITH input AS (
              SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[]) WITH ORDINALITY AS t(backend, event_id, kind, message, n)
            ),
            ins AS (
              INSERT INTO ledger (backend, event_id, kind, received_at, listener, instance)
              SELECT backend, event_id, kind, $5, $6::text, $7::text FROM input
              ON CONFLICT DO NOTHING RETURNING backend, event_id
            )
            SELECT EXISTS (SELECT 1 FROM ins WHERE ins.backend = input.backend AND ins.event_id = input.event_id),
                   input.message <> '' AND EXISTS (SELECT 1 FROM id_map WHERE to_backend = input.backend AND to_message = input.message
                                                   AND bridge_created)
            FROM input ORDER BY input.n
            """, [.texts(events.map(\.backend.rawValue)), .texts(events.map(\.eventID.rawValue)), .texts(events.map(\.kind)),
                  .texts(events.map { $0.message?.rawValue ?? "" }), .int(now), .textOrNull(origin?.listener), .textOrNull(origin?.instance)])
        guard rows.count == events.count else { throw PostgresFailure(message: "postgres: the ledger insert returned \(rows.count) rows for \(events.count)") }
        return try rows.map { row in
            let (inserted, echo) = try row.decode((Bool, Bool).self)
            return !inserted ? .duplicate : echo ? .echo : .new
        }
    }

    package func enqueueAll(_ entries: [StoreTransaction.NewEntry], at now: Int64) throws -> [Int64] {
        let rows = try rows("""
            INSERT INTO outbox (lane, target_backend, source_backend, source_event_id, kind, payload, created_at, next_attempt_at)
            SELECT lane, target, source, event, kind, payload, $7, 0
            FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::bytea[]) WITH ORDINALITY
                 AS t(lane, target, source, event, kind, payload, n)
            ORDER BY n
            RETURNING id
            """, [.texts(entries.map(\.lane.description)), .texts(entries.map(\.lane.backend.rawValue)),
                  .texts(entries.map(\.sourceBackend.rawValue)), .texts(entries.map(\.sourceEventID.rawValue)),
                  .texts(entries.map(\.kind)), .byteArrays(entries.map(\.payload)), .int(now)])
        // Ids come from the sequence in the order the rows are inserted (the SELECT's order).
        let ids = try rows.map { try $0.decode(Int64.self) }.sorted()
        guard ids.count == entries.count else { throw PostgresFailure(message: "postgres: INSERT returned \(ids.count) ids for \(entries.count)") }
        return ids
    }

    package func ledgerCount() throws -> Int { Int(try int("SELECT COUNT(*) FROM ledger") ?? 0) }

    // MARK: pruning

    package func prune(before cutoff: Int64, limit: Int) throws -> StoreTransaction.Pruned {
        let oldestPending = try int("SELECT MIN(created_at) FROM outbox WHERE state = 'pending'")
        let ledgerCutoff = min(cutoff, oldestPending ?? .max)
        var pruned = StoreTransaction.Pruned()
        pruned.outbox = try changed("""
            DELETE FROM outbox WHERE id IN (SELECT id FROM outbox WHERE state = 'done' AND finished_at < $1 ORDER BY finished_at LIMIT $2)
            """, [.int(cutoff), .int(Int64(limit))])
        pruned.ledger = try changed("""
            DELETE FROM ledger WHERE (backend, event_id) IN (SELECT backend, event_id FROM ledger WHERE received_at < $1
                                                             ORDER BY received_at LIMIT $2)
            """, [.int(ledgerCutoff), .int(Int64(limit))])
        pruned.attempts = try changed("""
            DELETE FROM attempts WHERE (outbox_id, attempt, at) IN (
                SELECT a.outbox_id, a.attempt, a.at FROM attempts a
                WHERE a.at < $1 AND NOT EXISTS (SELECT 1 FROM outbox o WHERE o.id = a.outbox_id AND o.state <> 'done')
                ORDER BY a.at LIMIT $2)
            """, [.int(cutoff), .int(Int64(limit))])
        return pruned
    }

    // MARK: id map

    /// `sentAt` travels as `Int64.min` for "unknown" (NULL in the table).
    package func map(source: (BackendID, MessageID, ConversationRef), target: (BackendID, MessageID, ConversationRef), sentAt: Int64?, sender: UserID?,
             at now: Int64) throws {
        try session.query("""
            INSERT INTO id_map (from_backend, from_message, to_backend, to_message, to_conversation, bridge_created, created_at, source_time, source_sender)
            VALUES ($1, $2, $3, $4, $5, TRUE, $7, NULLIF($8, \(Int64.min)), $9), ($3, $4, $1, $2, $6, FALSE, $7, NULLIF($8, \(Int64.min)), $9)
            ON CONFLICT (from_backend, from_message, to_backend) DO UPDATE SET to_message = EXCLUDED.to_message,
                to_conversation = EXCLUDED.to_conversation, bridge_created = EXCLUDED.bridge_created, created_at = EXCLUDED.created_at,
                source_time = EXCLUDED.source_time, source_sender = EXCLUDED.source_sender
            """, [.text(source.0.rawValue), .text(source.1.rawValue), .text(target.0.rawValue), .text(target.1.rawValue),
                  .text(target.2.description), .text(source.2.description), .int(now), .int(sentAt ?? .min), .textOrNull(sender?.rawValue)])
    }

    package func mapped(_ message: MessageID, from: BackendID, to: BackendID) throws -> MessageMapping? {
        guard let row = try rows("""
            SELECT from_backend, from_message, to_backend, to_message, to_conversation, bridge_created, created_at FROM id_map
            WHERE from_backend = $1 AND from_message = $2 AND to_backend = $3
            """, [.text(from.rawValue), .text(message.rawValue), .text(to.rawValue)]).first else { return nil }
        let (fromBackend, fromMessage, toBackend, toMessage, conversation, created, at) = try row.decode((String, String, String, String, String, Bool, Int64).self)
        guard let toConversation = try? ConversationRef(parsing: conversation) else { return nil }
        return MessageMapping(fromBackend: BackendID(fromBackend), fromMessage: MessageID(fromMessage), toBackend: BackendID(toBackend),
                              toMessage: MessageID(toMessage), toConversation: toConversation, bridgeCreated: created, createdAt: at)
    }

    package func isBridgeCreated(_ message: MessageID, on backend: BackendID) throws -> Bool {
        try !rows("SELECT 1 FROM id_map WHERE to_backend = $1 AND to_message = $2 AND bridge_created LIMIT 1",
                  [.text(backend.rawValue), .text(message.rawValue)]).isEmpty
    }

    package func mappingCount() throws -> Int { Int(try int("SELECT COUNT(*) FROM id_map WHERE bridge_created") ?? 0) }

    package func sourceClockLead(of backend: BackendID, sample: Int) throws -> Int64? {
        try int("""
            SELECT MIN(created_at - source_time) FROM (SELECT created_at, source_time FROM id_map
            WHERE from_backend = $1 AND bridge_created AND source_time IS NOT NULL ORDER BY created_at DESC LIMIT $2) AS recent
            """, [.text(backend.rawValue), .int(Int64(sample))])
    }

    // MARK: checkpoints

    package func hasEvent(_ backend: BackendID, _ eventID: EventID) throws -> Bool {
        try !rows("SELECT 1 FROM ledger WHERE backend = $1 AND event_id = $2", [.text(backend.rawValue), .text(eventID.rawValue)]).isEmpty
    }

    package func checkpoint(_ name: String) throws -> String? {
        try rows("SELECT value FROM checkpoints WHERE name = $1", [.text(name)]).first.map { try $0.decode(String.self) }
    }

    package func checkpoints(prefix: String) throws -> [(name: String, value: String)] {
        try rows("SELECT name, value FROM checkpoints WHERE left(name, $1::int) = $2 ORDER BY name", [.int(Int64(prefix.count)), .text(prefix)])
            .map { row in
                let (name, value) = try row.decode((String, String).self)
                return (name: name, value: value)
            }
    }

    package func setCheckpoint(_ name: String, _ value: String, at now: Int64) throws {
        try session.query("""
            INSERT INTO checkpoints (name, value, updated_at) VALUES ($1, $2, $3)
            ON CONFLICT (name) DO UPDATE SET value = EXCLUDED.value, updated_at = EXCLUDED.updated_at
            """, [.text(name), .text(value), .int(now)])
    }
}
