import IMCore

/// How a `MemoryWorld` positions history: the way its capabilities' adapter does
/// (`Capabilities.history`), so that app code paging with the wrong kind of cursor fails in memory as
/// it would in production.
///
/// - by `seq` (WuKong, and any capabilities made without a preset): messages in history and events carry
///   `seq` (1, 2, … per conversation; under WuKong not the message `send` returns, as the adapter's has
///   none), cursors are `HistoryCursor(seq:)`; a cursor that is not a non-negative number is refused with
///   the adapter's text.
/// - by time and id (RongCloud `msgTime:msgUID`; NIM and JMessage `<ms>:<msgid>`): messages leave `seq`
///   nil, history is in the order stored (the server's arrival order), cursors are `"<sentAt>:<id>"` and
///   find their message by id (by time when the id is not in the conversation), and
///   a cursor of another form — `HistoryCursor(seq: 9)` included — is refused with that adapter's text
///   (`'9' is not a RongCloud history cursor (msgTime:msgUID)`). Where the vendor's message ids are
///   numbers (NIM's and JMessage's msgids), so are the world's.
/// Apps never build cursors by hand: `backend.cursor(for: message)` gives the backend's own form.
public struct HistoryForm: Hashable, Sendable {
    public let positioning: HistoryPositioning

    public init(_ positioning: HistoryPositioning) {
        self.positioning = positioning
    }

    /// Whether the message `send` returns carries its `seq`.
    public var sendAnswersSeq: Bool { positioning.sendAnswersSeq }

    public var bySeq: Bool { positioning.cursorForm == .seq }

    /// The id of the `number`th message of a world: `m<n>`, or the plain number where the vendor's
    /// message ids are numbers.
    func messageID(_ number: Int) -> MessageID {
        positioning.numericMessageIDs ? MessageID(String(number)) : MessageID("m\(number)")
    }

    /// The cursor of a stored message in this form (`backend` names the backend in the error, as
    /// `IMBackend`'s default `cursor(for:)` does).
    public func cursor(for message: Message, backend: BackendID = "memory") throws -> HistoryCursor {
        guard bySeq else { return HistoryCursor("\(message.sentAt):\(message.id.rawValue)") }
        guard let seq = message.seq else {
            throw IMError(.invalidArgument, "message \(message.id) has no seq, and \(backend) positions history by seq")
        }
        return HistoryCursor(seq: seq)
    }

    /// A time-and-id cursor's parts, or the adapter's refusal.
    func timeAndID(_ cursor: HistoryCursor) throws -> (time: Int64, id: String) {
        let parts = cursor.rawValue.split(separator: ":", maxSplits: 1)
        let numericID = positioning.numericMessageIDs
        guard parts.count == 2, let time = Int64(parts[0]), !parts[1].isEmpty, !numericID || Int64(parts[1]) != nil else {
            throw refusal(cursor)
        }
        return (time, String(parts[1]))
    }

    /// A seq cursor's number, or the WuKong adapter's refusal.
    func seq(_ cursor: HistoryCursor) throws -> Int64 {
        guard let seq = cursor.seq, seq >= 0 else { throw refusal(cursor) }
        return seq
    }

    /// The error the adapter gives for a cursor not in its form (the same texts).
    func refusal(_ cursor: HistoryCursor) -> IMError { positioning.refusal(cursor) }
}

extension MemoryWorld {
    func history(_ query: HistoryQuery) throws -> HistoryPage {
        guard query.limit > 0 else { throw IMError(.invalidArgument, "history limit must be positive, got \(query.limit)") }
        // The cursor's form is checked before anything is read, as the adapters do.
        switch query.anchor {
        case .before(let cursor), .after(let cursor), .around(let cursor):
            if historyForm.bySeq { _ = try historyForm.seq(cursor) } else { _ = try historyForm.timeAndID(cursor) }
        case .latest, .oldest: break
        }
        return try state.withLock { state in
            if let viewer = query.viewer, query.conversation.kind == .direct, query.conversation.peer(of: viewer) == nil {
                return HistoryPage(messages: [], olderCursor: nil, newerCursor: nil, hasOlder: false, hasNewer: false)
            }
            let all = state.conversations[query.conversation] ?? []
            // Deleted messages are left out (for everyone, or from this viewer's view); the others keep their places.
            let hidden = query.viewer.flatMap { state.hidden[$0] } ?? []
            let shown = all.indices.filter { !state.deleted.contains(all[$0].id) && !hidden.contains(all[$0].id) }
            let stored = shown.map { all[$0] }
            guard !historyForm.bySeq else {
                // Stored order is seq order; a cursor's place is its seq.
                let keys = shown.map { Int64($0 + 1) }
                return try Self.page(stored, keys: keys, query.anchor, query.limit, form: historyForm) { try historyForm.seq($0) }
            }
            // The order stored (the server's arrival order, which its msgTime follows); a cursor naming a stored
            // message takes that message's place, any other sits just before the first message of its time or later.
            let keys = shown.map { Double($0) }
            return try Self.page(stored, keys: keys, query.anchor, query.limit, form: historyForm) { cursor in
                let (time, id) = try historyForm.timeAndID(cursor)
                if let location = state.locations[MessageID(id)], location.conversation == query.conversation {
                    return Double(location.index)
                }
                return Double(all.firstIndex { $0.sentAt >= time } ?? all.count) - 0.5
            }
        }
    }

    /// The WuKongIM SDK guide's paging rules (see `HistoryAnchor`) over `messages` in history order, whose places are
    /// `keys` (ascending); `place` gives a cursor's place.
    static func page<Key: Comparable>(_ messages: [Message], keys: [Key], _ anchor: HistoryAnchor, _ limit: Int, form: HistoryForm,
                                      place: (HistoryCursor) throws -> Key) throws -> HistoryPage {
        let range: Range<Int>
        switch anchor {
        case .latest:
            range = max(0, messages.count - limit)..<messages.count
        case .oldest:
            range = 0..<min(limit, messages.count)
        case .before(let cursor):
            let at = try place(cursor)
            let end = keys.firstIndex { $0 >= at } ?? messages.count
            range = max(0, end - limit)..<end
        case .after(let cursor):
            let at = try place(cursor)
            let start = keys.firstIndex { $0 > at } ?? messages.count
            range = start..<min(messages.count, start + limit)
        case .around(let cursor):
            let at = try place(cursor)
            let center = keys.firstIndex { $0 >= at } ?? messages.count
            var lower = max(0, center - (limit - 1) / 2)
            let upper = min(messages.count, lower + limit)
            lower = max(0, upper - limit)
            range = lower..<upper
        }
        let page = Array(messages[range])
        return HistoryPage(
            messages: page,
            olderCursor: try page.first.map { try form.cursor(for: $0) },
            newerCursor: try page.last.map { try form.cursor(for: $0) },
            hasOlder: range.lowerBound > 0,
            hasNewer: range.upperBound < messages.count)
    }
}
