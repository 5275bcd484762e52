import Foundation

/// `POST /user/token`: registers a user's connection token (creates the user if missing).
public struct WKUserTokenRequest: Codable, Hashable, Sendable {
    public var uid: String
    public var token: String
    public var deviceFlag: UInt8
    public var deviceLevel: UInt8
    public init(uid: String, token: String, deviceFlag: UInt8 = 0, deviceLevel: UInt8 = 0) {
        self.uid = uid
        self.token = token
        self.deviceFlag = deviceFlag
        self.deviceLevel = deviceLevel
    }
    enum CodingKeys: String, CodingKey { case uid, token, deviceFlag = "device_flag", deviceLevel = "device_level" }
}

/// `POST /channel` (create/update + subscribers), `/channel/subscriber_add`, `/channel/subscriber_remove`.
/// `reset` 1 replaces the subscriber list; `temp_subscriber` 1 is refused by v2.2.5.
public struct WKChannelRequest: Codable, Hashable, Sendable {
    public var channelID: String
    public var channelType: UInt8
    public var reset: Int?
    public var tempSubscriber: Int?
    public var subscribers: [String]?
    public var large: Int?
    public var ban: Int?
    public var disband: Int?
    public var sendBan: Int?
    public var allowStranger: Int?
    public init(channelID: String, channelType: UInt8, reset: Int? = nil, subscribers: [String]? = nil) {
        self.channelID = channelID
        self.channelType = channelType
        self.reset = reset
        self.subscribers = subscribers
    }
    enum CodingKeys: String, CodingKey {
        case channelID = "channel_id", channelType = "channel_type", reset, tempSubscriber = "temp_subscriber"
        case subscribers, large, ban, disband, sendBan = "send_ban", allowStranger = "allow_stranger"
    }
}

/// `POST /message/send`. `payload` is base64 of the content JSON. API sends skip membership checks,
/// so `from_uid` may be any uid; an empty `from_uid` means the system uid. v2.2.5 ignores `setting`.
public struct WKSendRequest: Codable, Hashable, Sendable {
    public var header: WKHeader
    public var clientMsgNo: String?
    public var fromUID: String
    public var channelID: String
    public var channelType: UInt8
    public var expire: UInt32?
    public var subscribers: [String]?
    public var payload: Data
    public var tagKey: String?
    public var isStream: Int?
    public init(header: WKHeader = WKHeader(), clientMsgNo: String? = nil, fromUID: String, channelID: String,
                channelType: UInt8, expire: UInt32? = nil, subscribers: [String]? = nil, payload: Data) {
        self.header = header
        self.clientMsgNo = clientMsgNo
        self.fromUID = fromUID
        self.channelID = channelID
        self.channelType = channelType
        self.expire = expire
        self.subscribers = subscribers
        self.payload = payload
    }
    enum CodingKeys: String, CodingKey {
        case header, clientMsgNo = "client_msg_no", fromUID = "from_uid", channelID = "channel_id"
        case channelType = "channel_type", expire, subscribers, payload, tagKey = "tag_key", isStream = "is_stream"
    }
    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        header = try c.decodeIfPresent(WKHeader.self, forKey: .header) ?? WKHeader()
        clientMsgNo = try c.lenientString(.clientMsgNo)
        fromUID = try c.lenientString(.fromUID) ?? ""
        channelID = try c.lenientString(.channelID) ?? ""
        channelType = UInt8(truncatingIfNeeded: try c.lenientInt64(.channelType) ?? 0)
        expire = (try c.lenientInt64(.expire)).map { UInt32(truncatingIfNeeded: $0) }
        subscribers = try c.decodeIfPresent([String].self, forKey: .subscribers)
        payload = try c.decodeIfPresent(Data.self, forKey: .payload) ?? Data()
        tagKey = try c.lenientString(.tagKey)
        isStream = (try c.lenientInt64(.isStream)).map { Int($0) }
    }
}

/// The `/message/send` reply. v2.2.5 wraps it (`{"status":200,"data":{"message_id","client_msg_no"}}`);
/// the docs and the unreleased HEAD return it flat (`{"message_id","message_seq","client_msg_no"}`).
/// Both are accepted; `message_seq` is optional (v2 does not send it).
public struct WKSendResult: Hashable, Sendable {
    public var messageID: Int64
    public var clientMsgNo: String?
    public var messageSeq: UInt64?

    public init(messageID: Int64, clientMsgNo: String?, messageSeq: UInt64?) {
        self.messageID = messageID
        self.clientMsgNo = clientMsgNo
        self.messageSeq = messageSeq
    }

