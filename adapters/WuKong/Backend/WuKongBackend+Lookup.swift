import IMCore

/// Finding a message by the `client_msg_no` it was sent with (`POST /messages` with `client_msg_nos`,
/// the batch form of `GET /message/byclientmsgno`). The bridge asks this before re-sending something
/// whose earlier attempt may have reached WuKongIM, so a crash between WuKongIM's accept and the
/// bridge's commit never writes a message twice.
extension WuKongBackend: ClientIDLookup {
    public func message(withClientID id: ClientMessageID, in conversation: ConversationRef, readingAs viewer: UserID?) async throws -> Message? {
        let lookup = try WuKongChannel.lookup(conversation, viewer: conversation.participants.first)
        let found = try await client.lookup(WKLookupRequest(loginUID: lookup.loginUID, channelID: lookup.id, channelType: lookup.type,
                                                            clientMsgNos: [id.rawValue]))
        guard let wire = found.first(where: { $0.clientMsgNo == id.rawValue }) else { return nil }
        return try codec.decode(wire)
    }
}
