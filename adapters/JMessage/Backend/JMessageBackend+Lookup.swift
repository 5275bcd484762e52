import IMCore

/// Finding messages by client id and listing conversations, both over report v2.
extension JMessageBackend: ClientIDLookup, ConversationDiscovery {
    /// The message sent with `id` (carried as `extras.imbridge_client_id`, JMessage has no client-id
    /// field), searched newest window first over the 60 days report v2 keeps; nil when absent.
    public func message(withClientID id: ClientMessageID, in conversation: ConversationRef, readingAs viewer: UserID?) async throws -> Message? {
        let paths = try reportPaths(for: conversation)
        let now = clock.nowMs() + Self.clockSlackMs
        let edge = now - Self.retentionMs - Self.clockSlackMs
        var end = now
        while end > edge {
            let begin = max(edge, end - Self.windowMs)
            for path in paths {
                let found = try await window(path, begin: begin - 1000, end: end + 1000)
                    .last { $0.clientMessageID == id && $0.conversation == conversation }
                if var found {
                    if let recall = state.withLock({ $0.recalled[found.id] }) { found.recall = recall }
                    return found
                }
            }
            end = begin
        }
        return nil
    }

    /// Every conversation with a message in the last 60 days (`/v2/messages`), in order of first
    /// appearance. Conversations without messages in that span are not visible to report v2.
    public func allConversations() async throws -> [ConversationRef] {
        let now = clock.nowMs() + Self.clockSlackMs
        var start = now - Self.retentionMs
        var seen: Set<ConversationRef> = []
        var ordered: [ConversationRef] = []
        while start < now {
            let end = min(now, start + Self.windowMs)
            for message in try await window("/v2/messages", begin: start - 1000, end: end + 1000)
            where seen.insert(message.conversation).inserted {
                ordered.append(message.conversation)
            }
            start = end
        }
        return ordered
    }
}
