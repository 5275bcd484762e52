import IMCore

/// `POST /v1/messages` body. Field names and types exactly as the vendor documents them.
/// `no_offline` / `no_notification` are emitted only when true (as the official Java client does);
/// the sandbox accepts them either way.
public struct JMSendRequest: Codable, Hashable, Sendable {
    public var version: Int
    public var targetType: String
    public var targetID: String
    public var targetAppKey: String?
    public var targetName: String?
    public var fromType: String
    public var fromID: String
    public var fromName: String?
    public var msgType: String
    public var noOffline: Bool?
    public var noNotification: Bool?
    public var notification: JMNotification?
    public var msgBody: JSONValue

    public init(version: Int = 1, targetType: String, targetID: String, targetAppKey: String? = nil, targetName: String? = nil,
                fromType: String = "admin", fromID: String, fromName: String? = nil, msgType: String,
                noOffline: Bool? = nil, noNotification: Bool? = nil, notification: JMNotification? = nil, msgBody: JSONValue) {
        self.version = version
        self.targetType = targetType
        self.targetID = targetID
        self.targetAppKey = targetAppKey
        self.targetName = targetName
        self.fromType = fromType
        self.fromID = fromID
        self.fromName = fromName
        self.msgType = msgType
        self.noOffline = noOffline
        self.noNotification = noNotification
        self.notification = notification
        self.msgBody = msgBody
    }

    enum CodingKeys: String, CodingKey {
        case version, notification
        case targetType = "target_type", targetID = "target_id", targetAppKey = "target_appkey", targetName = "target_name"
        case fromType = "from_type", fromID = "from_id", fromName = "from_name", msgType = "msg_type"
        case noOffline = "no_offline", noNotification = "no_notification", msgBody = "msg_body"
    }
}

/// Custom notification-bar text (`notification: {title, alert}`).
public struct JMNotification: Codable, Hashable, Sendable {
    public var title: String?
    public var alert: String?
    public init(title: String? = nil, alert: String? = nil) {
        self.title = title
        self.alert = alert
    }
}

/// `201 {"msg_id": 43143728109, "msg_ctime": 1493794522950}`; `msg_ctime` is milliseconds.
public struct JMSendResult: Codable, Hashable, Sendable {
    public var msgID: Int64
    public var msgCtime: Int64
    public init(msgID: Int64, msgCtime: Int64) {
        self.msgID = msgID
        self.msgCtime = msgCtime
    }
    enum CodingKeys: String, CodingKey {
        case msgID = "msg_id", msgCtime = "msg_ctime"
    }
}

/// One message as report v2 (history) and the routing push deliver it.
/// `create_time` is seconds, `msg_ctime` milliseconds; `msgid` (not `msg_id`) is the server id.
/// Optional fields are omitted when absent so the sandbox's output stays the documented shape.
public struct JMHistoryMessage: Codable, Hashable, Sendable {
    public var version: Int
    public var targetType: String
    public var targetID: String
    public var targetName: String?
    public var targetAppKey: String?
    public var fromType: String
    public var fromID: String
    public var fromName: String?
    public var fromAppKey: String?
    public var fromPlatform: String?
    public var msgType: String
    public var msgBody: JSONValue
    public var createTime: Int64
    public var msgCtime: Int64
    public var msgid: Int64
    public var msgLevel: Int?
    public var setFromName: Int?
    public var noOffline: Bool?
    public var noNotification: Bool?
    /// The send's custom notification text, where a record carries it (the documented report fields do
    /// not list it: UNCONFIRMED; IMBridge's sandbox returns what was sent). Read when present.
    public var notification: JMNotification?

    public init(version: Int = 1, targetType: String, targetID: String, targetName: String? = "", targetAppKey: String? = "",
                fromType: String, fromID: String, fromName: String? = "", fromAppKey: String? = nil, fromPlatform: String? = nil,
                msgType: String, msgBody: JSONValue, createTime: Int64, msgCtime: Int64, msgid: Int64, msgLevel: Int? = 0,
                setFromName: Int? = nil, noOffline: Bool? = nil, noNotification: Bool? = nil, notification: JMNotification? = nil) {
        self.version = version
        self.targetType = targetType
        self.targetID = targetID
        self.targetName = targetName
        self.targetAppKey = targetAppKey
        self.fromType = fromType
        self.fromID = fromID
        self.fromName = fromName
        self.fromAppKey = fromAppKey
        self.fromPlatform = fromPlatform
        self.msgType = msgType
        self.msgBody = msgBody
        self.createTime = createTime
        self.msgCtime = msgCtime
        self.msgid = msgid
        self.msgLevel = msgLevel
        self.setFromName = setFromName
        self.noOffline = noOffline
        self.noNotification = noNotification
        self.notification = notification
    }

