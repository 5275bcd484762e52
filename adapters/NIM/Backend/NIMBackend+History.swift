import IMCore
import Synchronization

extension NIMBackend {
    /// NIM positions history by send time and msgid: `"<ms>:<msgid>"`.
    public func cursor(for message: Message) throws -> HistoryCursor {
        guard let msgid = Int64(message.id.rawValue) else {
            throw IMError(.invalidArgument, "'\(message.id)' is not a NIM msgid")
        }
        return NIMHistoryKey(time: message.sentAt, msgid: msgid).cursor
    }

    /// Pages one direct or group conversation (see `NIMHistoryPager`). A team is queried as
    /// `query.viewer`, else `teamQueryAccid` (or the owner a refusal found earlier); when NIM answers that
    /// this accid was never in the team (804), as the team's owner (`/team/query.action`), remembered for
    /// the team. Messages this process saw recalled are shown in place as tombstones (`recall` set), since
    /// NIM drops them from history.
    public func history(_ query: HistoryQuery) async throws -> HistoryPage {
        guard (1...1000).contains(query.limit) else {
            throw IMError(.invalidArgument, "history limit must be 1…1000, got \(query.limit)")
        }
        let window: (type: NIMConversationType, first: String, second: String)
        switch query.conversation.kind {
        case .direct:
            let users = query.conversation.participants
            window = (.person, users[0].rawValue, users[1].rawValue)
        case .group:
            let remembered = state.withLock { $0.teamReaders[query.conversation.id] }
            guard let member = query.viewer?.rawValue ?? remembered ?? teamQueryAccid else {
                throw IMError(.invalidArgument, "NIM team history needs a member accid: set the query's viewer or teamQueryAccid")
            }
            window = (.team, member, query.conversation.id)
        default:
            throw IMError(.unsupported, "NIM history covers direct and group conversations, not \(query.conversation.kind)")
        }
        let client = self.client
        let reader = Mutex((accid: window.first, ownerTried: false))
        let pager = NIMHistoryPager(fetch: { [self] begin, end, limit, ascending, exclude in
            while true {
                let accid = reader.withLock { $0.accid }
                do {
                    return try await client.queryHistory(NIMHistoryWindow(conversation: window.type, first: accid, second: window.second,
                                                                          beginTime: begin, endTime: end, limit: limit, ascending: ascending,
                                                                          excludeMsgid: exclude))
                } catch let error as IMError where window.type == .team && error.vendorCode == String(NIMErrors.notInTeam.code)
                    && !reader.withLock({ $0.ownerTried }) {
                    reader.withLock { $0.ownerTried = true }
                    guard let owner = try await group(GroupID(window.second))?.owner?.rawValue,
                          owner.lowercased() != accid.lowercased() else { throw error }
                    reader.withLock { $0.accid = owner }
                    state.withLock { $0.teamReaders[window.second] = owner }
                }
            }
        }, horizon: clock.nowMs() + 86_400_000)
        let page = try await pager.page(query.anchor, limit: query.limit)
        var messages = try page.entries.map { try codec.message(from: $0, in: query.conversation) }
        messages = mergeTombstones(into: messages, conversation: query.conversation, anchor: query.anchor,
                                   hasOlder: page.hasOlder, hasNewer: page.hasNewer)
        let keys = page.entries.map { NIMHistoryKey(time: $0.sendtime, msgid: $0.msgid) }
        return HistoryPage(messages: messages, olderCursor: keys.first?.cursor, newerCursor: keys.last?.cursor,
                           hasOlder: page.hasOlder, hasNewer: page.hasNewer)
    }

    /// Puts known recalled messages back where they were, within the span this page covers.
    func mergeTombstones(into messages: [Message], conversation: ConversationRef, anchor: HistoryAnchor,
                         hasOlder: Bool, hasNewer: Bool) -> [Message] {
        let tombstones = state.withLock { $0.tombstones.values.filter { $0.conversation == conversation } }
        guard !tombstones.isEmpty else { return messages }
        func key(_ message: Message) -> NIMHistoryKey? {
            Int64(message.id.rawValue).map { NIMHistoryKey(time: message.sentAt, msgid: $0) }
        }
        var lower = hasOlder ? messages.first.flatMap(key) : nil
        var upper = hasNewer ? messages.last.flatMap(key) : nil
        switch anchor {
        case .before(let cursor): upper = upper ?? NIMHistoryKey(cursor)
        case .after(let cursor): lower = lower ?? NIMHistoryKey(cursor)
        default: break
        }
        if messages.isEmpty, hasOlder || hasNewer { return messages }
        let inside = tombstones.filter { tombstone in
            guard let position = key(tombstone) else { return false }
            return (lower.map { position > $0 } ?? true) && (upper.map { position < $0 } ?? true)
        }
        return (messages + inside).sorted { (key($0) ?? NIMHistoryKey(time: $0.sentAt, msgid: 0)) < (key($1) ?? NIMHistoryKey(time: $1.sentAt, msgid: 0)) }
    }
}
