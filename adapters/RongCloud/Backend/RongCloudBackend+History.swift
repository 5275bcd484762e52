import IMCore

extension RongCloudBackend {
    /// RongCloud positions history by `msgTime:msgUID`.
    public func cursor(for message: Message) throws -> HistoryCursor { HistoryReader.cursor(message) }

    /// Pages one conversation through `/v3/message/{private,group}/query.json`.
    ///
    /// That API reads a time window oldest-first (`startTime`, `endTime`, `includeStart`, ≤ 100 rows),
    /// so `oldest` and `after` read forward from their start and cost one call per 100 rows; `latest`,
    /// `before` and `around` read the conversation forward up to their anchor (one call per 100 rows of
    /// history before it) — which is why history is `partial`. Cursors are `msgTime:msgUID`, so rows
    /// sharing a millisecond are told apart. A row shown as `RC:RcNtf` is a recalled message
    /// (`recall` set from its `operatorId`/`recallTime`); a row whose content no longer decodes is kept
    /// as `.unsupported` rather than failing the page.
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
            let all = try await reader.read(after: nil, upTo: .max)
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
            return Self.page(Array(all[range]), hasOlder: range.lowerBound > 0, hasNewer: range.upperBound < all.count)
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

/// Reads one conversation forward through the time-window API.
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

    /// Up to `limit` messages strictly after `position` (from the start when nil), oldest first.
    func read(after position: (time: Int64, uid: String)?, upTo limit: Int) async throws -> [Message] {
        let end = backend.clock.nowMs() + 86_400_000
        var start = position?.time ?? 0
        var seen: Set<String> = []
        var passedCursor = position == nil
        var result: [Message] = []
        while result.count < limit {
            let query = RCHistoryQuery(userId: viewer.rawValue, targetId: target, startTime: start, endTime: end,
                                         pageSize: Self.pageSize, includeStart: true)
            let rows = try await backend.client.postJSON(path, query, as: RCHistoryResponse.self).data
            var advanced = false
            for row in rows where seen.insert(row.messageUID).inserted {
                advanced = true
                if !passedCursor, let position {
                    if (row.msgTime, row.messageUID) <= (position.time, position.uid) { continue }
                    passedCursor = true
                }
                result.append(message(from: row))
                if result.count == limit { break }
            }
            guard rows.count == Self.pageSize, advanced, let last = rows.last else { break }
            start = last.msgTime
        }
        return result
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
