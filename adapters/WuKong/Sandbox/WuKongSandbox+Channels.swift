import Foundation
import IMCore
import IMHTTP
import WuKong

/// `POST /conversation/channels {"uid"}` → bare `[{"channel_id","channel_type"}]`: every channel with a
/// stored message that `uid` sees (a subscriber, a half of the person channel, or a sender in it), CMD
/// channels left out; person channels under their fake id `a@b`, as WuKongIM lists them.
extension WuKongSandbox {
    func conversationChannels(_ request: HTTPRequestData) throws -> HTTPResponseData {
        let body = try Self.decode(WKConversationChannelsRequest.self, request)
        guard !body.uid.isEmpty else { throw SandboxRefusal.badRequest("uid不能为空！") }
        let channels: [WKChannelRef] = state.withLock { state in
            state.messages.compactMap { key, messages -> WKChannelRef? in
                guard !messages.isEmpty, !key.isCmd,
                      state.members(of: key).contains(body.uid) || messages.contains(where: { $0.fromUID == body.uid }) else { return nil }
                return WKChannelRef(channelID: key.id, channelType: key.type)
            }
        }
        return Self.bare(channels.sorted { ($0.channelType, $0.channelID) < ($1.channelType, $1.channelID) })
    }
}
