import Foundation

// Tolerant decoders for request bodies (what the sandbox reads): every field the server defaults is
// optional on input, numbers may be strings. Encoding stays the synthesized v2.2.5 form.

extension WKUserTokenRequest {
    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        self.init(uid: try c.lenientString(.uid) ?? "", token: try c.lenientString(.token) ?? "",
                  deviceFlag: UInt8(truncatingIfNeeded: try c.lenientInt64(.deviceFlag) ?? 0),
                  deviceLevel: UInt8(truncatingIfNeeded: try c.lenientInt64(.deviceLevel) ?? 0))
    }
}

extension WKChannelRequest {
    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        self.init(channelID: try c.lenientString(.channelID) ?? "",
                  channelType: UInt8(truncatingIfNeeded: try c.lenientInt64(.channelType) ?? 0),
                  reset: (try c.lenientInt64(.reset)).map { Int($0) }, subscribers: try c.decodeIfPresent([String].self, forKey: .subscribers))
        tempSubscriber = (try c.lenientInt64(.tempSubscriber)).map { Int($0) }
        large = (try c.lenientInt64(.large)).map { Int($0) }
        ban = (try c.lenientInt64(.ban)).map { Int($0) }
        disband = (try c.lenientInt64(.disband)).map { Int($0) }
        sendBan = (try c.lenientInt64(.sendBan)).map { Int($0) }
        allowStranger = (try c.lenientInt64(.allowStranger)).map { Int($0) }
    }
}

extension WKSendBatchRequest {
    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        self.init(header: try c.decodeIfPresent(WKHeader.self, forKey: .header) ?? WKHeader(),
                  fromUID: try c.lenientString(.fromUID) ?? "", subscribers: try c.decodeIfPresent([String].self, forKey: .subscribers) ?? [],
                  payload: try c.decodeIfPresent(Data.self, forKey: .payload) ?? Data())
    }
}

extension WKMessageSyncRequest {
    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        self.init(loginUID: try c.lenientString(.loginUID) ?? "", channelID: try c.lenientString(.channelID) ?? "",
                  channelType: UInt8(truncatingIfNeeded: try c.lenientInt64(.channelType) ?? 0),
                  startMessageSeq: UInt64(max(0, try c.lenientInt64(.startMessageSeq) ?? 0)),
                  endMessageSeq: UInt64(max(0, try c.lenientInt64(.endMessageSeq) ?? 0)),
                  limit: Int(try c.lenientInt64(.limit) ?? 0), pullMode: Int(try c.lenientInt64(.pullMode) ?? 0))
    }
}

extension WKConversationSyncRequest {
    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        self.init(uid: try c.lenientString(.uid) ?? "", msgCount: Int(try c.lenientInt64(.msgCount) ?? 0),
                  onlyUnread: (try c.lenientInt64(.onlyUnread)).map { Int($0) })
        version = try c.lenientInt64(.version)
        lastMsgSeqs = try c.lenientString(.lastMsgSeqs)
        excludeChannelTypes = try c.decodeIfPresent([UInt8].self, forKey: .excludeChannelTypes)
        page = (try c.lenientInt64(.page)).map { Int($0) }
        pageSize = (try c.lenientInt64(.pageSize)).map { Int($0) }
    }
}

extension WKExtraSyncRequest {
    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        self.init(channelID: try c.lenientString(.channelID) ?? "", channelType: UInt8(truncatingIfNeeded: try c.lenientInt64(.channelType) ?? 0),
                  extraVersion: try c.lenientInt64(.extraVersion) ?? 0, source: try c.lenientString(.source),
                  limit: (try c.lenientInt64(.limit)).map { Int($0) })
    }
}

extension WKEditRequest {
    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        self.init(messageID: try c.lenientString(.messageID) ?? "", messageSeq: UInt64(max(0, try c.lenientInt64(.messageSeq) ?? 0)),
                  channelID: try c.lenientString(.channelID) ?? "", channelType: UInt8(truncatingIfNeeded: try c.lenientInt64(.channelType) ?? 0),
                  contentEdit: try c.lenientString(.contentEdit) ?? "")
    }
}

extension WKReactionSyncRequest {
    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        self.init(channelID: try c.lenientString(.channelID) ?? "", channelType: UInt8(truncatingIfNeeded: try c.lenientInt64(.channelType) ?? 0),
                  seq: try c.lenientInt64(.seq) ?? 0, limit: (try c.lenientInt64(.limit)).map { Int($0) })
    }
}
