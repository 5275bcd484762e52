import Foundation
import IMCore

/// The syncs CMD messages ask for (`syncMessageExtra`, `syncMessageReaction`): incremental reads from
/// the business server by cursor, one at a time per conversation, turned into events.
extension WuKongBackend {
    func syncExtras(_ conversation: ConversationRef, actor: UserID?, at: Int64) async throws -> [IMEvent] {
        try await sync.serialized("extras|\(conversation)") { [self] in
            let reader = reader(of: conversation)
            let address = try WuKongChannel.lookup(conversation, viewer: reader)
            let session = try await session(reader)
            var events: [IMEvent] = []
            while true {
                let cursor = await sync.extraCursor(conversation)
                let rows = try await client.extraSync(WKExtraSyncRequest(channelID: address.id, channelType: address.type,
                                                                         extraVersion: cursor, source: "imbridge", limit: 1000),
                                                      session: session)
                let pairs = await sync.absorb(rows, in: conversation)
                events += extrasCodec.events(rows: pairs, conversation: conversation, actor: actor, at: at)
                if rows.count < 1000 { break }
            }
            return events
        }
    }

    func syncReactions(_ conversation: ConversationRef) async throws -> [IMEvent] {
        try await sync.serialized("reactions|\(conversation)") { [self] in
            let reader = reader(of: conversation)
            let address = try WuKongChannel.lookup(conversation, viewer: reader)
            let session = try await session(reader)
            var events: [IMEvent] = []
            while true {
                let cursor = await sync.reactionCursor(conversation)
                let rows = try await client.reactionSync(WKReactionSyncRequest(channelID: address.id, channelType: address.type,
                                                                               seq: cursor, limit: 1000), session: session)
                events += extrasCodec.events(reactions: rows, conversation: conversation)
                if let last = rows.map(\.seq).max() { await sync.advanceReactions(conversation, to: last) }
                if rows.count < 1000 { break }
            }
            return events
        }
    }
}
