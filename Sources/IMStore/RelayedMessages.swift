import Foundation
import GRDB
import IMCore
import PostgresNIO

/// A source message the bridge relayed (it has an id-map row to at least one copy), with its own time
/// and sender.
public struct RelayedMessage: Sendable, Hashable {
    public var id: MessageID
    public var sentAt: Int64
    public var sender: UserID?

    public init(id: MessageID, sentAt: Int64, sender: UserID? = nil) {
        self.id = id
        self.sentAt = sentAt
        self.sender = sender
    }
}

extension StoreTransaction {
    /// The messages of `conversation` on `backend` that the bridge relayed (copied elsewhere) and that were
    /// sent at or after `sentSince`, oldest first, at most `limit`: what catch-up compares with the source's
    /// history to find the ones deleted meanwhile (docs/architecture.md, "Catch-up of changes"). Only
    /// id-map rows written since schema version 8 carry the time, so older relays are not listed.
    public func relayedMessages(from backend: BackendID, in conversation: ConversationRef, sentSince: Int64,
                                limit: Int = 10_000) throws -> [RelayedMessage] {
        try ops.relayedMessages(from: backend, in: conversation, sentSince: sentSince, limit: limit)
    }
}

// The reverse row of a relay (`bridge_created` false) names the source message as `to_message` in the
// source's conversation (`to_conversation`); one per copy, so the ids are made distinct.

extension SQLiteOperations {
    func relayedMessages(from backend: BackendID, in conversation: ConversationRef, sentSince: Int64, limit: Int) throws -> [RelayedMessage] {
        try Row.fetchAll(db.cachedStatement(sql: """
            SELECT to_message, MIN(source_time) AS sent_at, MAX(source_sender) AS sender FROM id_map
            WHERE to_backend = ? AND to_conversation = ? AND bridge_created = 0 AND source_time IS NOT NULL AND source_time >= ?
            GROUP BY to_message ORDER BY sent_at, to_message LIMIT ?
            """), arguments: [backend.rawValue, conversation.description, sentSince, limit]).map { row in
            RelayedMessage(id: MessageID(row["to_message"] as String), sentAt: row["sent_at"], sender: (row["sender"] as String?).map(UserID.init))
        }
    }
}

extension PostgresOperations {
    func relayedMessages(from backend: BackendID, in conversation: ConversationRef, sentSince: Int64, limit: Int) throws -> [RelayedMessage] {
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
