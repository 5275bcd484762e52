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

/// An account created through `/user/create.action` (accids are stored lower-cased).
struct NIMStoredUser: Sendable {
    var accid: String
    var name: String?
    var icon: String?
    var token: String
}

struct NIMSandboxState: Sendable {
    var users: [String: NIMStoredUser] = [:]
    var userOrder: [String] = []
    var messages: [NIMStoredMessage] = []
    var index: [Int64: Int] = [:]
    var nextMsgid: Int64 = 10_000_001
    var media: [String: [UInt8]] = [:]
    var nextMedia = 1
}
