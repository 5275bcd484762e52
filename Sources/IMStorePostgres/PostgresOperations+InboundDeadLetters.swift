import Foundation
import IMCore
import PostgresNIO
import IMStoreCore

/// Inbound dead letters (poison messages) on PostgreSQL.
extension PostgresOperations {
    package static let inboundColumns = "id, backend, item_key, format, payload, reason, received_at, retries"

    package func keepInbound(backend: BackendID, key: String, format: String, payload: Data, reason: String, at now: Int64) throws -> Bool {
        try changed("""
            INSERT INTO inbound_dead_letters (backend, item_key, format, payload, reason, received_at) VALUES ($1, $2, $3, $4, $5, $6)
            ON CONFLICT DO NOTHING
            """, [.text(backend.rawValue), .text(key), .text(format), .bytes(payload), .text(reason), .int(now)]) == 1
    }

    package func inboundDeadLetters(ids: [Int64]?, limit: Int) throws -> [InboundDeadLetter] {
        let found: [PostgresRow]
        if let ids {
            found = try rows("SELECT \(Self.inboundColumns) FROM inbound_dead_letters WHERE id = ANY($1) ORDER BY id LIMIT $2",
                             [.ints(ids), .int(Int64(limit))])
        } else {
            found = try rows("SELECT \(Self.inboundColumns) FROM inbound_dead_letters ORDER BY id LIMIT $1", [.int(Int64(limit))])
        }
        return try found.map { row in
            let (id, backend, key, format, payload, reason, received, retries) =
                try row.decode((Int64, String, String, String, Data, String, Int64, Int64).self)
            return InboundDeadLetter(id: id, backend: BackendID(backend), key: key, format: format, payload: payload, reason: reason,
                                     receivedAt: received, retries: Int(retries))
        }
    }

    package func removeInboundDeadLetter(_ id: Int64) throws {
        try session.query("DELETE FROM inbound_dead_letters WHERE id = $1", [.int(id)])
    }

    package func failedInboundRetry(_ id: Int64, reason: String) throws {
        try session.query("UPDATE inbound_dead_letters SET reason = $1, retries = retries + 1 WHERE id = $2", [.text(reason), .int(id)])
    }

    package func inboundDeadLetterCount() throws -> Int { Int(try int("SELECT COUNT(*) FROM inbound_dead_letters") ?? 0) }
}
