import Foundation
import IMCore
import IMStoreCore
import PostgresNIO

/// Callback marks (`StoreTransaction.rememberCallback`) in PostgreSQL: one statement decides, so two
/// instances given the same signature at once agree on which saw it first.
extension PostgresOperations {
    package func rememberCallback(_ mark: CallbackMark, at now: Int64) throws -> CallbackMark.Outcome {
        let inserted = try changed("""
            INSERT INTO callback_marks (backend, mark, body_digest, expires_at) VALUES ($1, $2, $3, $4)
            ON CONFLICT (backend, mark) DO UPDATE SET body_digest = EXCLUDED.body_digest, expires_at = EXCLUDED.expires_at
                WHERE callback_marks.expires_at < $5
            """, [.text(mark.backend.rawValue), .text(mark.key), .text(mark.bodyDigest), .int(mark.expiresAt), .int(now)])
        if inserted == 1 { return .first }
        let found = try rows("SELECT body_digest FROM callback_marks WHERE backend = $1 AND mark = $2",
                             [.text(mark.backend.rawValue), .text(mark.key)])
        let digest = try found.first?.decode(String.self)
        return digest == mark.bodyDigest ? .redelivery : .reused
    }

    package func forgetCallbackMarks(expiredBefore now: Int64, limit: Int) throws -> Int {
        try changed("""
            DELETE FROM callback_marks WHERE ctid IN (SELECT ctid FROM callback_marks WHERE expires_at < $1 LIMIT $2)
            """, [.int(now), .int(Int64(limit))])
    }
}