    /// Parses either reply shape; nil when the body has no `message_id` in either place.
    public static func parse(_ body: Data) -> WKSendResult? {
        guard let object = try? JSONSerialization.jsonObject(with: body) as? [String: Any] else { return nil }
        let source = (object["data"] as? [String: Any]) ?? object
        func int(_ value: Any?) -> Int64? {
            switch value {
            case let n as NSNumber: n.int64Value
            case let s as String: Int64(s)
            default: nil
            }
        }
        guard let id = int(source["message_id"]) ?? int(source["message_idstr"]) else { return nil }
        let seq = int(source["message_seq"]).flatMap { $0 > 0 ? UInt64($0) : nil }
        return WKSendResult(messageID: id, clientMsgNo: source["client_msg_no"] as? String, messageSeq: seq)
    }
}

/// `POST /message/sendbatch`: one person-channel message from `from_uid` to each subscriber.
public struct WKSendBatchRequest: Codable, Hashable, Sendable {
    public var header: WKHeader
    public var fromUID: String
    public var subscribers: [String]
    public var payload: Data
    public init(header: WKHeader = WKHeader(), fromUID: String, subscribers: [String], payload: Data) {
        self.header = header
        self.fromUID = fromUID
        self.subscribers = subscribers
        self.payload = payload
    }
    enum CodingKeys: String, CodingKey { case header, fromUID = "from_uid", subscribers, payload }
}

/// The bare `/message/sendbatch` reply (no `status`).
public struct WKSendBatchResponse: Codable, Hashable, Sendable {
    public var failUIDs: [String]
    public var reason: [String]
    public init(failUIDs: [String] = [], reason: [String] = []) {
        self.failUIDs = failUIDs
        self.reason = reason
    }
    enum CodingKeys: String, CodingKey { case failUIDs = "fail_uids", reason }
}

/// `POST /channel/messagesync`. Rules (results always ascending by seq):
/// - start = end = 0: the newest `limit`;
/// - `pull_mode` 1 (up): seqs in `[start, end)`, end 0 = open; the first `limit`;
/// - `pull_mode` 0 (down): only when end ≤ start: seqs in `(end, start]`, the `limit` highest.
public struct WKMessageSyncRequest: Codable, Hashable, Sendable {
    public var loginUID: String
    public var channelID: String
    public var channelType: UInt8
    public var startMessageSeq: UInt64
    public var endMessageSeq: UInt64
    public var limit: Int
    public var pullMode: Int
    public init(loginUID: String, channelID: String, channelType: UInt8, startMessageSeq: UInt64 = 0,
                endMessageSeq: UInt64 = 0, limit: Int, pullMode: Int = 0) {
        self.loginUID = loginUID
        self.channelID = channelID
        self.channelType = channelType
        self.startMessageSeq = startMessageSeq
        self.endMessageSeq = endMessageSeq
        self.limit = limit
        self.pullMode = pullMode
    }
    enum CodingKeys: String, CodingKey {
        case loginUID = "login_uid", channelID = "channel_id", channelType = "channel_type"
        case startMessageSeq = "start_message_seq", endMessageSeq = "end_message_seq", limit, pullMode = "pull_mode"
    }
}

/// The bare `/channel/messagesync` reply: start/end echo the request; `more` 1 when a full page came
/// back and the boundary was not reached.
public struct WKMessageSyncResponse: Codable, Hashable, Sendable {
    public var startMessageSeq: UInt64
    public var endMessageSeq: UInt64
    public var more: Int
    public var messages: [WKMessage]
    public init(startMessageSeq: UInt64, endMessageSeq: UInt64, more: Int, messages: [WKMessage]) {
        self.startMessageSeq = startMessageSeq
        self.endMessageSeq = endMessageSeq
        self.more = more
        self.messages = messages
    }
    enum CodingKeys: String, CodingKey {
        case startMessageSeq = "start_message_seq", endMessageSeq = "end_message_seq", more, messages
    }
}

/// `POST /conversation/sync`. `msg_count` must be > 0 (0 returns `[]`).
public struct WKConversationSyncRequest: Codable, Hashable, Sendable {
    public var uid: String
    public var version: Int64?
    public var lastMsgSeqs: String?
    public var msgCount: Int
    public var onlyUnread: Int?
    public var excludeChannelTypes: [UInt8]?
    public var page: Int?
    public var pageSize: Int?
    public init(uid: String, msgCount: Int, onlyUnread: Int? = nil) {
        self.uid = uid
        self.msgCount = msgCount
        self.onlyUnread = onlyUnread
    }
    enum CodingKeys: String, CodingKey {
        case uid, version, lastMsgSeqs = "last_msg_seqs", msgCount = "msg_count", onlyUnread = "only_unread"
        case excludeChannelTypes = "exclude_channel_types", page, pageSize = "page_size"
    }
}

