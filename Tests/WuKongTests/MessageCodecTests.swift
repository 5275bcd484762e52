import Foundation
import IMCore
import IMHTTP
import Testing
@testable import WuKong

@Suite struct WuKongMessageCodecTests {
    let codec = WuKongMessageCodec()

    /// A `msg.notify` element as WuKongIM v2.2.5 renders it: a DM from u1 to u2, so the
    /// rendered `channel_id` is the recipient u2.
    static let notifyJSON = #"""
    {"header":{"no_persist":0,"red_dot":1,"sync_once":0},"setting":0,"message_id":1729183029123457024,
     "message_idstr":"1729183029123457024","client_msg_no":"c-1","message_seq":7,"from_uid":"u1",
     "channel_id":"u2","channel_type":1,"expire":0,"timestamp":1700000000,
     "payload":"eyJ0eXBlIjoxLCJjb250ZW50IjoiaGkifQ=="}
    """#

    @Test func decodesPersonMessageIntoDirectPair() throws {
        let wire = try WuKongJSON.decode(WKMessage.self, from: Data(Self.notifyJSON.utf8))
        let message = try codec.decode(wire)
        #expect(message.id == "1729183029123457024")
        #expect(message.conversation == .direct("u1", "u2"))
        #expect(message.sender == "u1")
        #expect(message.sentAt == 1_700_000_000_000)
        #expect(message.seq == 7)
        #expect(message.content == .text("hi"))
        #expect(message.clientMessageID == "c-1")
        #expect(message.options.countUnread && message.options.persist)
        #expect(try Self.same(codec.encode(message), wire), "wire → neutral → wire changed the message")
    }

    @Test func channelIDNormalisationBothWays() throws {
        // Incoming for u2: channel_id is u2's own uid; the pair is still (u1, u2).
        let incoming = WKMessage(messageID: 1, fromUID: "u1", channelID: "u2", channelType: 1, timestamp: 1,
                                 payload: Data(#"{"type":1,"content":"a"}"#.utf8))
        let reply = WKMessage(messageID: 2, fromUID: "u2", channelID: "u1", channelType: 1, timestamp: 1,
                              payload: Data(#"{"type":1,"content":"b"}"#.utf8))
        let a = try codec.decode(incoming), b = try codec.decode(reply)
        #expect(a.conversation == b.conversation)
        #expect(a.conversation.id == "u1,u2")
        // Outgoing: channel_id is the peer of the sender.
        #expect(try codec.encode(a).channelID == "u2")
        #expect(try codec.encode(b).channelID == "u1")
        // Fake ids and CMD channels map to the same pair.
        #expect(WuKongChannel.conversation(channelID: "u2@u1", channelType: 1, fromUID: "x") == a.conversation)
        #expect(WuKongChannel.conversation(channelID: "u2____cmd", channelType: 1, fromUID: "u1") == a.conversation)
    }

    @Test func groupSystemAndOtherChannelTypesRoundTrip() throws {
        for (type, expected) in [(UInt8(2), ConversationRef.group("g1")), (9, .chatroom("g1")), (4, .other("wk4", "g1"))] {
            let wire = WKMessage(header: WKHeader(noPersist: 1, redDot: 0, syncOnce: 1), setting: 0x80 | 0x08, messageID: 9,
                                 clientMsgNo: "", messageSeq: 3, fromUID: "", channelID: "g1", channelType: type, topic: "t",
                                 expire: 60, timestamp: 5, payload: Data(#"{"type":1,"content":"x"}"#.utf8))
            let message = try codec.decode(wire)
            #expect(message.conversation == expected)
            #expect(message.sender == UserID(WuKongChannel.systemUID))
            #expect(message.options.receiptRequested && !message.options.persist && !message.options.countUnread)
            #expect(try Self.same(codec.encode(message), wire))
        }
    }

    /// Equal messages, payloads compared as JSON values (the codec writes sorted keys).
    static func same(_ a: WKMessage, _ b: WKMessage) throws -> Bool {
        var x = a, y = b
        guard try JSONValue.parse(x.payload) == JSONValue.parse(y.payload) else { return false }
        x.payload = Data()
        y.payload = Data()
        return x == y
    }

    @Test func neutralToWireToNeutralIsExact() throws {
        let message = Message(id: "42", clientMessageID: "k", conversation: .direct("alice", "bob"), sender: "bob", sentAt: 1_700_000_001_000,
                              seq: 2, content: .text("yo"), mentions: Mentions(users: ["alice"]),
                              reply: ReplyRef(messageID: "41", sender: "alice", digest: "hey"))
        #expect(try codec.decode(codec.encode(message)) == message)
    }

    @Test func binaryPayloadSurvives() throws {
        let wire = WKMessage(messageID: 3, fromUID: "a", channelID: "b", channelType: 1, timestamp: 1, payload: Data([0xFF, 0x00, 0x10]))
        let message = try codec.decode(wire)
        #expect(message.content.kind == .unsupported)
        #expect(try codec.encode(message).payload == Data([0xFF, 0x00, 0x10]))
    }

    @Test func fakeChannelIDFollowsCRC32Rule() {
        #expect(Hashing.crc32("123456789") == 0xCBF4_3926)
        let (a, b) = ("alice", "bob")
        let expected = Hashing.crc32(a) > Hashing.crc32(b) ? "alice@bob" : "bob@alice"
        #expect(WuKongChannel.fakeChannelID(a, b) == expected)
        #expect(WuKongChannel.fakeChannelID(b, a) == expected)
        #expect(WuKongChannel.renderedPersonChannel(fakeID: expected, fromUID: "alice") == "bob")
        #expect(WuKongChannel.renderedPersonChannel(fakeID: expected, fromUID: "bob") == "alice")
    }

    @Test func sendReplyAcceptsBothShapes() {
        let wrapped = WKSendResult.parse(Data(#"{"status":200,"data":{"message_id":123,"client_msg_no":"c"}}"#.utf8))
        let flat = WKSendResult.parse(Data(#"{"message_id":123,"message_seq":4,"client_msg_no":"c"}"#.utf8))
        #expect(wrapped == WKSendResult(messageID: 123, clientMsgNo: "c", messageSeq: nil))
        #expect(flat == WKSendResult(messageID: 123, clientMsgNo: "c", messageSeq: 4))
        #expect(WKSendResult.parse(Data(#"{"status":200}"#.utf8)) == nil)
    }
}
