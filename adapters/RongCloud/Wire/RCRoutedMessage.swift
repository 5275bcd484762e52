import IMHTTP
/// One message as the 全量消息路由 (message routing) callback posts it: a form body (docs/adapters/rongcloud.md).
///
/// `toUserId` is the recipient for `PERSON`, the group for `GROUP`, the chatroom for `TEMPGROUP`.
/// `msgTimestamp` is the server's receive time in milliseconds (sent as a string). `groupUserIds`
/// repeats and is present only for directed group messages. `expansion` / `extraContent` (the initial
/// keys as `{"k":"v"}`) are not in the vendor's field list: UNCONFIRMED whether the real server sends
/// them; the sandbox does for extensible messages and the receiver reads them when present.
public struct RCRoutedMessage: Hashable, Sendable {
    public var fromUserId: String
    public var toUserId: String
    public var objectName: String
    public var content: String
    public var channelType: String
    public var msgTimestamp: Int64
    public var msgUID: String
    public var originalMsgUID: String?
    public var sensitiveType: Int?
    public var source: String?
    public var busChannel: String?
    public var groupUserIds: [String]
    public var expansion: Bool?
    public var extraContent: String?

    public init(fromUserId: String, toUserId: String, objectName: String, content: String, channelType: String,
                msgTimestamp: Int64, msgUID: String, originalMsgUID: String? = nil, sensitiveType: Int? = nil,
                source: String? = nil, busChannel: String? = nil, groupUserIds: [String] = [], expansion: Bool? = nil,
                extraContent: String? = nil) {
        self.fromUserId = fromUserId
        self.toUserId = toUserId
        self.objectName = objectName
        self.content = content
        self.channelType = channelType
        self.msgTimestamp = msgTimestamp
        self.msgUID = msgUID
        self.originalMsgUID = originalMsgUID
        self.sensitiveType = sensitiveType
        self.source = source
        self.busChannel = busChannel
        self.groupUserIds = groupUserIds
        self.expansion = expansion
        self.extraContent = extraContent
    }

    public var form: FormBody {
        var form = FormBody()
        form.append("fromUserId", fromUserId)
        form.append("toUserId", toUserId)
        form.append("objectName", objectName)
        form.append("content", content)
        form.append("channelType", channelType)
        form.append("msgTimestamp", String(msgTimestamp))
        form.append("msgUID", msgUID)
        form.append("originalMsgUID", originalMsgUID)
        form.append("sensitiveType", sensitiveType.map { String($0) })
        form.append("source", source)
        form.append("busChannel", busChannel)
        for user in groupUserIds { form.append("groupUserIds", user) }
        form.append("expansion", expansion)
        form.append("extraContent", extraContent)
        return form
    }

    /// The names of the fields that must be present and non-empty.
    public static let requiredFields = ["fromUserId", "toUserId", "objectName", "content", "channelType", "msgTimestamp", "msgUID"]

    /// Reads a routed form; throws naming the first missing or malformed field.
    public init(form: FormBody) throws(RCFieldError) {
        for field in Self.requiredFields where (form[field] ?? "").isEmpty && field != "content" {
            throw RCFieldError(field: field, problem: "is missing")
        }
        guard let content = form["content"] else { throw RCFieldError(field: "content", problem: "is missing") }
        guard let timestamp = form.int64("msgTimestamp") else {
            throw RCFieldError(field: "msgTimestamp", problem: "is not a number")
        }
        self.init(fromUserId: form["fromUserId"]!, toUserId: form["toUserId"]!, objectName: form["objectName"]!,
                  content: content, channelType: form["channelType"]!, msgTimestamp: timestamp, msgUID: form["msgUID"]!,
                  originalMsgUID: form["originalMsgUID"].flatMap { $0.isEmpty ? nil : $0 },
                  sensitiveType: form.int64("sensitiveType").map { Int($0) }, source: form["source"],
                  busChannel: form["busChannel"].flatMap { $0.isEmpty ? nil : $0 }, groupUserIds: form.values("groupUserIds"),
                  expansion: form.bool("expansion"), extraContent: form["extraContent"].flatMap { $0.isEmpty ? nil : $0 })
    }
}

/// A required wire field that is missing or malformed.
public struct RCFieldError: Error, Hashable, Sendable, CustomStringConvertible {
    public var field: String
    public var problem: String
    public init(field: String, problem: String) {
        self.field = field
        self.problem = problem
    }
    public var description: String { "\(field) \(problem)" }
}