    enum CodingKeys: String, CodingKey {
        case version, msgid, notification
        case targetType = "target_type", targetID = "target_id", targetName = "target_name", targetAppKey = "target_appkey"
        case fromType = "from_type", fromID = "from_id", fromName = "from_name", fromAppKey = "from_appkey"
        case fromPlatform = "from_platform", msgType = "msg_type", msgBody = "msg_body", createTime = "create_time"
        case msgCtime = "msg_ctime", msgLevel = "msg_level", setFromName = "set_from_name"
        case noOffline = "no_offline", noNotification = "no_notification"
    }

    /// Tolerant decoding: `target_id`/`msgid` may arrive as strings or numbers; `version` may be missing.
    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        func int64(_ key: CodingKeys) throws -> Int64? {
            guard let value = try c.decodeIfPresent(JSONValue.self, forKey: key) else { return nil }
            return value.int64Value
        }
        func string(_ key: CodingKeys) throws -> String? {
            guard let value = try c.decodeIfPresent(JSONValue.self, forKey: key) else { return nil }
            return value.stringValue
        }
        version = Int(try int64(.version) ?? 1)
        targetType = try c.decode(String.self, forKey: .targetType)
        guard let target = try string(.targetID) else {
            throw DecodingError.keyNotFound(CodingKeys.targetID, .init(codingPath: c.codingPath, debugDescription: "target_id"))
        }
        targetID = target
        targetName = try string(.targetName)
        targetAppKey = try string(.targetAppKey)
        fromType = try c.decodeIfPresent(String.self, forKey: .fromType) ?? "user"
        fromID = try c.decode(String.self, forKey: .fromID)
        fromName = try string(.fromName)
        fromAppKey = try string(.fromAppKey)
        fromPlatform = try string(.fromPlatform)
        msgType = try c.decode(String.self, forKey: .msgType)
        msgBody = try c.decodeIfPresent(JSONValue.self, forKey: .msgBody) ?? .object([:])
        msgCtime = try int64(.msgCtime) ?? 0
        createTime = try int64(.createTime) ?? msgCtime / 1000
        guard let id = try int64(.msgid) else {
            throw DecodingError.keyNotFound(CodingKeys.msgid, .init(codingPath: c.codingPath, debugDescription: "msgid"))
        }
        msgid = id
        msgLevel = try int64(.msgLevel).map { Int($0) }
        setFromName = try int64(.setFromName).map { Int($0) }
        noOffline = try c.decodeIfPresent(JSONValue.self, forKey: .noOffline).flatMap { Self.bool($0) }
        noNotification = try c.decodeIfPresent(JSONValue.self, forKey: .noNotification).flatMap { Self.bool($0) }
        notification = try? c.decodeIfPresent(JMNotification.self, forKey: .notification)
    }

    /// A vendor flag as JMessage writes it (`true`, `1`, `"true"`, `"0"` …); nil for anything else.
    public static func bool(_ value: JSONValue) -> Bool? {
        switch value {
        case .bool(let flag): flag
        case .int(let number): number != 0
        case .string(let text): ["true", "1"].contains(text.lowercased()) ? true : (["false", "0"].contains(text.lowercased()) ? false : nil)
        default: nil
        }
    }
}

/// Report v2 page: `{"total", "cursor", "count", "messages"}`. `cursor` is absent on the last page
/// (the sandbox omits it; an empty string from the vendor is read as "no more", see docs).
public struct JMHistoryPage: Codable, Hashable, Sendable {
    public var total: Int
    public var cursor: String?
    public var count: Int
    public var messages: [JMHistoryMessage]
    public init(total: Int, cursor: String?, count: Int, messages: [JMHistoryMessage]) {
        self.total = total
        self.cursor = cursor
        self.count = count
        self.messages = messages
    }
    /// The cursor when there is one to follow.
    public var nextCursor: String? { cursor.flatMap { $0.isEmpty ? nil : $0 } }
}

/// The routing push body: `{"total": N, "messages": [<report message>…]}`.
public struct JMRoutingPush: Codable, Hashable, Sendable {
    public var total: Int
    public var messages: [JMHistoryMessage]
    public init(total: Int, messages: [JMHistoryMessage]) {
        self.total = total
        self.messages = messages
    }
}
