import Foundation
import IMCore
import IMHTTP
import JMessage
import Testing

let appKey = "4f7aef34fb361292c566a1cd"
let identity = JMessageIdentity(appKey: appKey, admin: "bridge_admin")

/// A report v2 / routing push message as the vendor documents it.
func reportMessage(msgid: Int64 = 43143728109, fromType: String = "user", fromID: String = "alice", fromAppKey: String = appKey,
                   targetType: String = "single", targetID: String = "bobby", targetAppKey: String = "",
                   msgType: String = "text", body: String = #"{"extras":{"k":"v"},"text":"hi"}"#, ctime: Int64 = 1_493_794_522_950) -> String {
    """
    {"version":1,"target_type":"\(targetType)","target_id":"\(targetID)","target_name":"","target_appkey":"\(targetAppKey)",\
    "from_type":"\(fromType)","from_id":"\(fromID)","from_name":"Alice","from_appkey":"\(fromAppKey)","from_platform":"a",\
    "msg_type":"\(msgType)","msg_body":\(body),"create_time":\(ctime / 1000),"msg_ctime":\(ctime),"msgid":\(msgid),\
    "msg_level":0,"set_from_name":1}
    """
}

@Suite struct JMessageMessageCodecTests {
    let codec = JMessageCodec(identity: identity)

    func wire(_ json: String) throws -> JMHistoryMessage { try JSONDecoder().decode(JMHistoryMessage.self, from: Data(json.utf8)) }

    @Test func decodesAReportMessage() throws {
        let message = try codec.decode(try wire(reportMessage()))
        #expect(message.id == "43143728109" && message.sender == "alice" && message.conversation == .direct("alice", "bobby"))
        #expect(message.sentAt == 1_493_794_522_950 && message.content == .text("hi"))
        #expect(message.vendorExtras["jmessage_extras"] == ["k": "v"])
        #expect(message.vendorExtras["jmessage_from_platform"] == "a")
    }

    @Test func crossAppUsersCarryTheirAppKey() throws {
        let message = try codec.decode(try wire(reportMessage(fromID: "carol", fromAppKey: "OTHERAPPKEY000000000000x", targetAppKey: appKey.uppercased())))
        #expect(message.sender == "carol#OTHERAPPKEY000000000000x")
        #expect(message.conversation == .direct("bobby", "carol#OTHERAPPKEY000000000000x"))
        #expect(identity.vendorUser("carol#OTHERAPPKEY000000000000x") == ("carol", "OTHERAPPKEY000000000000x"))
        #expect(identity.vendorUser("a@b.c") == ("a@b.c", nil))
        #expect(identity.vendorUser(UserID("dave#\(appKey.uppercased())")) == ("dave", nil))
    }

