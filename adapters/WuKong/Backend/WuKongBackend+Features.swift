import Foundation
import IMAdapterKit
import IMCore

/// Recall, edit, expansion, reactions and read receipts through the business server. Who-may rules
/// of the capabilities (sender-only recall and edit) are checked first against the stored message
/// (`/messages`), so the refusal is `permission_denied` rather than the server's 400 text.
extension WuKongBackend: Recalling, Editing, ExpansionUpdating, Reacting, ReadReceipting, UserProvisioning {
    /// The stored message `id` of `conversation`, looked up as `viewer`.
    func stored(_ id: MessageID, in conversation: ConversationRef, viewer: UserID) async throws -> WKMessage {
        guard let number = Int64(id.rawValue) else { throw IMError(.notFound, "'\(id)' is not a WuKong message id") }
        let lookup = try WuKongChannel.lookup(conversation, viewer: viewer)
        let found = try await client.lookup(WKLookupRequest(loginUID: lookup.loginUID, channelID: lookup.id, channelType: lookup.type,
                                                            messageIDs: [number]))
        guard let message = found.first(where: { $0.messageID == number }) else {
            throw IMError(.notFound, "message \(id) not found in \(conversation)")
        }
        return message
    }

    func address(_ conversation: ConversationRef, actor: UserID) throws -> (id: String, type: UInt8) {
        let lookup = try WuKongChannel.lookup(conversation, viewer: actor)
        return (lookup.id, lookup.type)
    }

    public func recall(_ message: MessageID, in conversation: ConversationRef, by user: UserID) async throws {
        try capabilities.require(.recall)
        let wire = try await stored(message, in: conversation, viewer: user)
        let sender = wire.fromUID.isEmpty ? WuKongChannel.systemUID : wire.fromUID
        if capabilities.recallBySenderOnly, sender != user.rawValue {
            throw IMError(.permissionDenied, "only the sender \(sender) may recall \(message); \(user) tried")
        }
        if try await currentExtras(conversation)[message.rawValue]?.revoke == 1 {
            throw IMError(.alreadyRecalled, "message \(message) is already recalled")
        }
        let address = try address(conversation, actor: user)
        try await client.revoke(messageID: message.rawValue, clientMsgNo: wire.clientMsgNo, channelID: address.id,
                                channelType: address.type, session: try await session(user))
    }

    public func edit(_ message: MessageID, in conversation: ConversationRef, by user: UserID, content: MessageContent) async throws {
        try capabilities.require(.edit)
        try capabilities.check(content)
        let wire = try await stored(message, in: conversation, viewer: user)
        if capabilities.editBySenderOnly, wire.fromUID != user.rawValue {
            throw IMError(.permissionDenied, "only the sender \(wire.fromUID) may edit \(message); \(user) tried")
        }
        let address = try address(conversation, actor: user)
        let json = JSONValue.object(try codec.content.encode(content)).jsonString()
        try await client.edit(WKEditRequest(messageID: message.rawValue, messageSeq: wire.messageSeq, channelID: address.id,
                                            channelType: address.type, contentEdit: json), session: try await session(user))
    }

    /// Reads the message's remote `extra`; nil `extra` = sent without expansion.
    public func expansion(of message: MessageID, in conversation: ConversationRef) async throws -> Expansion {
        try capabilities.require(.expansion)
        guard let row = try await currentExtras(conversation)[message.rawValue], let extra = row.extra else {
            throw IMError(.expansionNotEnabled, "message \(message) was sent without expansion")
        }
        return Expansion(initial: extra, version: row.extraVersion)
    }

    /// Validates against the limits, applies the change to the current dictionary and writes the whole
    /// dictionary back (`POST /v1/message/extra`). Concurrent writers: the last write wins.
    public func updateExpansion(of message: MessageID, in conversation: ConversationRef, by user: UserID,
                                _ change: ExpansionChange) async throws -> ExpansionDelta {
        var current = try await expansion(of: message, in: conversation)
        try (capabilities.expansionLimits ?? .rongCloud).validate(change, current: current, caller: capabilities.expansionCaller)
        let over = current.version
        let delta = current.apply(change)
        guard !delta.isEmpty else { return delta }
        let address = try address(conversation, actor: user)
        try await client.updateExtra(WKExtraUpdateRequest(messageID: message.rawValue, channelID: address.id, channelType: address.type,
                                                          extra: current.values), session: try await session(user))
        await sync.wrote(current.values, over: over, message: message)
        return delta
    }

