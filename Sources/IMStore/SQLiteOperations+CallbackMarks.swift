import Foundation
import GRDB
import IMCore
import IMStoreCore

/// Callback marks (`StoreTransaction.rememberCallback`) in SQLite.
extension SQLiteOperations {
    package func rememberCallback(_ mark: CallbackMark, at now: Int64) throws -> CallbackMark.Outcome {
        try db.cachedStatement(sql: """
            INSERT INTO callback_marks (backend, mark, body_digest, expires_at) VALUES (?, ?, ?, ?)
            ON CONFLICT (backend, mark) DO UPDATE SET body_digest = excluded.body_digest, expires_at = excluded.expires_at
                WHERE callback_marks.expires_at < ?
            """).execute(arguments: [mark.backend.rawValue, mark.key, mark.bodyDigest, mark.expiresAt, now])
        if db.changesCount == 1 { return .first }
        let digest = try String.fetchOne(db.cachedStatement(sql: "SELECT body_digest FROM callback_marks WHERE backend = ? AND mark = ?"),
                                         arguments: [mark.backend.rawValue, mark.key])
        return digest == mark.bodyDigest ? .redelivery : .reused
    }

    package func forgetCallbackMarks(expiredBefore now: Int64, limit: Int) throws -> Int {
        try db.cachedStatement(sql: """
            DELETE FROM callback_marks WHERE rowid IN (SELECT rowid FROM callback_marks WHERE expires_at < ? LIMIT ?)
            """).execute(arguments: [now, limit])
        return db.changesCount
    }
}
