import Foundation
import IMCore

/// Conversation lists over `/conversation/sync` (person entries name the peer; `recents[0]` is the
/// last message; `unread` is WuKongIM's seq arithmetic). WuKongIM keeps no mute state, so `setMuted`
/// is refused and nothing is reported muted (hence `conversationList: partial`).
extension WuKongBackend: ConversationListing, ConversationStateSetting {
    /// `POST /conversations/clearUnread`: the user's read-to becomes the channel's last seq.
    public func clearUnread(in conversation: ConversationRef, for user: UserID) async throws {
        let lookup = try WuKongChannel.lookup(conversation, viewer: user)
        try await client.clearUnread(WKClearUnreadRequest(uid: user.rawValue, channelID: lookup.id, channelType: lookup.type))
    }

    public func setPinned(_ pinned: Bool, conversation: ConversationRef, for user: UserID) async throws {
        throw Self.notOffered(.pinning)
    }

    public func reminders(in conversation: ConversationRef, for user: UserID) async throws -> [ConversationReminder] {
        throw Self.notOffered(.reminders)
    }

    public func markReminderDone(_ message: MessageID, in conversation: ConversationRef, for user: UserID) async throws {
        throw Self.notOffered(.reminders)
    }

    static func notOffered(_ operation: ConversationStateOperation) -> IMError {
        IMError(.unsupported, "WuKong's \(operation.rawValue) lives in the business server, whose API for it is not documented",
                details: ["feature": Feature.conversationList.rawValue, "operation": operation.rawValue])
    }

    public func conversations(for user: UserID) async throws -> [ConversationSummary] {
        let entries = try await client.conversations(WKConversationSyncRequest(uid: user.rawValue, msgCount: 1))
        return entries.map { entry in
            let conversation = WuKongChannel.conversation(peerOrChannel: entry.channelID, channelType: entry.channelType,
                                                          viewer: user.rawValue)
            let last = entry.recents.first.flatMap { try? codec.decode($0) }
            let mentionsMe = last.map { $0.sender != user && $0.mentions.mentions(user) && entry.unread > 0 } ?? false
            return ConversationSummary(conversation: conversation, lastMessage: last, unreadCount: entry.unread, isMuted: false,
                                       updatedAt: entry.timestamp * 1000, mentionsMe: mentionsMe)
        }
        .sorted { $0.updatedAt > $1.updatedAt }
    }

    public func unreadCount(in conversation: ConversationRef, for user: UserID) async throws -> Int {
        try await conversations(for: user).first { $0.conversation == conversation }?.unreadCount ?? 0
    }

    public func totalUnread(for user: UserID) async throws -> Int {
        try await conversations(for: user).reduce(0) { $0 + $1.unreadCount }
    }

    public func setMuted(_ muted: Bool, conversation: ConversationRef, for user: UserID) async throws {
        throw IMError(.unsupported, "WuKongIM keeps no mute state (the business server's channel settings are not modelled)",
                      details: ["feature": Feature.conversationList.rawValue])
    }
}
