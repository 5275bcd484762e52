import IMCore
import Testing
@testable import RongCloud

/// Routed/history messages ⇄ neutral messages, and neutral outgoing messages → publish forms.
struct RongCloudMessageCodecTests {
    let codec = RongCloudCodec()

    static let routedText = RCRoutedMessage(
        fromUserId: "u1", toUserId: "u2", objectName: "RC:TxtMsg",
        content: #"{"content":"hello","extra":"x","mentionedInfo":{"type":2,"userIdList":["u2"]}}"#,
        channelType: "PERSON", msgTimestamp: 1_700_000_000_123, msgUID: "BRGM-DEN2-01E4-BN66", sensitiveType: 0, source: "iOS")

    @Test func routedPersonMessageBecomesADirectMessageAndPublishesBackTheSame() throws {
        let message = try codec.message(from: Self.routedText)
        #expect(message.id == "BRGM-DEN2-01E4-BN66")
        #expect(message.conversation == .direct("u2", "u1"))
        #expect(message.sender == "u1" && message.sentAt == 1_700_000_000_123)
        #expect(message.mentions.users == ["u2"])
        #expect(message.vendorExtras["rongcloud.source"] == "iOS")

        let outgoing = OutgoingMessage(conversation: message.conversation, sender: message.sender, content: message.content,
                                       mentions: message.mentions, vendorExtras: message.vendorExtras)
        let (path, form) = try codec.publish(outgoing)
        #expect(path == "/message/private/publish.json")
        #expect(form.fromUserId == "u1" && form.toUserIds == ["u2"] && form.toGroupIds.isEmpty)
        #expect(form.objectName == "RC:TxtMsg")
        #expect(try JSONValue.parse(form.content) == JSONValue.parse(Self.routedText.content))
    }

    @Test func routedExtensibleMessageCarriesItsInitialKeys() throws {
        var routed = Self.routedText
        routed.expansion = true
        routed.extraContent = #"{"status":"new"}"#
        let message = try codec.message(from: RCRoutedMessage(form: routed.form))
        #expect(message.expansion?.entries == ["status": ExpansionEntry(value: "new", version: 1_700_000_000_123)])
        routed.extraContent = nil
        #expect(try codec.message(from: routed).expansion == Expansion())
        #expect(try codec.message(from: Self.routedText).expansion == nil)
    }

    @Test(arguments: [
        ("PERSON", ConversationRef.direct("a", "b")), ("GROUP", .group("b")), ("TEMPGROUP", .chatroom("b")),
        ("NOTIFY", .system("a")), ("ULTRAGROUP", .other("ultragroup", "b")), ("PERSONS", .other("discussion", "b")),
        ("MP", .other("mp", "b")),
    ])
    func channelTypesMapToConversations(channelType: String, expected: ConversationRef) {
        #expect(RongCloudCodec.conversation(channelType: channelType, from: "a", to: "b") == expected)
    }

    @Test func groupPublishCarriesMentionsOptionsAndExpansion() throws {
        let outgoing = OutgoingMessage(
            conversation: .group("g1"), sender: "u1", content: .text("@all lunch"), clientMessageID: "42",
            mentions: Mentions(all: true), options: MessageOptions(persist: true, countUnread: false, push: false, pushText: "lunch"),
            expansion: ["votes": "0"])
        let (path, form) = try codec.publish(outgoing)
        #expect(path == "/message/group/publish.json")
        #expect(form.toGroupIds == ["g1"] && form.toUserIds.isEmpty)
        #expect(form.isMentioned == true && form.isCounted == false && form.disablePush == true && form.isPersisted == nil)
        #expect(form.pushContent == "lunch" && form.expansion == true && form.extraContent == #"{"votes":"0"}"#)
        #expect(form.msgRandom == 42)
        #expect(try JSONValue.parse(form.content) == ["content": "@all lunch", "mentionedInfo": ["type": 1]])
        let items = form.form.items
        #expect(items.contains { $0 == ("isCounted", "0") } && items.contains { $0 == ("disablePush", "true") })
        #expect(items.contains { $0 == ("isIncludeSender", "1") } && items.contains { $0 == ("expansion", "true") })
        #expect(!items.contains { $0.0 == "isPersisted" })
    }

    /// Every attempt of one relay entry carries the same idempotency key, whatever instance sends it.
    @Test func msgRandomIsStableForEveryClientID() throws {
        let relay = OutgoingMessage(conversation: .group("g1"), sender: "u1", content: .text("hi"), clientMessageID: "imb-1234")
        let first = try codec.publish(relay).1.msgRandom, again = try codec.publish(relay).1.msgRandom
        #expect(first != nil && first == again && first! >= 0)
        #expect(first == RongCloudCodec.msgRandom(for: "imb-1234"))
        #expect(RongCloudCodec.msgRandom(for: "imb-1235") != first, "another entry, another key")
        #expect(RongCloudCodec.msgRandom(for: "77") == 77, "a decimal id is sent as itself")
        var plain = relay
        plain.clientMessageID = nil
        #expect(try codec.publish(plain).1.msgRandom == nil)
    }

