import IMAdapterKit
import IMCore

/// Catch-up (docs/architecture.md, "Catch-up"): a message of `/history/query*` becomes the event the
/// message copy gives it (`nim:msg:<msgid>`). History is positioned by time, so a gap is not visible in
/// live traffic; a user's teams (`/team/joinTeams.action`) come from `GroupDirectory` where the backend
/// has it.
extension NIMBackend: CatchUpSource {
    public func catchUpEvent(for message: Message) -> IMEvent? {
        if case .command = message.content { return nil }
        // An expansion carrier is a change to another message, as the copy's events make it.
        if let change = NIMExpansionCarrier.event(for: message, backend: id) { return change }
        return IMEvent(eventID: EventID("nim:msg:\(message.id)"), backend: id, kind: .message(message))
    }

    public var gapSignal: CatchUpGapSignal { .none }
}

/// Changes made while the bridge was down (docs/adapters/nim.md, "Changes while the bridge is down"):
/// NIM keeps no change feed, and its history drops a recalled message — so a relayed message missing from
/// a re-read window of history was recalled; an expansion change travels as a carrier message, which
/// catch-up reads like any other (`catchUpEvent`).
extension NIMBackend: ChangeWindowSource {
    public func recentMessages(of conversation: ConversationRef, sentSince: Int64, viewer: UserID?) async throws -> [Message] {
        var anchor = HistoryAnchor.after(NIMHistoryKey(time: sentSince - 1, msgid: .max).cursor)
        var messages: [Message] = []
        while true {
            let page = try await history(HistoryQuery(conversation: conversation, anchor: anchor, limit: 100, viewer: viewer))
            messages += page.messages
            guard page.hasNewer, let next = page.newerCursor, !page.messages.isEmpty else { return messages }
            anchor = .after(next)
        }
    }

    /// `nim:recall:<msgid>`, as the recall copy gives it (a message this process saw recalled).
    public func recallEvent(for message: Message) -> IMEvent? {
        recallEvent(for: message, eventIDPrefix: "nim:")
    }

    /// Whether team or session history still lists `message` at its time, not recalled: read from its
    /// millisecond on (`/history/query*`, the same window reads as catch-up; a team as the message's
    /// sender, who was a member when sending it) until past it. False when history has dropped it — NIM
    /// drops a recalled message (docs/adapters/nim.md, "Changes while the bridge is down") — or this
    /// process saw it recalled (a tombstone).
    public func showsInHistory(_ message: Message) async throws -> Bool? {
        guard let msgid = Int64(message.id.rawValue) else { return nil }
        let target = NIMHistoryKey(time: message.sentAt, msgid: msgid)
        var anchor = HistoryAnchor.after(NIMHistoryKey(time: message.sentAt - 1, msgid: .max).cursor)
        while true {
            let page = try await history(HistoryQuery(conversation: message.conversation, anchor: anchor, limit: 100, viewer: message.sender))
            if let found = page.messages.first(where: { $0.id == message.id }) { return found.recall == nil }
            guard page.hasNewer, let next = page.newerCursor, let last = page.messages.last,
                  let lastID = Int64(last.id.rawValue), NIMHistoryKey(time: last.sentAt, msgid: lastID) < target else { return false }
            anchor = .after(next)
        }
    }

    /// NIM lists no recalled message: one a page lists recalled is this process's tombstone (`history`).
    public func isLocalTombstone(_ message: Message) -> Bool { message.recall != nil }

    /// A relayed message gone from history was recalled (only its sender may): `nim:recall:<msgid>`.
    public func absenceEvent(of message: MessageID, in conversation: ConversationRef, at: Int64, by sender: UserID?) -> IMEvent? {
        guard let sender else { return nil }
        return IMEvent(eventID: EventID("nim:recall:\(message)"), backend: id,
                       kind: .recalled(messageID: message, conversation: conversation, by: sender, at: at))
    }
}
