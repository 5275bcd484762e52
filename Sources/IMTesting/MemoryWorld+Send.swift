import IMCore

extension MemoryWorld {
    func send(_ outgoing: OutgoingMessage) throws -> Message {
        try capabilities.check(outgoing.content)
        if outgoing.conversation.kind == .direct, outgoing.conversation.peer(of: outgoing.sender) == nil {
            throw IMError(.invalidArgument, "\(outgoing.sender) is not a user of \(outgoing.conversation)")
        }
        if !outgoing.mentions.isEmpty { try capabilities.require(.mentions) }
        if outgoing.reply != nil { try capabilities.require(.replies) }
        if case .custom = outgoing.content { try capabilities.require(.customContent) }
        var expansion: Expansion?
        if let initial = outgoing.expansion {
            try capabilities.require(.expansion)
            let limits = capabilities.expansionLimits ?? .rongCloud
            if !initial.isEmpty { try limits.validate(.set(initial), current: Expansion(), caller: capabilities.expansionCaller) }
            expansion = Expansion(initial: initial, version: initial.isEmpty ? 0 : 1)
        }
        let now = clock.nowMs()
        return try state.withLock { state in
            if let clientID = outgoing.clientMessageID, let existing = state.clientIDs[clientID],
               let location = state.locations[existing] {
                return state.conversations[location.conversation]![location.index]
            }
            if let reply = outgoing.reply {
                _ = try state.message(reply.messageID, in: outgoing.conversation)
            }
            state.nextMessageNumber += 1
            var message = Message(
                id: MessageID("m\(state.nextMessageNumber)"), clientMessageID: outgoing.clientMessageID,
                conversation: outgoing.conversation, sender: outgoing.sender, sentAt: outgoing.sentAt ?? now,
                content: outgoing.content, mentions: outgoing.mentions, reply: outgoing.reply, options: outgoing.options,
                expansion: expansion, vendorExtras: outgoing.vendorExtras)
            if case .command(let command) = outgoing.content {
                Self.publish("cmd:\(message.id)", .command(conversation: message.conversation, sender: message.sender,
                                                           content: command, at: message.sentAt), in: &state)
                return message
            }
            if outgoing.options.persist {
                let seq = (state.nextSeq[outgoing.conversation] ?? 0) + 1
                state.nextSeq[outgoing.conversation] = seq
                message.seq = seq
                if outgoing.options.receiptRequested { message.readCounts = ReadCounts() }
                var list = state.conversations[outgoing.conversation, default: []]
                list.append(message)
                state.conversations[outgoing.conversation] = list
                state.locations[message.id] = (outgoing.conversation, list.count - 1)
                if let clientID = outgoing.clientMessageID { state.clientIDs[clientID] = message.id }
                if message.readCounts != nil {
                    let others = state.members(of: message.conversation).count - 1
                    state.update(message.id) { $0.readCounts = ReadCounts(unread: others) }
                    message = try state.message(message.id, in: message.conversation)
                }
            }
            Self.publish("msg:\(message.id)", .message(message), in: &state)
            return message
        }
    }

    func history(_ query: HistoryQuery) throws -> HistoryPage {
        guard query.limit > 0 else { throw IMError(.invalidArgument, "history limit must be positive, got \(query.limit)") }
        return state.withLock { state in
            if let viewer = query.viewer, query.conversation.kind == .direct, query.conversation.peer(of: viewer) == nil {
                return HistoryPage(messages: [], olderCursor: nil, newerCursor: nil, hasOlder: false, hasNewer: false)
            }
            let all = state.conversations[query.conversation] ?? []
            return Self.page(all, query.anchor, query.limit)
        }
    }

    /// Seed 000's paging rules over a seq-ordered list (see `HistoryAnchor`).
    static func page(_ all: [Message], _ anchor: HistoryAnchor, _ limit: Int) -> HistoryPage {
        func seqOf(_ cursor: HistoryCursor) -> Int64 { cursor.seq ?? 0 }
        let range: Range<Int>
        switch anchor {
        case .latest:
            range = max(0, all.count - limit)..<all.count
        case .oldest:
            range = 0..<min(limit, all.count)
        case .before(let cursor):
            let end = all.firstIndex { $0.seq! >= seqOf(cursor) } ?? all.count
            range = max(0, end - limit)..<end
        case .after(let cursor):
            let start = all.firstIndex { $0.seq! > seqOf(cursor) } ?? all.count
            range = start..<min(all.count, start + limit)
        case .around(let cursor):
            let center = all.firstIndex { $0.seq! >= seqOf(cursor) } ?? all.count
            var lower = max(0, center - (limit - 1) / 2)
            let upper = min(all.count, lower + limit)
            lower = max(0, upper - limit)
            range = lower..<upper
        }
        let messages = Array(all[range])
        return HistoryPage(
            messages: messages,
            olderCursor: messages.first.map { HistoryCursor(seq: $0.seq!) },
            newerCursor: messages.last.map { HistoryCursor(seq: $0.seq!) },
            hasOlder: range.lowerBound > 0,
            hasNewer: range.upperBound < all.count)
    }
}
