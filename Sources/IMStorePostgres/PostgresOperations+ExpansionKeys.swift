import Foundation
import IMCore
import IMStoreCore
import PostgresNIO

/// The expansion key records (`ExpansionKeyRecord`) in PostgreSQL.
extension PostgresOperations {
    /// Takes a transaction-scoped advisory lock per message, in one order for every caller (sorted by
    /// key, taken row by row as `unnest` gives them), in a statement of its own before the rows are read:
    /// a statement's snapshot is taken when it starts, so a read in the locking statement could miss what
    /// the lock waited for. Without it, two instances' transactions read a copy's records, both changed
    /// them, and the later write undid the other's (a write mark lost, the same carrier sent twice: seed
    /// 50, docs/reliability.md).
    package func lockExpansionKeys(of messages: [(MessageID, BackendID)]) throws {
        let keys = Set(messages.map { Self.expansionLockKey($0.0, on: $0.1) }).sorted()
        try session.query("SELECT pg_advisory_xact_lock(k) FROM unnest($1::bigint[]) AS k", [.ints(keys)])
    }

    /// The advisory lock key of one message's records: FNV-1a (64 bits) of the backend and message id
    /// (a collision only makes two messages' writers wait for each other).
    package static func expansionLockKey(_ message: MessageID, on backend: BackendID) -> Int64 {
        Int64(bitPattern: StableHash.fnv1a64("expansion_keys\u{0}\(backend.rawValue)\u{0}\(message.rawValue)"))
    }

    package func expansionKeys(of message: MessageID, on backend: BackendID) throws -> [String: ExpansionKeyRecord] {
        var records: [String: ExpansionKeyRecord] = [:]
        for row in try rows("""
            SELECT key, value, version, origin, held, held_known, held_at, written, written_known, written_earlier FROM expansion_keys
            WHERE backend = $1 AND message = $2
            """, [.text(backend.rawValue), .text(message.rawValue)]) {
            let (key, value, version, origin, held, heldKnown, heldAt, written, writtenKnown, earlier) =
                try row.decode((String, String?, Int64, String, String?, Bool, Int64, String?, Bool, String?).self)
            records[key] = ExpansionKeyRecord(key: key, value: value, version: version, origin: origin, held: .init(held, known: heldKnown),
                                              heldAt: heldAt, written: .init(written, known: writtenKnown),
                                              earlierWrites: ExpansionKeyRecord.earlierWrites(column: earlier))
        }
        return records
    }

    package func putExpansionKeys(_ records: [ExpansionKeyRecord], of message: MessageID, on backend: BackendID) throws {
        for record in records {
            let held = record.held.columns, written = record.written.columns
            try session.query("""
                INSERT INTO expansion_keys (backend, message, key, value, version, origin, held, held_known, held_at, written, written_known,
                    written_earlier)
                VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)
                ON CONFLICT (backend, message, key) DO UPDATE SET value = EXCLUDED.value, version = EXCLUDED.version,
                    origin = EXCLUDED.origin, held = EXCLUDED.held, held_known = EXCLUDED.held_known, held_at = EXCLUDED.held_at,
                    written = EXCLUDED.written, written_known = EXCLUDED.written_known, written_earlier = EXCLUDED.written_earlier
                """, [.text(backend.rawValue), .text(message.rawValue), .text(record.key), .textOrNull(record.value), .int(record.version),
                      .text(record.origin), .textOrNull(held.0), .bool(held.1), .int(record.heldAt), .textOrNull(written.0),
                      .bool(written.1), .textOrNull(record.earlierWritesColumn)])
        }
    }
}
