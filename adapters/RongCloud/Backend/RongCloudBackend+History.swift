import IMCore

extension RongCloudBackend {
    /// RongCloud positions history by `msgTime:msgUID`.
    public func cursor(for message: Message) throws -> HistoryCursor { HistoryReader.cursor(message) }

    /// Pages one conversation through `/v3/message/{private,group}/query.json`.
    ///
    /// That API reads a time window newest first, from `startTime` (the newer bound) back to `endTime`
    /// (the older one), ≤ 100 rows a call (docs/adapters/rongcloud.md §4 #14). `latest`, `before` and
    /// `around` page back from now until they hold their anchor and `limit + 1` rows older than it. `oldest`
    /// and `after` need the oldest rows of a window: `HistoryReader.read(after:upTo:)` narrows the window
    /// until one call returns all of it, then widens it again — one call when fewer than 100 rows follow the
    /// cursor. Cursors are `msgTime:msgUID`, so rows sharing a millisecond are told apart. A row shown as
    /// `RC:RcNtf` is a recalled message (`recall` set from its `operatorId`/`recallTime`); a row whose
    /// content no longer decodes is kept as `.unsupported` rather than failing the page.
    public func history(_ query: HistoryQuery) async throws -> HistoryPage {
        guard query.limit > 0 else { throw IMError(.invalidArgument, "history limit must be positive, got \(query.limit)") }
        let reader = try HistoryReader(backend: self, query: query)
        let limit = query.limit
        switch query.anchor {
        case .oldest:
            let rows = try await reader.read(after: nil, upTo: limit + 1)
            return Self.page(Array(rows.prefix(limit)), hasOlder: false, hasNewer: rows.count > limit)
        case .after(let cursor):
            let rows = try await reader.read(after: try HistoryReader.position(cursor), upTo: limit + 1)
            return Self.page(Array(rows.prefix(limit)), hasOlder: true, hasNewer: rows.count > limit)
        case .latest, .before, .around:
            var anchor: (time: Int64, uid: String)?
            if case .before(let cursor) = query.anchor { anchor = try HistoryReader.position(cursor) }
            if case .around(let cursor) = query.anchor { anchor = try HistoryReader.position(cursor) }
            var (rows, complete) = ([RCHistoryMessage](), false)
            if case .before = query.anchor, let anchor {
                // From just above the cursor's time: a history cursor carries RongCloud's msgTime, a sent
                // message's carries this process's clock, which may be behind RongCloud's by up to the margin.
                (rows, complete) = try await reader.readBack(from: anchor.time + HistoryReader.cursorMarginMs,
                                                             untilFound: anchor.uid, thenOlder: limit + 1)
                if !rows.contains(where: { $0.messageUID == anchor.uid }) { (rows, complete) = ([], false) }
            }
            if rows.isEmpty {
                (rows, complete) = try await reader.readBack(untilFound: anchor?.uid, thenOlder: limit + 1)
            }
            let all = rows.map(reader.message(from:))
            var end = all.count
            var center = all.count
            if case .before(let cursor) = query.anchor { end = try Self.index(of: cursor, in: all) }
            if case .around(let cursor) = query.anchor { center = try Self.index(of: cursor, in: all) }
            let range: Range<Int>
            if case .around = query.anchor {
                let lower = max(0, center - (limit - 1) / 2)
                let upper = min(all.count, lower + limit)
                range = max(0, upper - limit)..<upper
            } else {
                range = max(0, end - limit)..<end
            }
            return Self.page(Array(all[range]), hasOlder: range.lowerBound > 0 || !complete, hasNewer: range.upperBound < all.count)
        }
    }

    static func page(_ messages: [Message], hasOlder: Bool, hasNewer: Bool) -> HistoryPage {
        HistoryPage(messages: messages, olderCursor: messages.first.map(HistoryReader.cursor),
                    newerCursor: messages.last.map(HistoryReader.cursor), hasOlder: hasOlder, hasNewer: hasNewer)
    }

    /// The index of the cursor's message when it is there, else of the first message at or after the
    /// cursor's position. The message `send` returns has our clock's time, not RongCloud's `msgTime`
    /// (the publish reply carries none), so its cursor is found by its msgUID.
    static func index(of cursor: HistoryCursor, in messages: [Message]) throws -> Int {
        let position = try HistoryReader.position(cursor)
        if let exact = messages.firstIndex(where: { $0.id.rawValue == position.uid }) { return exact }
        return messages.firstIndex { ($0.sentAt, $0.id.rawValue) >= (position.time, position.uid) } ?? messages.count
    }
}

/// Reads one conversation through the time-window API, which gives a window's rows newest first.
struct HistoryReader {
    let backend: RongCloudBackend
    let conversation: ConversationRef
    let path: String
    let viewer: UserID
    let target: String

    static let pageSize = 100

    init(backend: RongCloudBackend, query: HistoryQuery) throws {
        self.backend = backend
        self.conversation = query.conversation
        switch query.conversation.kind {
        case .direct:
            let users = query.conversation.participants
            let viewer = query.viewer ?? users[0]
            guard let peer = query.conversation.peer(of: viewer) else {
                throw IMError(.invalidArgument, "\(viewer) is not a user of \(query.conversation)")
            }
            (self.path, self.viewer, self.target) = (RCPaths.privateHistory, viewer, peer.rawValue)
        case .group:
            guard let viewer = query.viewer ?? backend.settings.historyViewer.map(UserID.init) else {
                throw IMError(.invalidArgument, "group history needs HistoryQuery.viewer or the history_viewer setting")
            }
            (self.path, self.viewer, self.target) = (RCPaths.groupHistory, viewer, query.conversation.id)
        default:
            throw IMError(.unsupported, "RongCloud history covers direct and group conversations, not \(query.conversation.kind)")
        }
    }

