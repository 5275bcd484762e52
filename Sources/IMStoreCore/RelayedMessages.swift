import Foundation
import IMCore

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
