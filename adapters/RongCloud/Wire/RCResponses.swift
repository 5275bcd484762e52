import IMCore

/// JSON bodies of the RongCloud Server API's answers (docs/adapters/rongcloud.md).

/// Every failure: `{"code":1002,"errorMessage":"..."}`. Some SDK-side validations use `msg` instead of
/// `errorMessage`; both decode.
public struct RCErrorEnvelope: Codable, Hashable, Sendable {
    public var code: Int
    public var errorMessage: String?

    public init(code: Int, errorMessage: String?) {
        self.code = code
        self.errorMessage = errorMessage
    }

    private enum CodingKeys: String, CodingKey { case code, errorMessage, msg }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        code = try container.decode(Int.self, forKey: .code)
        errorMessage = try container.decodeIfPresent(String.self, forKey: .errorMessage)
            ?? container.decodeIfPresent(String.self, forKey: .msg)
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(code, forKey: .code)
        try container.encodeIfPresent(errorMessage, forKey: .errorMessage)
    }

    /// From a parsed body, as `init(from:)` decodes it; nil for any body that decoder might not read the
    /// same way (the caller then decodes it with `JSONDecoder`).
    init?(parsed: JSONValue) {
        guard case .object(let fields) = parsed, case .int(let code)? = fields["code"],
              let errorMessage = RCParsed.optionalString(fields["errorMessage"]),
              let msg = RCParsed.optionalString(fields["msg"]) else { return nil }
        self.init(code: Int(code), errorMessage: errorMessage ?? msg)
    }
}

/// Reading answers from a parsed body (`RCErrorEnvelope(parsed:)`).
enum RCParsed {
    /// `.some(nil)` for a missing or null member, `.some(text)` for a string, nil for anything else.
    static func optionalString(_ value: JSONValue?) -> String?? {
        switch value {
        case nil, .null?: .some(nil)
        case .string(let text)?: .some(text)
        default: nil
        }
    }
}

/// `/user/getToken.json`: `{"code":200,"userId":"u1","token":"..."}`.
public struct RCTokenResponse: Codable, Hashable, Sendable {
    public var code: Int
    public var userId: String
    public var token: String
    public init(code: Int = 200, userId: String, token: String) {
        self.code = code
        self.userId = userId
        self.token = token
    }
}

/// One entry of a publish response's `messageUIDs`: the recipient (`userId` for private, `groupId` for
/// group, `chatroomId` for chatroom) and the id the server gave that copy.
public struct RCMessageUIDEntry: Codable, Hashable, Sendable {
    public var userId: String?
    public var groupId: String?
    public var chatroomId: String?
    public var messageUID: String
    public init(userId: String? = nil, groupId: String? = nil, chatroomId: String? = nil, messageUID: String) {
        self.userId = userId
        self.groupId = groupId
        self.chatroomId = chatroomId
        self.messageUID = messageUID
    }

    /// The recipient this entry names, whichever key carried it.
    public var target: String? { userId ?? groupId ?? chatroomId }
}

/// `/message/{private,group}/publish.json`: `{"code":200,"messageUIDs":[{"userId":"u2","messageUID":"…"}]}`.
/// Older servers answer `{"code":200}` only (hence optional).
public struct RCPublishResponse: Codable, Hashable, Sendable {
    public var code: Int
    public var messageUIDs: [RCMessageUIDEntry]?
    public init(code: Int = 200, messageUIDs: [RCMessageUIDEntry]?) {
        self.code = code
        self.messageUIDs = messageUIDs
    }

    /// From a parsed body, as the synthesized `init(from:)` decodes it; nil for any body it might not
    /// read the same way.
    init?(parsed: JSONValue) {
        guard case .object(let fields) = parsed, case .int(let code)? = fields["code"] else { return nil }
        switch fields["messageUIDs"] {
        case nil, .null?:
            self.init(code: Int(code), messageUIDs: nil)
        case .array(let items)?:
            var entries: [RCMessageUIDEntry] = []
            entries.reserveCapacity(items.count)
            for item in items {
                guard case .object(let entry) = item, case .string(let uid)? = entry["messageUID"],
                      let user = RCParsed.optionalString(entry["userId"]), let group = RCParsed.optionalString(entry["groupId"]),
                      let room = RCParsed.optionalString(entry["chatroomId"]) else { return nil }
                entries.append(RCMessageUIDEntry(userId: user, groupId: group, chatroomId: room, messageUID: uid))
            }
            self.init(code: Int(code), messageUIDs: entries)
        default:
            return nil
        }
    }
}

/// One key of `/message/expansion/query.json`: its value `v` and the server's opaque `ts`.
public struct RCExpansionValue: Codable, Hashable, Sendable {
    public var v: String
    public var ts: Int64
    public init(v: String, ts: Int64) {
        self.v = v
        self.ts = ts
    }
}

/// `{"code":200,"extraContent":{"k":{"v":"…","ts":33831605613}}}`.
public struct RCExpansionQueryResponse: Codable, Hashable, Sendable {
    public var code: Int
    public var extraContent: [String: RCExpansionValue]
    public init(code: Int = 200, extraContent: [String: RCExpansionValue]) {
        self.code = code
        self.extraContent = extraContent
    }
}

/// `/v3/message/{private,group}/query.json`: `{"code":200,"data":[…]}`, oldest first.
public struct RCHistoryResponse: Codable, Hashable, Sendable {
    public var code: Int
    public var data: [RCHistoryMessage]
    public init(code: Int = 200, data: [RCHistoryMessage]) {
        self.code = code
        self.data = data
    }
}

/// One message of a history page (JAVA `HistoryMessage`). `content` is the content JSON as a string;
/// `extraContent` (when `expansion` is true) is a JSON string of the query shape `{"k":{"v","ts"}}`
/// (UNCONFIRMED; plain `{"k":"v"}` is accepted too).
public struct RCHistoryMessage: Codable, Hashable, Sendable {
    public var targetId: String
    public var fromUserId: String
    public var messageUID: String
    public var msgTime: Int64
    public var objectName: String
    public var content: String
    public var expansion: Bool?
    public var extraContent: String?
    public var busChannel: String?

    public init(targetId: String, fromUserId: String, messageUID: String, msgTime: Int64, objectName: String,
                content: String, expansion: Bool? = nil, extraContent: String? = nil, busChannel: String? = nil) {
        self.targetId = targetId
        self.fromUserId = fromUserId
        self.messageUID = messageUID
        self.msgTime = msgTime
        self.objectName = objectName
        self.content = content
        self.expansion = expansion
        self.extraContent = extraContent
        self.busChannel = busChannel
    }
}