    @Test func groupsAndNumericIDs() throws {
        let json = reportMessage(targetType: "group", targetID: "10055201").replacingOccurrences(of: #""target_id":"10055201""#, with: #""target_id":10055201"#)
        let message = try codec.decode(try wire(json))
        #expect(message.conversation == .group("10055201"))
    }

    @Test func attributedAdminSendsRoundTrip() throws {
        let outgoing = OutgoingMessage(conversation: .direct("bobby", "alice"), sender: "alice", content: .text("relayed"),
                                       clientMessageID: "imb-1", reply: ReplyRef(messageID: "77", sender: "bobby", digest: "earlier"),
                                       options: MessageOptions(persist: false, push: false, pushText: "new message"), sentAt: 1_600_000_000_000,
                                       vendorExtras: ["jmessage_extras": ["app": "kept"]])
        let request = try codec.encode(outgoing)
        #expect(request.fromType == "admin" && request.fromID == "bridge_admin" && request.fromName == "alice")
        #expect(request.targetType == "single" && request.targetID == "bobby" && request.targetAppKey == nil)
        #expect(request.noOffline == true && request.noNotification == true && request.notification?.alert == "new message")
        #expect(request.msgBody["extras"] == ["app": "kept", "imbridge_sender": "alice", "imbridge_client_id": "imb-1",
                                             "imbridge_reply_id": "77", "imbridge_reply_sender": "bobby", "imbridge_reply_digest": "earlier",
                                             "imbridge_sent_at": "1600000000000"])
        let stored = JMHistoryMessage(targetType: request.targetType, targetID: request.targetID, fromType: request.fromType,
                                        fromID: request.fromID, fromName: request.fromName, fromAppKey: appKey, msgType: request.msgType,
                                        msgBody: request.msgBody, createTime: 1, msgCtime: 1000, msgid: 5, noOffline: true, noNotification: true)
        let back = try codec.decode(stored)
        #expect(back.sender == "alice" && back.conversation == outgoing.conversation && back.clientMessageID == "imb-1")
        #expect(back.reply == outgoing.reply && back.content == .text("relayed"))
        #expect(back.options.persist == false && back.options.push == false)
        #expect(back.vendorExtras["jmessage_extras"] == ["app": "kept"])
        #expect(back.vendorExtras["imbridge_original_sent_at"] == 1_600_000_000_000 && back.sentAt == 1000)
    }

    @Test func theAdminItselfIsNotAttributed() throws {
        let request = try codec.encode(OutgoingMessage(conversation: .group("10055201"), sender: "bridge_admin", content: .text("x")))
        #expect(request.fromName == nil && request.msgBody["extras"] == nil && request.targetType == "group")
    }

    @Test func userSendsAreNeverReattributed() throws {
        let body = #"{"extras":{"imbridge_sender":"mallory"},"text":"hi"}"#
        let message = try codec.decode(try wire(reportMessage(fromType: "user", body: body)))
        #expect(message.sender == "alice", "only admin sends carry attribution")
    }

    @Test func refusesWhatJMessageCannotCarry() throws {
        let direct = ConversationRef.direct("alice", "bobby")
        let cases: [(OutgoingMessage, IMError.Code)] = [
            (OutgoingMessage(conversation: direct, sender: "alice", content: .text("x"), mentions: Mentions(all: true)), .unsupported),
            (OutgoingMessage(conversation: direct, sender: "alice", content: .text("x"), expansion: [:]), .unsupported),
            (OutgoingMessage(conversation: direct, sender: "carol", content: .text("x")), .invalidArgument),
            (OutgoingMessage(conversation: .system("s"), sender: "alice", content: .text("x")), .unsupported),
            (OutgoingMessage(conversation: direct, sender: "alice", content: .text(String(repeating: "a", count: 4090))), .limitExceeded),
        ]
        for (outgoing, code) in cases {
            #expect { _ = try codec.encode(outgoing) } throws: { ($0 as? IMError)?.code == code }
        }
    }

    @Test func sendRequestUsesTheDocumentedKeys() throws {
        let request = try codec.encode(OutgoingMessage(conversation: .direct("bridge_admin", "bobby#OTHERAPP"), sender: "bridge_admin",
                                                       content: .text("x")))
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        let json = String(decoding: try encoder.encode(request), as: UTF8.self)
        #expect(json == #"{"from_id":"bridge_admin","from_type":"admin","msg_body":{"text":"x"},"msg_type":"text","target_appkey":"OTHERAPP","target_id":"bobby","target_type":"single","version":1}"#)
    }
}

/// Report v2 times and `media_crc32`, the wire formats the message codec reads.
extension JMessageMessageCodecTests {
    @Test func formatsAndParsesChinaStandardTime() {
        #expect(JMessageTime.format(ms: 1_493_794_522_950) == "2017-05-03 14:55:22")
        #expect(JMessageTime.parse("2017-05-03 14:55:22") == 1_493_794_522_000)
        #expect(JMessageTime.format(ms: 0) == "1970-01-01 08:00:00")
        #expect(JMessageTime.parse("2017-13-03 14:55:22") == nil && JMessageTime.parse("yesterday") == nil)
        #expect(Hashing.crc32(Array("123456789".utf8)) == 0xCBF4_3926)
    }
}
