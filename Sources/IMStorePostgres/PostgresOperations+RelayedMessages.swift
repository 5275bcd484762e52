import Foundation
import IMCore
import IMStoreCore
import PostgresNIO

// The reverse row of a relay (`bridge_created` false) names the source message as `to_message` in the
// source's conversation (`to_conversation`); one per copy, so the ids are made distinct.

extension PostgresOperations {
    package func relayedMessages(from backend: BackendID, in conversation: ConversationRef, sentSince: Int64, limit: Int) throws -> [RelayedMessage] {
        try rows("""
            SELECT to_message, MIN(source_time) AS sent_at, MAX(source_sender) AS sender FROM id_map
            WHERE to_backend = $1 AND to_conversation = $2 AND NOT bridge_created AND source_time IS NOT NULL AND source_time >= $3
            GROUP BY to_message ORDER BY sent_at, to_message LIMIT $4
            """, [.text(backend.rawValue), .text(conversation.description), .int(sentSince), .int(Int64(limit))]).map { row in
            let (id, sentAt, sender) = try row.decode((String, Int64, String?).self)
            return RelayedMessage(id: MessageID(id), sentAt: sentAt, sender: sender.map(UserID.init))
        }
    }
}
