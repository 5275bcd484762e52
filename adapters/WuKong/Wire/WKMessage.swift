import Foundation

/// `header` of a WuKongIM message: three 0/1 flags, all default 0.
/// - `no_persist`: not stored (no history, no `msg.notify`);
/// - `red_dot`: the receiving client counts it unread;
/// - `sync_once`: a write-diffusion (CMD) message, stored in the channel's CMD channel.
public struct WKHeader: Codable, Hashable, Sendable {
    public var noPersist: Int
    public var redDot: Int
    public var syncOnce: Int

    public init(noPersist: Int = 0, redDot: Int = 0, syncOnce: Int = 0) {
        self.noPersist = noPersist
        self.redDot = redDot
        self.syncOnce = syncOnce
    }

    enum CodingKeys: String, CodingKey {
        case noPersist = "no_persist", redDot = "red_dot", syncOnce = "sync_once"
    }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        noPersist = Int(try c.lenientInt64(.noPersist) ?? 0)
        redDot = Int(try c.lenientInt64(.redDot) ?? 0)
        syncOnce = Int(try c.lenientInt64(.syncOnce) ?? 0)
    }
}

/// WuKongIM's message object (`MessageResp`, v2.2.5), as returned by `/channel/messagesync`,
/// conversation `recents`, and the `msg.notify` / `msg.offline` webhooks.
///
/// - `payload` is the content JSON (`{"type":N,…}`), carried as standard base64 (Go `[]byte`).
/// - `timestamp` is **seconds**; `message_seq` is per channel from 1.
/// - Person channels: `channel_id` is the **recipient** uid when the server renders a stored message
///   (the codec normalises this into `ConversationRef.direct`).
/// - `to_uids`, `compress`, `compress_to_uids`, `source_id` appear only on `msg.offline`.
/// Decoding is tolerant (ids as numbers or strings); encoding emits the v2.2.5 form.
public struct WKMessage: Codable, Hashable, Sendable {
    public var header: WKHeader
    public var setting: UInt8
    public var messageID: Int64
    public var messageIDStr: String
    public var clientMsgNo: String
    public var messageSeq: UInt64
    public var fromUID: String
    public var channelID: String
    public var channelType: UInt8
    public var topic: String?
    public var expire: UInt32
    public var timestamp: Int64
    public var payload: Data
    public var toUIDs: [String]?
    public var compress: String?
    public var compressToUIDs: Data?
    public var sourceID: Int64?

    public init(header: WKHeader = WKHeader(), setting: UInt8 = 0, messageID: Int64, clientMsgNo: String = "",
                messageSeq: UInt64 = 0, fromUID: String, channelID: String, channelType: UInt8, topic: String? = nil,
                expire: UInt32 = 0, timestamp: Int64, payload: Data, toUIDs: [String]? = nil) {
        self.header = header
        self.setting = setting
        self.messageID = messageID
        self.messageIDStr = String(messageID)
        self.clientMsgNo = clientMsgNo
        self.messageSeq = messageSeq
        self.fromUID = fromUID
        self.channelID = channelID
        self.channelType = channelType
        self.topic = topic
        self.expire = expire
        self.timestamp = timestamp
        self.payload = payload
        self.toUIDs = toUIDs
    }

    enum CodingKeys: String, CodingKey {
        case header, setting, expire, timestamp, payload, topic, compress
        case messageID = "message_id", messageIDStr = "message_idstr", clientMsgNo = "client_msg_no"
        case messageSeq = "message_seq", fromUID = "from_uid", channelID = "channel_id", channelType = "channel_type"
        case toUIDs = "to_uids", compressToUIDs = "compress_to_uids", sourceID = "source_id"
    }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        header = try c.decodeIfPresent(WKHeader.self, forKey: .header) ?? WKHeader()
        setting = UInt8(truncatingIfNeeded: try c.lenientInt64(.setting) ?? 0)
        let idText = try c.lenientString(.messageIDStr)
        guard let id = try c.lenientInt64(.messageID) ?? idText.flatMap({ Int64($0) }) else {
            throw DecodingError.keyNotFound(CodingKeys.messageID, .init(codingPath: c.codingPath, debugDescription: "message_id missing"))
        }
        messageID = id
        messageIDStr = idText ?? String(id)
        clientMsgNo = try c.lenientString(.clientMsgNo) ?? ""
        messageSeq = UInt64(max(0, try c.lenientInt64(.messageSeq) ?? 0))
        fromUID = try c.lenientString(.fromUID) ?? ""
        channelID = try c.lenientString(.channelID) ?? ""
        channelType = UInt8(truncatingIfNeeded: try c.lenientInt64(.channelType) ?? 0)
        topic = try c.lenientString(.topic)
        expire = UInt32(truncatingIfNeeded: try c.lenientInt64(.expire) ?? 0)
        timestamp = try c.lenientInt64(.timestamp) ?? 0
        payload = try c.decodeIfPresent(Data.self, forKey: .payload) ?? Data()
        toUIDs = try c.decodeIfPresent([String].self, forKey: .toUIDs)
        compress = try c.lenientString(.compress)
        compressToUIDs = try c.decodeIfPresent(Data.self, forKey: .compressToUIDs)
        sourceID = try c.lenientInt64(.sourceID)
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(header, forKey: .header)
        try c.encode(setting, forKey: .setting)
        try c.encode(messageID, forKey: .messageID)
        try c.encode(messageIDStr, forKey: .messageIDStr)
        try c.encode(clientMsgNo, forKey: .clientMsgNo)
        try c.encode(messageSeq, forKey: .messageSeq)
        try c.encode(fromUID, forKey: .fromUID)
        try c.encode(channelID, forKey: .channelID)
        try c.encode(channelType, forKey: .channelType)
        if let topic, !topic.isEmpty { try c.encode(topic, forKey: .topic) }
        try c.encode(expire, forKey: .expire)
        try c.encode(timestamp, forKey: .timestamp)
        try c.encode(payload, forKey: .payload)
        try c.encodeIfPresent(toUIDs, forKey: .toUIDs)
        try c.encodeIfPresent(compress, forKey: .compress)
        try c.encodeIfPresent(compressToUIDs, forKey: .compressToUIDs)
        try c.encodeIfPresent(sourceID, forKey: .sourceID)
    }
}

/// Setting-byte bits (`setting`), from the wkproto module.
public enum WKSetting {
    public static let receipt: UInt8 = 0x80
    /// Used by TangSengDaoDao only: do not update the conversation (CMDs).
    public static let noUpdateConversation: UInt8 = 0x40
    public static let signal: UInt8 = 0x20
    public static let noEncrypt: UInt8 = 0x10
    public static let topic: UInt8 = 0x08
    public static let stream: UInt8 = 0x02
}
