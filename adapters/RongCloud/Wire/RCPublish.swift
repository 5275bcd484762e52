import IMHTTP
/// The form of `/message/private/publish.json` and `/message/group/publish.json` (docs/adapters/rongcloud.md).
///
/// Field rules kept here: `toUserId` (private, ≤ 1000) and `toGroupId` (group, ≤ 3) repeat;
/// `content` and `extraContent` are JSON text inside the form; 0/1 flags are written as `1`/`0`,
/// `disablePush` and `expansion` as `true`/`false` (what the official SDKs send). Absent optional
/// fields are left out so the server's defaults apply (`isPersisted=1`, `isCounted=1`,
/// `isIncludeSender=0`, `disablePush=false`, `expansion=false`).
public struct RCPublishForm: Hashable, Sendable {
    public var fromUserId: String
    public var toUserIds: [String]
    public var toGroupIds: [String]
    public var objectName: String
    public var content: String
    public var pushContent: String?
    public var pushData: String?
    public var pushExt: String?
    public var isPersisted: Bool?
    public var isCounted: Bool?
    public var isIncludeSender: Bool?
    public var isMentioned: Bool?
    public var disablePush: Bool?
    public var expansion: Bool?
    /// JSON object text `{"k":"v"}`; only honoured with `expansion=true`.
    public var extraContent: String?
    public var needReadReceipt: Bool?
    public var msgRandom: Int64?

    public static let maxPrivateRecipients = 1000
    public static let maxGroups = 3
    /// `content` limit: 128 KB.
    public static let maxContentBytes = 128 * 1024

    public init(fromUserId: String, toUserIds: [String] = [], toGroupIds: [String] = [], objectName: String, content: String,
                pushContent: String? = nil, pushData: String? = nil, pushExt: String? = nil, isPersisted: Bool? = nil,
                isCounted: Bool? = nil, isIncludeSender: Bool? = nil, isMentioned: Bool? = nil, disablePush: Bool? = nil,
                expansion: Bool? = nil, extraContent: String? = nil, needReadReceipt: Bool? = nil, msgRandom: Int64? = nil) {
        self.fromUserId = fromUserId
        self.toUserIds = toUserIds
        self.toGroupIds = toGroupIds
        self.objectName = objectName
        self.content = content
        self.pushContent = pushContent
        self.pushData = pushData
        self.pushExt = pushExt
        self.isPersisted = isPersisted
        self.isCounted = isCounted
        self.isIncludeSender = isIncludeSender
        self.isMentioned = isMentioned
        self.disablePush = disablePush
        self.expansion = expansion
        self.extraContent = extraContent
        self.needReadReceipt = needReadReceipt
        self.msgRandom = msgRandom
    }

    public var form: FormBody {
        var form = FormBody()
        form.append("fromUserId", fromUserId)
        for user in toUserIds { form.append("toUserId", user) }
        for group in toGroupIds { form.append("toGroupId", group) }
        form.append("objectName", objectName)
        form.append("content", content)
        form.append("pushContent", pushContent)
        form.append("pushData", pushData)
        form.append("pushExt", pushExt)
        form.appendFlag("isPersisted", isPersisted)
        form.appendFlag("isCounted", isCounted)
        form.appendFlag("isIncludeSender", isIncludeSender)
        form.appendFlag("isMentioned", isMentioned)
        form.append("disablePush", disablePush)
        form.append("expansion", expansion)
        if expansion == true { form.append("extraContent", extraContent) }
        form.appendFlag("needReadReceipt", needReadReceipt)
        form.append("msgRandom", msgRandom.map { String($0) })
        return form
    }

    /// Reads a received form leniently (booleans in any spelling); nil when a required field is missing.
    public init?(form: FormBody) {
        guard let from = form["fromUserId"], let objectName = form["objectName"], let content = form["content"] else {
            return nil
        }
        self.init(fromUserId: from, toUserIds: form.values("toUserId"), toGroupIds: form.values("toGroupId"),
                  objectName: objectName, content: content, pushContent: form["pushContent"], pushData: form["pushData"],
                  pushExt: form["pushExt"], isPersisted: form.bool("isPersisted"), isCounted: form.bool("isCounted"),
                  isIncludeSender: form.bool("isIncludeSender"), isMentioned: form.bool("isMentioned"),
                  disablePush: form.bool("disablePush"), expansion: form.bool("expansion"),
                  extraContent: form["extraContent"], needReadReceipt: form.bool("needReadReceipt"),
                  msgRandom: form.int64("msgRandom"))
    }
}

/// The form of `/message/recall.json` (docs/adapters/rongcloud.md).
public struct RCRecallForm: Hashable, Sendable {
    public var fromUserId: String
    public var conversationType: Int
    public var targetId: String
    public var messageUID: String
    public var sentTime: Int64?
    public var isAdmin: Bool?
    public var isDelete: Bool?
    public var extra: String?

    public init(fromUserId: String, conversationType: Int, targetId: String, messageUID: String, sentTime: Int64? = nil,
                isAdmin: Bool? = nil, isDelete: Bool? = nil, extra: String? = nil) {
        self.fromUserId = fromUserId
        self.conversationType = conversationType
        self.targetId = targetId
        self.messageUID = messageUID
        self.sentTime = sentTime
        self.isAdmin = isAdmin
        self.isDelete = isDelete
        self.extra = extra
    }

    public var form: FormBody {
        var form = FormBody()
        form.append("fromUserId", fromUserId)
        form.append("conversationType", String(conversationType))
        form.append("targetId", targetId)
        form.append("messageUID", messageUID)
        form.append("sentTime", sentTime.map { String($0) })
        form.appendFlag("isAdmin", isAdmin)
        form.appendFlag("isDelete", isDelete)
        form.append("extra", extra)
        return form
    }
}

/// The forms of `/message/expansion/set.json` (`extraKeyVal`, a JSON object text) and
/// `/message/expansion/delete.json` (`extraKey`, a JSON array text) (docs/adapters/rongcloud.md).
public struct RCExpansionForm: Hashable, Sendable {
    public var msgUID: String
    public var userId: String
    public var conversationType: Int
    public var targetId: String
    public var extraKeyVal: String?
    public var extraKey: String?
    public var isSyncSender: Bool?

    public init(msgUID: String, userId: String, conversationType: Int, targetId: String, extraKeyVal: String? = nil,
                extraKey: String? = nil, isSyncSender: Bool? = nil) {
        self.msgUID = msgUID
        self.userId = userId
        self.conversationType = conversationType
        self.targetId = targetId
        self.extraKeyVal = extraKeyVal
        self.extraKey = extraKey
        self.isSyncSender = isSyncSender
    }

    public var form: FormBody {
        var form = FormBody()
        form.append("msgUID", msgUID)
        form.append("userId", userId)
        form.append("conversationType", String(conversationType))
        form.append("targetId", targetId)
        form.append("extraKeyVal", extraKeyVal)
        form.append("extraKey", extraKey)
        form.appendFlag("isSyncSender", isSyncSender)
        return form
    }
}
