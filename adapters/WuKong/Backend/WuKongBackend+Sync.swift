import Foundation
import IMAdapterKit
import IMCore

/// The syncs CMD messages ask for (`syncMessageExtra`, `syncMessageReaction`): incremental reads from
/// the business server by cursor, one at a time per conversation, turned into events — with the
/// position each read reached when the positions are stored (`ChangeFeedSource`).
extension WuKongBackend {
    /// A sync's events, and the feed position it reached (nil: nothing read, or positions not stored).
    struct SyncRead: Sendable {
        var events: [IMEvent] = []
        var position: FeedPosition?
    }

    func syncExtras(_ conversation: ConversationRef, actor: UserID?, at: Int64) async throws -> SyncRead {
        try await sync.serialized("extras|\(conversation)") { [self] in
            let reader = reader(of: conversation)
            let address = try WuKongChannel.lookup(conversation, viewer: reader)
            let session = try await session(reader)
            let start = try await sync.start(WuKongSyncState.extrasFeed, of: conversation, backend: id)
            var cursor = start.cursor
            var read = SyncRead()
            while true {
                // Before the request: the rows are at least as new as this (an expansion change's version).
                let readAt = clock.nowMs()
                let served = try await client.extraSync(WKExtraSyncRequest(channelID: address.id, channelType: address.type,
                                                                         extraVersion: cursor, source: "imbridge", limit: 1000),
                                                      session: session)
                let rows = await sync.afterOwnWrites(served)
                let pairs = await sync.absorb(rows, in: conversation)
                read.events += extrasCodec.events(rows: pairs, conversation: conversation, actor: actor, at: at, readAt: readAt)
                cursor = max(cursor, rows.map(\.extraVersion).max() ?? cursor)
                if rows.count < 1000 { break }
            }
            if actor == nil { read.events = try await bySenders(read.events, address) }
            // Edits an earlier read gave and the store did not record go first: the row shows only the
            // newest text now.
            let kept = await sync.takeUnrecordedEdits(of: conversation)
            let readIDs = Set(read.events.map(\.eventID))
            read.events = kept.filter { !readIDs.contains($0.eventID) } + read.events
            await sync.read(edits: read.events.filter { if case .edited = $0.kind { true } else { false } }, of: conversation)
            await sync.reachedExtras(cursor, in: conversation)
            read.position = await position(WuKongSyncState.extrasFeed, conversation, from: start.from, to: cursor)
            return read
        }
    }

    /// Changes read with no CMD to say who made them (catch-up's reads): an edit and an expansion change
    /// are taken as the message's sender's — WuKongIM lets only the sender edit, and the sender's puppet
    /// wrote the copy, so may change it (a NIM carrier must come from a member of the team). The senders
    /// are looked up in one `POST /messages`; an event whose message it does not find stays as it was.
    private func bySenders(_ events: [IMEvent], _ address: (loginUID: String, id: String, type: UInt8)) async throws -> [IMEvent] {
        func unknown(_ event: IMEvent) -> MessageID? {
            switch event.kind {
            case .edited(let id, _, let by, _, _) where by.rawValue == WuKongChannel.systemUID: return id
            case .expansionChanged(let id, _, nil, _): return id
            default: return nil
            }
        }
        let found = try await lookUp(events.compactMap(unknown), address)
        guard !found.isEmpty else { return events }
        let senders = Dictionary(found.filter { !$0.fromUID.isEmpty }.map { ($0.messageIDStr, UserID($0.fromUID)) }, uniquingKeysWith: { a, _ in a })
        return events.map { event in
            guard let id = unknown(event), let sender = senders[id.rawValue] else { return event }
            var event = event
            switch event.kind {
            case .edited(let id, let conversation, _, let content, let at):
                event.kind = .edited(messageID: id, conversation: conversation, by: sender, content: content, at: at)
            case .expansionChanged(let id, let conversation, _, let delta):
                event.kind = .expansionChanged(messageID: id, conversation: conversation, by: sender, delta: delta)
            default: break
            }
            return event
        }
    }

    /// `messages` as one `POST /messages` by `message_ids` finds them in the channel at `address` (none
    /// asked: no request).
    func lookUp(_ messages: [MessageID], _ address: (loginUID: String, id: String, type: UInt8)) async throws -> [WKMessage] {
        let ids = Set(messages.compactMap { Int64($0.rawValue) })
        guard !ids.isEmpty else { return [] }
        return try await client.lookup(WKLookupRequest(loginUID: address.loginUID, channelID: address.id, channelType: address.type,
                                                       messageIDs: ids.sorted()))
    }

    func syncReactions(_ conversation: ConversationRef) async throws -> SyncRead {
        try await sync.serialized("reactions|\(conversation)") { [self] in
            let reader = reader(of: conversation)
            let address = try WuKongChannel.lookup(conversation, viewer: reader)
            let session = try await session(reader)
            let start = try await sync.start(WuKongSyncState.reactionsFeed, of: conversation, backend: id)
            var cursor = start.cursor
            var read = SyncRead()
            while true {
                let rows = try await client.reactionSync(WKReactionSyncRequest(channelID: address.id, channelType: address.type,
                                                                               seq: cursor, limit: 1000), session: session)
                read.events += extrasCodec.events(reactions: rows, conversation: conversation)
                if let last = rows.map(\.seq).max() {
                    await sync.advanceReactions(conversation, to: last)
                    cursor = max(cursor, last)
                }
                if rows.count < 1000 { break }
            }
            read.position = await position(WuKongSyncState.reactionsFeed, conversation, from: start.from, to: cursor)
            return read
        }
    }

    /// The position to store after a read from `from` to `to`: none without stored positions, or when the
    /// read moved nothing that is not stored already.
    private func position(_ feed: String, _ conversation: ConversationRef, from: Int64?, to: Int64) async -> FeedPosition? {
        guard await sync.positions != nil, to > (from ?? 0) else { return nil }
        return FeedPosition(backend: id, conversation: conversation, feed: feed, from: from, to: to)
    }
}

/// Catch-up of changes (docs/adapters/wukong.md, "Changes while the bridge is down"): the business
/// server's extras and reactions of a conversation, read on from the positions the bridge stored.
extension WuKongBackend: ChangeFeedSource {
    public func useStoredPositions(_ positions: (any CheckpointStorage)?) async {
        await sync.use(positions)
    }

    public func readChanges(of conversation: ConversationRef) async throws -> InboundBatch {
        let extras = try await syncExtras(conversation, actor: nil, at: clock.nowMs())
        let reactions = try await syncReactions(conversation)
        return InboundBatch(events: extras.events + reactions.events, positions: [extras.position, reactions.position].compactMap { $0 })
    }

    public func forgetPositions() async {
        await sync.forget()
    }

    /// One `POST /messages` by message id (docs/adapters/wukong.md, "Changes while the bridge is down").
    public func sequences(of messages: [MessageID], in conversation: ConversationRef) async throws -> [MessageID: Int64] {
        let found = try await lookUp(messages, try WuKongChannel.lookup(conversation, viewer: reader(of: conversation)))
        return Dictionary(found.filter { $0.messageSeq > 0 }.map { (MessageID($0.messageIDStr), Int64($0.messageSeq)) },
                          uniquingKeysWith: { a, _ in a })
    }
}
