import Foundation
import IMCore
import IMStoreCore
import PostgresNIO

/// The expansion key records (`ExpansionKeyRecord`) in PostgreSQL.
extension PostgresOperations {
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