    @Test func expansionWithoutInitialKeysSendsNoExtraContent() throws {
        let (_, form) = try codec.publish(OutgoingMessage(conversation: .direct("u1", "u2"), sender: "u1",
                                                          content: .text("hi"), expansion: [:]))
        #expect(form.expansion == true && form.extraContent == nil)
        #expect(!form.form.items.contains { $0.0 == "extraContent" })
    }

    @Test func foreignContentsGetTheFieldsRongCloudNeeds() throws {
        let content = RongCloudContentCodec()
        let file = try content.encode(.file(FileContent(.remote("https://x/a.tar.gz", size: 10), name: "a.tar.gz")))
        #expect(try JSONValue.parse(file.content) == ["name": "a.tar.gz", "size": 10, "fileUrl": "https://x/a.tar.gz", "type": "gz"])
        let reply = try content.encode(.text("yes"), reply: ReplyRef(messageID: "M1", sender: "u2", digest: "[图片]"))
        #expect(reply.objectName == "RC:ReferenceMsg")
        #expect(try JSONValue.parse(reply.content) == ["content": "yes", "referMsgUid": "M1", "referMsgUserId": "u2",
                                                       "objName": "RC:TxtMsg", "referMsg": ["content": "[图片]"]])
        let voice = try content.encode(.voice(VoiceContent(MediaAttachment(remoteURL: "https://x/v.m4a", durationMs: 2600))))
        #expect(voice.objectName == "RC:HQVCMsg")
        #expect(try JSONValue.parse(voice.content) == ["remoteUrl": "https://x/v.m4a", "duration": 3])
    }

    @Test func contentsRongCloudCannotCarryAreRefusedBeforeAnyCall() {
        let content = RongCloudContentCodec()
        #expect(throws: IMError.self) { try content.encode(.image(ImageContent(.local("/tmp/a.png")))) }
        #expect(throws: IMError.self) {
            try content.encode(.unsupported(UnsupportedContent(vendor: "nim", vendorType: "11", raw: "{}")))
        }
        #expect(throws: IMError.self) { try content.encode(.custom(CustomContent(raw: "RC:Fake", payload: "{}"))) }
        #expect(throws: IMError.self) {
            try content.encode(.custom(CustomContent(raw: String(repeating: "x", count: 33), payload: "{}")))
        }
        #expect(throws: IMError.self) {
            try RongCloudCodec().publish(OutgoingMessage(conversation: .chatroom("r1"), sender: "u1", content: .text("hi")))
        }
        #expect(throws: IMError.self) {
            try RongCloudCodec().publish(OutgoingMessage(conversation: .direct("u2", "u3"), sender: "u1", content: .text("hi")))
        }
    }

    @Test func historyRowCarriesItsExpansionWithTsAsVersion() throws {
        let row = RCHistoryMessage(targetId: "g1", fromUserId: "u1", messageUID: "AAAA-BBBB-CCCC-DDDD", msgTime: 1_700_000_000_000,
                                     objectName: "RC:TxtMsg", content: #"{"content":"vote"}"#, expansion: true,
                                     extraContent: #"{"kkk314":{"v":"vvv314","ts":33831605613},"kkk313":{"v":"vvv313","ts":33831605588}}"#)
        let message = try codec.message(from: row, conversation: .group("g1"))
        #expect(message.expansion?.entries == ["kkk314": ExpansionEntry(value: "vvv314", version: 33_831_605_613),
                                                "kkk313": ExpansionEntry(value: "vvv313", version: 33_831_605_588)])
        #expect(message.expansion?.version == 33_831_605_613)
        let plain = try RongCloudExpansionCodec.expansion(fromHistoryText: #"{"k":"v"}"#)
        #expect(plain.values == ["k": "v"])
        #expect(throws: IMError.self) { try RongCloudExpansionCodec.expansion(fromHistoryText: "[1]") }
    }

    @Test func expansionSignalsRoundTrip() throws {
        let text = #"{"mid":"BRGM-DEN2-01E4-BN66","put":{"k1":"v1"},"del":["k2"],"clear":0}"#
        let signal = try #require(RCExpansionSignal(json: text))
        #expect(signal == RCExpansionSignal(mid: "BRGM-DEN2-01E4-BN66", put: ["k1": "v1"], del: ["k2"]))
        let delta = RongCloudExpansionCodec.delta(from: signal, version: 9)
        #expect(delta == ExpansionDelta(version: 9, set: ["k1": "v1"], removed: ["k2"]))
        #expect(try JSONValue.parse(signal.json.jsonString()) == JSONValue.parse(#"{"mid":"BRGM-DEN2-01E4-BN66","put":{"k1":"v1"},"del":["k2"]}"#))
        #expect(RCExpansionSignal(json: #"{"put":{"k":"v"}}"#) == nil)
        #expect(RCExpansionSignal(json: #"{"mid":"m","put":["k"]}"#) == nil)
        let recall = try #require(RCRecallCommand(json: #"{"messageUId":"M1","conversationType":"6","isAdmin":1}"#))
        #expect(recall.conversationType == 6 && recall.isAdmin == true)
        let command = #"{"messageUId":"BRGM-DEN2-01E4-BN66","conversationType":1,"targetId":"u2","sentTime":1700000000000,"isAdmin":0,"isDelete":0}"#
        #expect(try RCRecallCommand(json: command).map { $0.json } == JSONValue.parse(command), "RC:RcCmd round-trips exactly")
    }
}