/// One entry of the bare `/conversation/sync` array. Person channels name the **peer** uid here;
/// `recents` are newest first; `timestamp` seconds, `version` nanoseconds.
public struct WKConversation: Codable, Hashable, Sendable {
    public var channelID: String
    public var channelType: UInt8
    public var unread: Int
    public var timestamp: Int64
    public var lastMsgSeq: UInt64
    public var lastClientMsgNo: String
    public var offsetMsgSeq: Int64
    public var readedToMsgSeq: UInt64
    public var version: Int64
    public var recents: [WKMessage]
    public init(channelID: String, channelType: UInt8, unread: Int, timestamp: Int64, lastMsgSeq: UInt64,
                lastClientMsgNo: String, readedToMsgSeq: UInt64, version: Int64, recents: [WKMessage]) {
        self.channelID = channelID
        self.channelType = channelType
        self.unread = unread
        self.timestamp = timestamp
        self.lastMsgSeq = lastMsgSeq
        self.lastClientMsgNo = lastClientMsgNo
        self.offsetMsgSeq = 0
        self.readedToMsgSeq = readedToMsgSeq
        self.version = version
        self.recents = recents
    }
    enum CodingKeys: String, CodingKey {
        case channelID = "channel_id", channelType = "channel_type", unread, timestamp, lastMsgSeq = "last_msg_seq"
        case lastClientMsgNo = "last_client_msg_no", offsetMsgSeq = "offset_msg_seq", readedToMsgSeq = "readed_to_msg_seq"
        case version, recents
    }
}

/// `POST /conversations/clearUnread` (read-to = the channel's last seq).
public struct WKClearUnreadRequest: Codable, Hashable, Sendable {
    public var uid: String
    public var channelID: String
    public var channelType: UInt8
    public var messageSeq: UInt64?
    public init(uid: String, channelID: String, channelType: UInt8, messageSeq: UInt64? = nil) {
        self.uid = uid
        self.channelID = channelID
        self.channelType = channelType
        self.messageSeq = messageSeq
    }
    enum CodingKeys: String, CodingKey { case uid, channelID = "channel_id", channelType = "channel_type", messageSeq = "message_seq" }
}

/// WuKongIM's status envelope: `{"status":200}`, `{"status":404}` (HTTP 200 "not found"),
/// `{"msg":"…","status":400}` (HTTP 400), protocol reason codes as `{"status":n}`.
public struct WKStatus: Codable, Hashable, Sendable {
    public var status: Int
    public var msg: String?
    public init(status: Int, msg: String? = nil) {
        self.status = status
        self.msg = msg
    }
    public static let ok = WKStatus(status: 200)

    enum CodingKeys: String, CodingKey { case status, msg }

    /// Tolerant: `{"status":"ok"}` (shown as success in WuKongIM's documentation) reads as 200.
    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        if let text = try? c.decode(String.self, forKey: .status) {
            status = text.lowercased() == "ok" ? 200 : (Int(text) ?? 0)
        } else {
            status = Int(try c.lenientInt64(.status) ?? 0)
        }
        msg = try c.lenientString(.msg)
    }
}

/// `POST /messages`: look messages up by seq, id or client number; reply shaped like messagesync.
public struct WKLookupRequest: Codable, Hashable, Sendable {
    public var loginUID: String?
    public var channelID: String
    public var channelType: UInt8
    public var messageSeqs: [UInt64]?
    public var messageIDs: [Int64]?
    public var clientMsgNos: [String]?
    public init(loginUID: String?, channelID: String, channelType: UInt8, messageSeqs: [UInt64]? = nil,
                messageIDs: [Int64]? = nil, clientMsgNos: [String]? = nil) {
        self.loginUID = loginUID
        self.channelID = channelID
        self.channelType = channelType
        self.messageSeqs = messageSeqs
        self.messageIDs = messageIDs
        self.clientMsgNos = clientMsgNos
    }
    enum CodingKeys: String, CodingKey {
        case loginUID = "login_uid", channelID = "channel_id", channelType = "channel_type", messageSeqs = "message_seqs"
        case messageIDs = "message_ids", clientMsgNos = "client_msg_nos"
    }
}
