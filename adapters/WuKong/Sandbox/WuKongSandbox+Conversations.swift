import Foundation
import IMCore
import IMHTTP
import WuKong

/// `/conversation/sync`: one entry per conversation of `uid` with at least one message; CMD channels
/// and the DM with the system uid are left out; person entries name the peer; `recents` newest first;
/// `unread` = last seq − read-to (0 when the last message is the user's own); newest conversation first.
extension WuKongSandbox {
    func conversationSync(_ request: HTTPRequestData) throws -> HTTPResponseData {
        let body = try Self.decode(WKConversationSyncRequest.self, request)
        guard !body.uid.isEmpty else { throw SandboxRefusal.badRequest("uid不能为空！") }
        guard body.msgCount > 0 else { return Self.bare([WKConversation]()) }
        let excluded = Set(body.excludeChannelTypes ?? [])
        var list: [WKConversation] = state.withLock { state in
            state.messages.compactMap { key, messages -> WKConversation? in
                guard let last = messages.last, !key.isCmd, !excluded.contains(key.type),
                      state.members(of: key).contains(body.uid) || state.readTo[body.uid]?[key] != nil else { return nil }
                var channelID = key.id
                if key.type == WKChannelType.person {
                    channelID = WuKongChannel.renderedPersonChannel(fakeID: key.id, fromUID: body.uid)
                    if channelID == WuKongChannel.systemUID { return nil }
                }
                let readTo = state.readTo[body.uid]?[key] ?? 0
                let unread = last.fromUID == body.uid ? 0 : Int(last.messageSeq > readTo ? last.messageSeq - readTo : 0)
                if body.onlyUnread == 1 || (body.version ?? 0) > 0, unread == 0 { return nil }
                let recents = messages.suffix(body.msgCount).reversed().map(WuKongSandboxState.render)
                return WKConversation(channelID: channelID, channelType: key.type, unread: unread, timestamp: last.timestamp,
                                      lastMsgSeq: last.messageSeq, lastClientMsgNo: last.clientMsgNo, readedToMsgSeq: readTo,
                                      version: last.timestamp * 1_000_000_000, recents: recents)
            }
        }
        list.sort { ($0.timestamp, $0.lastMsgSeq, $0.channelID) > ($1.timestamp, $1.lastMsgSeq, $1.channelID) }
        if let page = body.page, page >= 1 {
            let size = min(max(body.pageSize ?? 100, 1), 500)
            list = Array(list.dropFirst((page - 1) * size).prefix(size))
        }
        return Self.bare(list)
    }
}