    static func cursor(_ message: Message) -> HistoryCursor { HistoryCursor("\(message.sentAt):\(message.id.rawValue)") }

    static func position(_ cursor: HistoryCursor) throws -> (time: Int64, uid: String) {
        let parts = cursor.rawValue.split(separator: ":", maxSplits: 1)
        guard parts.count == 2, let time = Int64(parts[0]) else {
            throw Capabilities.rongCloud.history.refusal(cursor)
        }
        return (time, String(parts[1]))
    }

    /// The newest rows at or before `newer` back to `older` (both included), newest first: one call. A call
    /// returning `pageSize` rows may have left older rows of the window out.
    func window(newer: Int64, older: Int64) async throws -> [RCHistoryMessage] {
        // `endTime` one below the wanted bound, and rows below it dropped here: whether the vendor counts
        // a row exactly at `endTime` in the window is not documented.
        let query = RCHistoryQuery(userId: viewer.rawValue, targetId: target, startTime: newer, endTime: max(0, older - 1),
                                   pageSize: Self.pageSize, includeStart: true)
        return try await backend.client.postJSON(path, query, as: RCHistoryResponse.self).data.filter { $0.msgTime >= older }
    }

    /// The latest time a row can carry: the sandbox's or the vendor's clock may run ahead of ours.
    var horizon: Int64 { backend.clock.nowMs() + 86_400_000 }

    /// Up to `limit` messages strictly after `position` (from the start when nil), oldest first.
    ///
    /// The API gives a window's newest rows, so the oldest ones are found by narrowing: a window whose call
    /// comes back full is halved (its older half first) until one call holds all of it; its rows are taken,
    /// and the next window starts after it, twice as wide. When fewer than `pageSize` rows follow the
    /// cursor, the first call, up to the horizon, holds them all.
    func read(after position: (time: Int64, uid: String)?, upTo limit: Int) async throws -> [Message] {
        let horizon = self.horizon
        var low = position?.time ?? 0
        if limit == .max {
            // Everything after the cursor: paging back from the horizon costs one call per 100 rows.
            let rows = try await readBack(downTo: low, untilFound: nil, thenOlder: .max).rows
            return rows.filter { row in position.map { (row.msgTime, row.messageUID) > ($0.time, $0.uid) } ?? true }.map(message(from:))
        }
        var high = horizon
        var passedCursor = position == nil
        var seen: Set<String> = []
        var result: [Message] = []
        while result.count < limit, low <= horizon {
            let rows = try await window(newer: high, older: low)
            if rows.count >= Self.pageSize, high > low {
                high = low + (high - low) / 2
                continue
            }
            // All of [low, high] (more than a page only when over 100 rows share one millisecond: the
            // newest 100 of them are what the API gives).
            for row in rows.reversed() where seen.insert(row.messageUID).inserted {
                if !passedCursor, let position {
                    if (row.msgTime, row.messageUID) <= (position.time, position.uid) { continue }
                    passedCursor = true
                }
                result.append(message(from: row))
                if result.count == limit { break }
            }
            let width = high - low
            low = high + 1
            high = min(horizon, low + max(1, width) * 2)
        }
        return result
    }

    /// How far above a `before` cursor's time its read starts (10 minutes, `history`).
    static let cursorMarginMs: Int64 = 600_000

    /// The conversation from `start` (the horizon when nil) back, returned oldest first: until the row `uid` is held with
    /// `older` rows below it — with `uid` nil, until `older` rows are held; with `uid` never found, every
    /// row. Rows older than `low` are not read. `complete` says the oldest row at or after `low` is among them.
    func readBack(from start: Int64? = nil, downTo low: Int64 = 0, untilFound uid: String?,
                  thenOlder older: Int) async throws -> (rows: [RCHistoryMessage], complete: Bool) {
        var newer = start ?? horizon
        var seen: Set<String> = []
        var rows: [RCHistoryMessage] = []
        var found: Int?
        while true {
            let page = try await window(newer: newer, older: low)
            var advanced = false
            for row in page where seen.insert(row.messageUID).inserted {
                advanced = true
                rows.append(row)
                if found == nil, let uid, row.messageUID == uid { found = rows.count - 1 }
            }
            if page.count < Self.pageSize { return (rows.reversed(), true) }
            let below = found.map { rows.count - 1 - $0 } ?? (uid == nil ? rows.count : 0)
            if below >= older { return (rows.reversed(), false) }
            guard let oldest = page.last?.msgTime else { return (rows.reversed(), true) }
            // The next call starts at the oldest millisecond returned, again, so its other rows are not
            // skipped; when a whole page is that one millisecond, the next starts below it.
            newer = advanced ? oldest : oldest - 1
        }
    }

    func message(from row: RCHistoryMessage) -> Message {
        var message: Message
        do {
            message = try backend.codec.message(from: row, conversation: conversation)
        } catch {
            message = Message(id: MessageID(row.messageUID), conversation: conversation, sender: UserID(row.fromUserId),
                              sentAt: row.msgTime,
                              content: .unsupported(UnsupportedContent(vendor: "rongcloud", vendorType: row.objectName, raw: row.content)))
        }
        if row.objectName == RCObjectName.recallNotification, let notice = try? JSONValue.parse(row.content),
           let by = notice["operatorId"]?.stringValue, let at = notice["recallTime"]?.int64Value {
            message.recall = RecallState(by: UserID(by), at: at)
        }
        return message
    }
}
