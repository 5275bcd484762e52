import Foundation
import GRDB
import IMCore
import IMStoreCore

// The reverse row of a relay (`bridge_created` false) names the source message as `to_message` in the
// source's conversation (`to_conversation`); one per copy, so the ids are made distinct.

extension SQLiteOperations {
    package func relayedMessages(from backend: BackendID, in conversation: ConversationRef, sentSince: Int64, limit: Int) throws -> [RelayedMessage] {
        try Row.fetchAll(db.cachedStatement(sql: """
            SELECT to_message, MIN(source_time) AS sent_at, MAX(source_sender) AS sender FROM id_map
            WHERE to_backend = ? AND to_conversation = ? AND bridge_created = 0 AND source_time IS NOT NULL AND source_time >= ?
            GROUP BY to_message ORDER BY sent_at, to_message LIMIT ?
            """), arguments: [backend.rawValue, conversation.description, sentSince, limit]).map { row in
            RelayedMessage(id: MessageID(row["to_message"] as String), sentAt: row["sent_at"], sender: (row["sender"] as String?).map(UserID.init))
        }
    }
}
