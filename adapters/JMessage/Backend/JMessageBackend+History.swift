import IMAdapterKit
import IMCore
import IMHTTP

/// History over report v2. A cursor is `"<msg_ctime ms>:<msgid>"`; messages are ordered by that pair.
///
/// Report v2 answers per user, group or chatroom, in windows of ≤ 7 days, 60 days back. A page is
/// found by walking windows away from the anchor until `limit + 1` matching messages are in hand (or
/// the retention edge is reached); every window is widened by one second on both sides, because the
/// API works in whole seconds and `/users/…` is documented as exclusive, and duplicates are dropped.
/// A direct conversation reads both users' feeds and keeps the messages that decode into it.
extension JMessageBackend {
    /// JMessage positions history by create time and msg_id: `"<ms>:<msg_id>"`.
    public func cursor(for message: Message) throws -> HistoryCursor {
        guard Int64(message.id.rawValue) != nil else {
            throw IMError(.invalidArgument, "'\(message.id)' is not a jmessage msg_id")
        }
        return Key(message).cursor
    }

    static let windowMs: Int64 = 7 * 86_400_000 - 3000
    static let retentionMs: Int64 = 60 * 86_400_000
    /// Future slack for "now": the sandbox's or vendor's clock may run ahead of ours.
    static let clockSlackMs: Int64 = 600_000

    struct Key: Comparable, Hashable {
        var ms: Int64
        var id: Int64
        static func < (a: Key, b: Key) -> Bool { (a.ms, a.id) < (b.ms, b.id) }
        init(ms: Int64, id: Int64) {
            self.ms = ms
            self.id = id
        }
        init(_ message: Message) { self.init(ms: message.sentAt, id: Int64(message.id.rawValue) ?? 0) }
        init(_ cursor: HistoryCursor) throws {
            let parts = cursor.rawValue.split(separator: ":")
            guard parts.count == 2, let ms = Int64(parts[0]), let id = Int64(parts[1]) else {
                throw Capabilities.jMessage.history.refusal(cursor)
            }
            self.init(ms: ms, id: id)
        }
        var cursor: HistoryCursor { HistoryCursor("\(ms):\(id)") }
    }

    public func history(_ query: HistoryQuery) async throws -> HistoryPage {
        guard (1...1000).contains(query.limit) else { throw IMError(.invalidArgument, "history limit must be 1…1000") }
        let now = clock.nowMs() + Self.clockSlackMs
        let edge = now - Self.retentionMs - Self.clockSlackMs
        let paths = try reportPaths(for: query.conversation)
        var messages: [Message]
        var hasOlder = false, hasNewer = false
        switch query.anchor {
        case .latest:
            let older = try await walk(paths, query.conversation, from: now, backwards: true, edge: edge, limit: query.limit + 1) { _ in true }
            hasOlder = older.count > query.limit
            messages = Array(older.suffix(query.limit))
        case .before(let cursor):
            let anchor = try Key(cursor)
            let older = try await walk(paths, query.conversation, from: anchor.ms, backwards: true, edge: edge, limit: query.limit + 1) { $0 < anchor }
            hasOlder = older.count > query.limit
            hasNewer = true
            messages = Array(older.suffix(query.limit))
        case .oldest:
            let newer = try await walk(paths, query.conversation, from: edge, backwards: false, edge: now, limit: query.limit + 1) { _ in true }
            hasNewer = newer.count > query.limit
            messages = Array(newer.prefix(query.limit))
        case .after(let cursor):
            let anchor = try Key(cursor)
            let newer = try await walk(paths, query.conversation, from: anchor.ms, backwards: false, edge: now, limit: query.limit + 1) { $0 > anchor }
            hasNewer = newer.count > query.limit
            hasOlder = true
            messages = Array(newer.prefix(query.limit))
        case .around(let cursor):
            let anchor = try Key(cursor)
            let older = try await walk(paths, query.conversation, from: anchor.ms, backwards: true, edge: edge, limit: query.limit + 1) { $0 <= anchor }
            let newer = try await walk(paths, query.conversation, from: anchor.ms, backwards: false, edge: now, limit: query.limit + 1) { $0 > anchor }
            var olderCount = min(older.count, (query.limit - 1) / 2 + 1)
            let newerCount = min(newer.count, query.limit - olderCount)
            olderCount = min(older.count, query.limit - newerCount)
            hasOlder = older.count > olderCount
            hasNewer = newer.count > newerCount
            messages = Array(older.suffix(olderCount)) + Array(newer.prefix(newerCount))
        }
        let recalled = state.withLock { $0.recalled }
        for index in messages.indices {
            if let recall = recalled[messages[index].id] { messages[index].recall = recall }
        }
        return HistoryPage(messages: messages, olderCursor: messages.first.map { Key($0).cursor },
                           newerCursor: messages.last.map { Key($0).cursor }, hasOlder: hasOlder, hasNewer: hasNewer)
    }

    func reportPaths(for conversation: ConversationRef) throws -> [String] {
        let escape = { (text: String) in FormBody.escapePath(text) }
        switch conversation.kind {
        case .direct:
            return conversation.participants.map { "/v2/users/\(escape(codec.identity.vendorUser($0).username))/messages" }
        case .group: return ["/v2/groups/\(escape(conversation.id))/messages"]
        case .chatroom: return ["/v2/chatrooms/\(escape(conversation.id))/messages"]
        default: throw IMError(.unsupported, "jmessage has no \(conversation.kind) conversations")
        }
    }

    /// Messages of `conversation` accepted by `keep`, sorted oldest → newest, gathered window by window
    /// from `start` towards `edge` until at least `limit` are found (the nearest `limit` are returned).
    func walk(_ paths: [String], _ conversation: ConversationRef, from start: Int64, backwards: Bool, edge: Int64, limit: Int,
              keep: (Key) -> Bool) async throws -> [Message] {
        var found: [Key: Message] = [:]
        var cursor = start
        while backwards ? cursor > edge : cursor < edge {
            let begin = backwards ? max(edge, cursor - Self.windowMs) : cursor
            let end = backwards ? cursor : min(edge, cursor + Self.windowMs)
            for path in paths {
                for message in try await window(path, begin: begin - 1000, end: end + 1000) where message.conversation == conversation {
                    let key = Key(message)
                    if keep(key) { found[key] = message }
                }
            }
            if found.count >= limit { break }
            cursor = backwards ? begin : end
        }
        let sorted = found.keys.sorted()
        let chosen = backwards ? sorted.suffix(limit) : sorted.prefix(limit)
        return chosen.compactMap { found[$0] }
    }

    /// Every message report v2 has for `path` in `[begin, end]`, following cursors.
    func window(_ path: String, begin: Int64, end: Int64) async throws -> [Message] {
        var page = try await client.history(path: path, count: 1000, beginMs: begin, endMs: end)
        var messages: [Message] = []
        while true {
            messages += page.messages.compactMap { try? codec.decode($0) }
            guard let next = page.nextCursor else { return messages }
            page = try await client.history(path: path, cursor: next)
        }
    }
}

extension FormBody {
    /// A path segment, percent-encoded (RFC 3986 unreserved characters kept).
    static func escapePath(_ text: String) -> String { escape(text) }
}

/// The ledger's name for a message the poller or a callback takes in (`JMessageCodec.messageEventID`).
extension JMessageBackend: MessageEventNaming {
    public func messageEventID(for message: Message) -> EventID {
        Int64(message.id.rawValue).map(JMessageCodec.messageEventID) ?? EventID("jmessage:msg:\(message.id)")
    }
}
