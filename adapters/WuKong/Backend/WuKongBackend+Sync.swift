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
                let rows = try await client.extraSync(WKExtraSyncRequest(channelID: address.id, channelType: address.type,
                                                                         extraVersion: cursor, source: "imbridge", limit: 1000),
                                                      session: session)
                let pairs = await sync.absorb(rows, in: conversation)
                read.events += extrasCodec.events(rows: pairs, conversation: conversation, actor: actor, at: at)
                cursor = max(cursor, rows.map(\.extraVersion).max() ?? cursor)
                if rows.count < 1000 { break }
            }
            read.position = await position(WuKongSyncState.extrasFeed, conversation, from: start.from, to: cursor)
            return read
        }
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
}