    public func toggleReaction(_ emoji: String, on message: MessageID, in conversation: ConversationRef,
                               by user: UserID) async throws -> Bool {
        try capabilities.require(.reactions)
        guard !emoji.isEmpty else { throw IMError(.invalidArgument, "emoji must not be empty") }
        let address = try address(conversation, actor: user)
        try await client.react(WKReactionRequest(messageID: message.rawValue, channelID: address.id, channelType: address.type,
                                                 emoji: emoji), session: try await session(user))
        return try await reactions(on: message, in: conversation).contains { $0.user == user && $0.emoji == emoji }
    }

    public func reactions(on message: MessageID, in conversation: ConversationRef) async throws -> [Reaction] {
        try capabilities.require(.reactions)
        return try await currentReactions(conversation)[message.rawValue] ?? []
    }

    /// Marks read every message of others up to and including `upTo` (at most the 100 before it).
    public func markRead(_ conversation: ConversationRef, by user: UserID, upTo message: MessageID) async throws {
        try capabilities.require(.readReceipts)
        let target = try await stored(message, in: conversation, viewer: user)
        let lookup = try WuKongChannel.lookup(conversation, viewer: user)
        let page = try await client.messageSync(WKMessageSyncRequest(loginUID: user.rawValue, channelID: lookup.id, channelType: lookup.type,
                                                                     startMessageSeq: target.messageSeq, endMessageSeq: 0, limit: 100,
                                                                     pullMode: 0))
        let ids = page.messages.filter { $0.fromUID != user.rawValue }.map { String($0.messageID) }
        guard !ids.isEmpty else { return }
        try await client.readed(WKReadedRequest(messageIDs: ids, channelID: lookup.id, channelType: lookup.type),
                                session: try await session(user))
    }

    public func readCounts(of message: MessageID, in conversation: ConversationRef) async throws -> ReadCounts {
        try capabilities.require(.readReceipts)
        let row = try await currentExtras(conversation)[message.rawValue]
        let read = row?.readedCount ?? 0
        let unread = row?.unreadCount ?? (conversation.kind == .direct ? max(0, 1 - read) : 0)
        return ReadCounts(read: read, unread: unread)
    }

    /// Registers the user with WuKongIM (`/user/token`, which creates it); idempotent.
    public func ensureUser(_ profile: UserProfile) async throws {
        _ = try await session(profile.id)
    }

    /// Adds or removes group subscribers (`/channel/subscriber_add`, `/channel/subscriber_remove`).
    public func setMembers(_ members: [UserID], of group: GroupID, present: Bool) async throws {
        let request = WKChannelRequest(channelID: group.rawValue, channelType: WKChannelType.group, subscribers: members.map(\.rawValue))
        if present { try await client.addSubscribers(request) } else { try await client.removeSubscribers(request) }
    }

    /// Creates or updates a group channel with these subscribers (`/channel`).
    public func ensureGroup(_ group: GroupID, members: [UserID]) async throws {
        try await client.createChannel(WKChannelRequest(channelID: group.rawValue, channelType: WKChannelType.group,
                                                        subscribers: members.map(\.rawValue)))
    }
}

/// An earlier send's copy found without its expansion (the kill or failure fell between `/message/send`
/// and the `extra` write): the initial dictionary is written now, as `send` would have.
extension WuKongBackend: ExpansionEnabling {
    public func enableExpansion(of message: MessageID, in conversation: ConversationRef, by user: UserID,
                                initial: [String: String]) async throws {
        if try await currentExtras(conversation)[message.rawValue]?.extra != nil { return }
        let address = try address(conversation, actor: user)
        await sync.seed(extra: initial, message: message, in: conversation)
        try await client.updateExtra(WKExtraUpdateRequest(messageID: message.rawValue, channelID: address.id, channelType: address.type,
                                                          extra: initial), session: try await session(user))
    }
}
