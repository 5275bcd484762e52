/// `POST /conversation/channels {"uid"}`: the channels of a user's conversation list, as a bare array
/// `[{"channel_id","channel_type"}]`. Person channels appear under their **fake** id `a@b` here
/// (docs/adapters/wukong.md, "Conversations").
public struct WKConversationChannelsRequest: Codable, Hashable, Sendable {
    public var uid: String
    public init(uid: String) { self.uid = uid }
}

public struct WKChannelRef: Codable, Hashable, Sendable {
    public var channelID: String
    public var channelType: UInt8
    public init(channelID: String, channelType: UInt8) {
        self.channelID = channelID
        self.channelType = channelType
    }
    enum CodingKeys: String, CodingKey {
        case channelID = "channel_id", channelType = "channel_type"
    }
}
