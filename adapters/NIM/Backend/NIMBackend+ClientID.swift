import IMCore

extension NIMBackend {
    /// Looks for a message sent with `id` (carried in `ext`, see `NIMExtension`) among the newest `clientIDWindow`
    /// of the conversation (NIM v1 has no lookup by client id; a bridge asks right after a crash, so the
    /// message, if it got through, is recent): the newest of `messages(withClientID:)`. Messages this
    /// process sent are found without a call.
    public func message(withClientID id: ClientMessageID, in conversation: ConversationRef, readingAs viewer: UserID?) async throws -> Message? {
        if let known = state.withLock({ state in state.clientIDs[id].flatMap { state.recent[$0] } }) { return known }
        return try await messages(withClientID: id, in: conversation, readingAs: viewer).last
    }

    /// How many of the conversation's newest messages a lookup reads (five history calls): the window the
    /// earlier-copy search of targets without client ids reads too. A copy behind more messages than this
    /// is not found (docs/limits.md).
    public static let clientIDWindow = 500

    /// Every message sent with `id` among the newest `clientIDWindow`, oldest first: NIM keeps two sends with one client id
    /// as two messages (the id is only an `ext` field), as two instances' attempts of one entry leave them.
    /// Always read from history, not from what this process sent. A team is read as `viewer` (the copy's
    /// sender, a member since it wrote there), else `teamQueryAccid`. A team that does not exist (803) holds
    /// no copy: none, so the send itself goes ahead and meets NIM's refusal — a failing lookup would be
    /// tried again for ever.
    public func messages(withClientID id: ClientMessageID, in conversation: ConversationRef, readingAs viewer: UserID?) async throws -> [Message] {
        let viewer: UserID? = conversation.kind == .group ? viewer ?? teamQueryAccid.map { UserID($0) } : nil
        let page: HistoryPage
        do {
            page = try await history(HistoryQuery(conversation: conversation, anchor: .latest, limit: Self.clientIDWindow, viewer: viewer))
        } catch let error as IMError where conversation.kind == .group && error.vendorCode == String(NIMErrors.noSuchTeam.code) {
            return []
        }
        return page.messages.filter { $0.clientMessageID == id }
    }
}
