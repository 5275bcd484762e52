import Foundation
import IMCore

/// A user's groups (docs/adapters/wukong.md, "Users and groups"). Neither WuKongIM nor the business
/// server's user routes answer "which groups is this user in", but the business server posts a
/// "group created" notice (type 1001) into every group it creates, so each member of a group has a
/// conversation with its channel: the user's groups are the group channels (type 2) of the user's
/// `/conversation/sync` list, read page by page (`page` from 1, `page_size` up to 500) until a short
/// page. A channel whose conversation holds no message (a group WuKongIM knows only as a channel,
/// never created through the business server) is not listed.
extension WuKongBackend {
    static let conversationPageSize = 500

    public func groups(of user: UserID) async throws -> [GroupID] {
        var seen = Set<String>()
        var groups: [GroupID] = []
        var page = 1
        while true {
            var request = WKConversationSyncRequest(uid: user.rawValue, msgCount: 1)
            request.excludeChannelTypes = [WKChannelType.person]
            request.page = page
            request.pageSize = Self.conversationPageSize
            let entries = try await client.conversations(request)
            for entry in entries where entry.channelType == WKChannelType.group && !entry.channelID.hasSuffix(WuKongChannel.cmdSuffix) {
                if seen.insert(entry.channelID).inserted { groups.append(GroupID(entry.channelID)) }
            }
            guard entries.count == Self.conversationPageSize else { return groups }
            page += 1
        }
    }
}
