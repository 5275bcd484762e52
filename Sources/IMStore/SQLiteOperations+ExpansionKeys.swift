import Foundation
import GRDB
import IMCore
import IMStoreCore

/// The expansion key records (`ExpansionKeyRecord`) in SQLite.
extension SQLiteOperations {
    /// Nothing to do: one process writes a SQLite store, one transaction at a time.
    package func lockExpansionKeys(of messages: [(MessageID, BackendID)]) throws {}

    package func expansionKeys(of message: MessageID, on backend: BackendID) throws -> [String: ExpansionKeyRecord] {
        var records: [String: ExpansionKeyRecord] = [:]
        for row in try Row.fetchAll(db.cachedStatement(sql: "SELECT * FROM expansion_keys WHERE backend = ? AND message = ?"),
                                    arguments: [backend.rawValue, message.rawValue]) {
            let record = ExpansionKeyRecord(key: row["key"], value: row["value"], version: row["version"], origin: row["origin"],
                                            held: .init(row["held"], known: row["held_known"]), heldAt: row["held_at"],
                                            written: .init(row["written"], known: row["written_known"]),
                                            earlierWrites: ExpansionKeyRecord.earlierWrites(column: row["written_earlier"]))
            records[record.key] = record
        }
        return records
    }

    package func putExpansionKeys(_ records: [ExpansionKeyRecord], of message: MessageID, on backend: BackendID) throws {
        let statement = try db.cachedStatement(sql: """
            INSERT OR REPLACE INTO expansion_keys (backend, message, key, value, version, origin, held, held_known, held_at, written,
                written_known, written_earlier)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
            """)
        for record in records {
            let held = record.held.columns, written = record.written.columns
            try statement.execute(arguments: [backend.rawValue, message.rawValue, record.key, record.value, record.version, record.origin,
                                              held.0, held.1, record.heldAt, written.0, written.1,
                                              record.earlierWritesColumn])
        }
    }
}
