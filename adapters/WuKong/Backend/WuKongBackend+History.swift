import Foundation
import IMCore

/// History over `/channel/messagesync`, with the business server's state folded in.
///
/// Anchors → messagesync (results ascending by seq):
/// - `latest`: start = end = 0 (the newest `limit`);
/// - `oldest`: pull up from seq 1; `after(c)`: pull up from c + 1 (end 0 = open);
/// - `before(c)`: pull down from c − 1 to 0 (`(0, c−1]`, the highest `limit`); `before(1)` is empty;
/// - `around(c)`: `(limit − 1) / 2` older plus c and newer, the short side filled from the other.
/// `hasOlder` = the first seq > 1; `hasNewer` = the server's `more` on pull-up pages, true on pages
/// that end before the anchor. Each page then reads the channel's extras (revoke, edit, `extra`,
/// read counts) and reactions and applies them to its messages.
extension WuKongBackend {
    public func history(_ query: HistoryQuery) async throws -> HistoryPage {
        guard query.limit > 0 else { throw IMError(.invalidArgument, "history limit must be positive") }
        let lookup = try WuKongChannel.lookup(query.conversation, viewer: query.viewer)
        func pull(start: UInt64, end: UInt64, mode: Int, limit: Int) async throws -> WKMessageSyncResponse {
            try await client.messageSync(WKMessageSyncRequest(loginUID: lookup.loginUID, channelID: lookup.id, channelType: lookup.type,
                                                              startMessageSeq: start, endMessageSeq: end, limit: limit, pullMode: mode))
        }
        var wire: [WKMessage]
        var hasNewer = false
        switch query.anchor {
        case .latest:
            wire = try await pull(start: 0, end: 0, mode: 0, limit: query.limit).messages
        case .oldest:
            let page = try await pull(start: 1, end: 0, mode: 1, limit: query.limit)
            (wire, hasNewer) = (page.messages, page.more == 1)
        case .after(let cursor):
            let page = try await pull(start: UInt64(try Self.seq(cursor) + 1), end: 0, mode: 1, limit: query.limit)
            (wire, hasNewer) = (page.messages, page.more == 1)
        case .before(let cursor):
            let seq = try Self.seq(cursor)
            wire = seq <= 1 ? [] : try await pull(start: UInt64(seq - 1), end: 0, mode: 0, limit: query.limit).messages
            hasNewer = true
        case .around(let cursor):
            let seq = UInt64(try Self.seq(cursor))
            let older = try await pull(start: seq, end: 0, mode: 0, limit: query.limit).messages
            let newer = try await pull(start: seq + 1, end: 0, mode: 1, limit: query.limit)
            let olderWanted = max((query.limit - 1) / 2 + 1, query.limit - newer.messages.count)
            let olderPart = Array(older.suffix(olderWanted))
            wire = olderPart + newer.messages.prefix(query.limit - olderPart.count)
            hasNewer = (newer.messages.count > query.limit - olderPart.count) || newer.more == 1
        }
        let messages = try await decorate(wire.map { try codec.decode($0) }.filter { $0.content.kind != .command },
                                          in: query.conversation)
        let first = messages.first?.seq, last = messages.last?.seq
        var hasOlder = (first ?? 0) > 1
        // An empty page after a cursor still has the cursor's message (and those before it) behind it.
        if first == nil, case .after(let cursor) = query.anchor, let seq = cursor.seq, seq >= 1 { hasOlder = true }
        return HistoryPage(messages: messages, olderCursor: first.map { HistoryCursor(seq: $0) },
                           newerCursor: last.map { HistoryCursor(seq: $0) }, hasOlder: hasOlder, hasNewer: hasNewer)
    }

    static func seq(_ cursor: HistoryCursor) throws -> Int64 {
        guard let seq = cursor.seq, seq >= 0 else { throw Capabilities.wukong.history.refusal(cursor) }
        return seq
    }

    /// Applies the channel's extras and reactions to `messages`. Recall time is not on the wire: the
    /// message's own time stands in.
    func decorate(_ messages: [Message], in conversation: ConversationRef) async throws -> [Message] {
        guard !messages.isEmpty else { return messages }
        let rows = try await currentExtras(conversation)
        let reactions = try await currentReactions(conversation)
        return messages.map { message in
            var message = message
            if let row = rows[message.id.rawValue] {
                if row.revoke == 1 {
                    message.recall = RecallState(by: UserID(row.revoker ?? message.sender.rawValue), at: message.sentAt)
                }
                if case .object(let object)? = row.contentEdit, let decoded = try? codec.content.decode(object) {
                    message.edit = EditState(content: decoded.content, editedAt: (row.editedAt ?? 0) * 1000)
                }
                if let extra = row.extra { message.expansion = Expansion(initial: extra, version: row.extraVersion) }
                if let read = row.readedCount {
                    message.readCounts = ReadCounts(read: read, unread: row.unreadCount ?? 0)
                }
            }
            message.reactions = reactions[message.id.rawValue] ?? []
            return message
        }
    }

    /// Every extras row of the conversation by message id (a full read from cursor 0; no events).
    func currentExtras(_ conversation: ConversationRef) async throws -> [String: WKMessageExtra] {
        let reader = reader(of: conversation)
        let address = try WuKongChannel.lookup(conversation, viewer: reader)
        let rows = try await client.extraSync(WKExtraSyncRequest(channelID: address.id, channelType: address.type, extraVersion: 0,
                                                                 source: "imbridge", limit: 10_000), session: try await session(reader))
        return Dictionary(rows.map { ($0.messageIDStr, $0) }, uniquingKeysWith: { $0.extraVersion > $1.extraVersion ? $0 : $1 })
    }

    /// The active reactions of the conversation by message id, folded from the full reaction log.
    func currentReactions(_ conversation: ConversationRef) async throws -> [String: [Reaction]] {
        let reader = reader(of: conversation)
        let address = try WuKongChannel.lookup(conversation, viewer: reader)
        let session = try await session(reader)
        var cursor: Int64 = 0
        var rows: [WKReaction] = []
        while true {
            let page = try await client.reactionSync(WKReactionSyncRequest(channelID: address.id, channelType: address.type,
                                                                           seq: cursor, limit: 1000), session: session)
            rows += page
            guard page.count == 1000, let last = page.last?.seq else { break }
            cursor = last
        }
        var latest: [String: WKReaction] = [:]
        for row in rows.sorted(by: { $0.seq < $1.seq }) { latest["\(row.messageID)|\(row.uid)|\(row.emoji)"] = row }
        var result: [String: [Reaction]] = [:]
        for row in latest.values.sorted(by: { $0.seq < $1.seq }) where row.isDeleted == 0 {
            result[row.messageID, default: []].append(Reaction(user: UserID(row.uid), emoji: row.emoji,
                                                               at: WuKongExtrasCodec.parseTime(row.createdAt)))
        }
        return result
    }
}
