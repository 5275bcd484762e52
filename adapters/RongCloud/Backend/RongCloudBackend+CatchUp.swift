import IMAdapterKit
import IMCore

/// Catch-up (docs/architecture.md, "Catch-up"): a row of `/v3/message/*/query.json` becomes the event
/// message routing gives the same message (`msg:<msgUID>`). History is positioned by time, so a gap is
/// not visible in live traffic; a user's groups (`/user/group/query.json`) come from `GroupDirectory`
/// where the backend has it.
extension RongCloudBackend: CatchUpSource {
    public func catchUpEvent(for message: Message) -> IMEvent? {
        if case .command = message.content { return nil }
        return IMEvent(eventID: EventID("msg:\(message.id)"), backend: id, kind: .message(message))
    }

    public var gapSignal: CatchUpGapSignal { .none }
}

/// Changes made while the bridge was down (docs/adapters/rongcloud.md, "Changes while the bridge is
/// down"): RongCloud keeps no change feed the server API reads, but its history shows each message as
/// it is now — a recalled one as its `RC:RcNtf` notice, one recalled with `isDelete` not at all, an
/// extensible one with its current `extraContent` — so catch-up re-reads a window of it and compares.
extension RongCloudBackend: ChangeWindowSource {
    /// The conversation's messages sent at or after `sentSince`, oldest first (`/v3/message/*/query.json`).
    public func recentMessages(of conversation: ConversationRef, sentSince: Int64, viewer: UserID?) async throws -> [Message] {
        let reader = try HistoryReader(backend: self, query: HistoryQuery(conversation: conversation, anchor: .latest, limit: 1, viewer: viewer))
        // Strictly after (sentSince − 1, the highest uid): every message of `sentSince` and later.
        return try await reader.read(after: (sentSince - 1, "\u{10FFFF}"), upTo: .max)
    }

    /// `recall:<msgUID>`, as the routed `RC:RcCmd` gives it, by the notice's operator at its recall time.
    public func recallEvent(for message: Message) -> IMEvent? {
        recallEvent(for: message, eventIDPrefix: "")
    }

    /// A message gone from history was recalled with `isDelete` (RongCloud lets only its sender recall it):
    /// `delete:<msgUID>`, as the routed `RC:RcCmd` with `isDelete` gives it.
    public func absenceEvent(of message: MessageID, in conversation: ConversationRef, at: Int64, by sender: UserID?) -> IMEvent? {
        guard let sender else { return nil }
        return IMEvent(eventID: EventID("delete:\(message)"), backend: id,
                       kind: .deleted(messageID: message, conversation: conversation, by: sender, forUser: nil, at: at))
    }
}
