import IMCore

/// Finding a message by the `client_msg_no` it was sent with (`POST /messages` with `client_msg_nos`,
/// the batch form of `GET /message/byclientmsgno`). The bridge asks this before re-sending something
/// whose earlier attempt may have reached WuKongIM, so a crash between WuKongIM's accept and the
/// bridge's commit never writes a message twice.
extension WuKongBackend: ClientIDLookup {
    public func message(withClientID id: ClientMessageID, in conversation: ConversationRef, readingAs viewer: UserID?) async throws -> Message? {
        try await messages(withClientID: id, in: conversation, readingAs: viewer).first
    }

    /// WuKongIM does not refuse a second send with a `client_msg_no` it has seen: both messages are kept and
    /// the lookup returns both (docs/adapters/wukong.md, "REST details", idempotency).
    public func messages(withClientID id: ClientMessageID, in conversation: ConversationRef, readingAs viewer: UserID?) async throws -> [Message] {
        let lookup = try WuKongChannel.lookup(conversation, viewer: conversation.participants.first)
        let found = try await client.lookup(WKLookupRequest(loginUID: lookup.loginUID, channelID: lookup.id, channelType: lookup.type,
                                                            clientMsgNos: [id.rawValue]))
        return try found.filter { $0.clientMsgNo == id.rawValue }.sorted { ($0.messageSeq ?? 0) < ($1.messageSeq ?? 0) }.map(codec.decode)
    }
}
