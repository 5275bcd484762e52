import IMCore
import NIM

/// One message as the NIM sandbox stores it: the sendMsg fields as received, plus what the server adds.
struct NIMStoredMessage: Sendable {
    var msgid: Int64
    var msgidclient: String
    var from: String
    /// 0 person, 1 team.
    var ope: Int
    var to: String
    var type: Int
    var body: String
    var ext: String?
    var option: NIMSendOption
    var sendtime: Int64
    var recalled: Bool = false
    var recallTime: Int64?

    var storedInHistory: Bool { option.history ?? true }

    /// Whether the message belongs to the person conversation of `a` and `b` (either direction).
    func isBetween(_ a: String, _ b: String) -> Bool {
        ope == 0 && ((from == a && to == b) || (from == b && to == a))
    }

    var historyEntry: NIMHistoryMessage {
        NIMHistoryMessage(from: from, msgid: msgid, msgidclient: msgidclient, sendtime: sendtime, type: type,
                          fromclienttype: 32, body: body, ext: ext)
    }

    /// The eventType-1 copy NIM posts for this message (every value a string, docs/adapters/nim.md).
    var copy: NIMCopyEvent {
        let wireType = NIMMessageType(rawValue: type)
        var fields: [String: JSONValue] = [
            "eventType": "1", "convType": .string(ope == 0 ? "PERSON" : "TEAM"), "to": .string(to),
            "fromAccount": .string(from), "fromClientType": "REST", "msgType": .string(wireType?.copyName ?? String(type)),
            "msgTimestamp": .string(String(sendtime)), "msgidClient": .string(msgidclient),
            "msgidServer": .string(String(msgid)), "resendFlag": "0",
        ]
        switch wireType {
        case .text?, .tip?:
            fields["body"] = .string(NIMLenient.string((try? JSONValue.parse(body))?["msg"]) ?? "")
            fields["attach"] = ""
        default:
            fields["body"] = ""
            fields["attach"] = .string(body)
        }
        if let ext { fields["ext"] = .string(ext) }
        return NIMCopyEvent(fields: fields)
    }
}

/// An account created through `/user/create.action` (accids are stored lower-cased), with the profile
/// fields `/user/updateUinfo.action` sets (nil = never set or cleared with "").
struct NIMStoredUser: Sendable {
    var accid: String
    var name: String?
    var icon: String?
    var token: String
    var sign: String?
    var email: String?
    var birth: String?
    var mobile: String?
    var ex: String?
    var gender: Int?

    /// The profile as `/user/getUinfos.action` lists it: unset fields omitted.
    var uinfo: JSONValue {
        var object: [String: JSONValue] = ["accid": .string(accid), "valid": true, "mute": false]
        for (key, value) in [("name", name), ("icon", icon), ("sign", sign), ("email", email), ("birth", birth),
                             ("mobile", mobile), ("ex", ex)] {
            if let value { object[key] = .string(value) }
        }
        if let gender { object["gender"] = .int(Int64(gender)) }
        return .object(object)
    }
}

/// A `/msg/broadcastMsg.action` broadcast as the sandbox keeps it (listed at `GET /_sandbox/broadcasts`).
struct NIMStoredBroadcast: Sendable {
    var broadcastId: Int64
    var from: String?
    var body: String
    var targetOs: [String]?
    var isOffline: Bool
    var createTime: Int64
    var expireTime: Int64

    var json: JSONValue {
        var object: [String: JSONValue] = ["broadcastId": .int(broadcastId), "body": .string(body), "isOffline": .bool(isOffline),
                                           "createTime": .int(createTime), "expireTime": .int(expireTime)]
        if let from { object["from"] = .string(from) }
        if let targetOs { object["targetOs"] = .array(targetOs.map(JSONValue.string)) }
        return .object(object)
    }
}

struct NIMSandboxState: Sendable {
    var users: [String: NIMStoredUser] = [:]
    var userOrder: [String] = []
    var messages: [NIMStoredMessage] = []
    var index: [Int64: Int] = [:]
    var nextMsgid: Int64 = 10_000_001
    var media: [String: [UInt8]] = [:]
    var nextMedia = 1
    var broadcasts: [NIMStoredBroadcast] = []
    var nextBroadcastId: Int64 = 1
    var tokenGeneration = 0
    var teams: [Int64: NIMStoredTeam] = [:]
    var teamOrder: [Int64] = []
    var nextTid: Int64 = 1_300_000_001
}
