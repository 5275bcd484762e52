import Foundation
import IMAdapterKit
import IMCore
import Testing
@testable import WuKong

/// Table tests: payloads shaped like the WuKong SDKs' own, decoded to the expected neutral content and
/// encoded back to the same JSON value.
@Suite struct WuKongCodecTests {
    let codec = WuKongContentCodec()

    static func remote(_ url: String, width: Int? = nil, height: Int? = nil, size: Int64? = nil, durationMs: Int64? = nil) -> MediaAttachment {
        var a = MediaAttachment.remote(url)
        a.width = width
        a.height = height
        a.size = size
        a.durationMs = durationMs
        return a
    }

    static let table: [(String, String, MessageContent)] = [
        ("text", #"{"type":1,"content":"你好"}"#, .text("你好")),
        ("image", #"{"type":2,"url":"https://f.example/a.jpg","width":640,"height":480}"#,
         .image(ImageContent(remote("https://f.example/a.jpg", width: 640, height: 480)))),
        ("gif", #"{"type":3,"url":"https://f.example/a.gif","width":100,"height":100}"#,
         .gif(GIFContent(remote("https://f.example/a.gif", width: 100, height: 100)))),
        ("gif-extended", #"{"type":3,"url":"https://f.example/b.gif","width":64,"height":48,"thumbnail":"https://f.example/b.jpg","duration":1.5,"file_size":2048}"#,
         .gif(GIFContent({ var a = remote("https://f.example/b.gif", width: 64, height: 48, size: 2048, durationMs: 1500)
                           a.thumbnail = "https://f.example/b.jpg"; return a }()))),
        ("voice", #"{"type":4,"url":"https://f.example/v.aac","timeTrad":3,"waveform":"AAEC"}"#,
         .voice(VoiceContent(remote("https://f.example/v.aac", durationMs: 3000)))),
        ("video", #"{"type":5,"url":"https://f.example/v.mp4","cover":"https://f.example/c.jpg","size":90000,"second":5,"width":320,"height":240}"#,
         .video(VideoContent(remote("https://f.example/v.mp4", width: 320, height: 240, size: 90000, durationMs: 5000),
                             cover: .remote("https://f.example/c.jpg")))),
        ("location", #"{"type":6,"lng":121.4737,"lat":31.2304,"title":"人民广场","address":"上海市黄浦区","img":"https://f.example/m.png"}"#,
         .location(LocationContent(latitude: 31.2304, longitude: 121.4737, title: "人民广场", address: "上海市黄浦区",
                                   thumbnail: "https://f.example/m.png"))),
        ("card", #"{"type":7,"uid":"u9","name":"小明","avatar":"https://f.example/u9.png","vercode":"abc"}"#,
         .card(CardContent(userID: "u9", name: "小明", avatar: "https://f.example/u9.png"))),
        ("file", #"{"type":8,"name":"report.pdf","size":1024,"url":"https://f.example/r.pdf"}"#,
         // The attachment is named like the file (the neutral form's rule for files).
         .file(FileContent({ var a = remote("https://f.example/r.pdf", size: 1024); a.fileName = "report.pdf"; return a }(), name: "report.pdf"))),
        ("merge-forward", #"{"type":11,"channel_type":2,"users":[{"uid":"u1","name":"A"}],"msgs":[{"message_id":"1","payload":{"type":1,"content":"x"}}]}"#,
         .custom(CustomContent(raw: "wukong.merge_forward",
                               payload: #"{"channel_type":2,"msgs":[{"message_id":"1","payload":{"content":"x","type":1}}],"users":[{"name":"A","uid":"u1"}]}"#))),
        ("sticker", #"{"type":12,"url":"https://f.example/s.json","category":"cat","format":"lottie","placeholder":"https://f.example/s.png"}"#,
         .custom(CustomContent(raw: "wukong.sticker",
                               payload: #"{"category":"cat","format":"lottie","placeholder":"https://f.example/s.png","url":"https://f.example/s.json"}"#))),
        ("cmd", #"{"type":99,"cmd":"messageRevoke","param":{"message_id":"1234"}}"#,
         .command(CommandContent(name: "messageRevoke", data: ["message_id": "1234"]))),
        ("cmd-no-param", #"{"type":99,"cmd":"syncMessageExtra"}"#, .command(CommandContent(name: "syncMessageExtra"))),
        ("system-1002", #"{"type":1002,"content":"{0}邀请{1}加入群聊","extra":[{"uid":"u1","name":"张三"},{"uid":"u2","name":"李四"}]}"#,
         .notice(NoticeContent(text: "张三邀请李四加入群聊", template: "{0}邀请{1}加入群聊",
                               parameters: [["uid": "u1", "name": "张三"], ["uid": "u2", "name": "李四"]], noticeType: "1002"))),
        ("tip-2000", #"{"type":2000,"content":"群已升级"}"#, .notice(NoticeContent(text: "群已升级", template: "群已升级", noticeType: "2000"))),
        ("unknown-16", #"{"type":16,"org":"acme"}"#,
         .unsupported(UnsupportedContent(vendor: "wukong", vendorType: "16", raw: #"{"type":16,"org":"acme"}"#))),
        ("imbridge-custom", #"{"type":10000,"content_type":"order","data":"{\"z\":1,\"a\":2}"}"#,
         .custom(CustomContent(raw: "order", payload: #"{"z":1,"a":2}"#))),
    ]

    @Test(arguments: table.map(\.0)) func decodesAndRoundTrips(name: String) throws {
        let (_, json, expected) = Self.table.first { $0.0 == name }!
        let decoded = try codec.decode(payload: Data(json.utf8))
        #expect(decoded.content == expected)
        let original = try JSONValue.parse(json)
        let encoded = try codec.encode(decoded.content, mentions: decoded.mentions, reply: decoded.reply, vendorExtras: decoded.vendorExtras)
        #expect(JSONValue.object(encoded) == original, "wire → neutral → wire changed \(name)")
        let again = try codec.decode(payload: try codec.encodePayload(expected, vendorExtras: decoded.vendorExtras))
        #expect(again.content == expected, "neutral → wire → neutral changed \(name)")
    }

    /// The same table through the `ContentCodec` protocol: the `type` as a string, the other keys as
    /// the body, and back to the same body.
    @Test(arguments: table.map(\.0)) func roundTripsThroughTheContentCodecProtocol(name: String) throws {
        let (_, json, expected) = Self.table.first { $0.0 == name }!
        let protocolCodec: any ContentCodec = codec
        var body = try #require(try JSONValue.parse(json).objectValue)
        let type = try #require(body.removeValue(forKey: "type")?.int64Value)
        let wire = WireContent(type: String(type), body: body)
        let coded = try protocolCodec.decode(wire)
        #expect(try protocolCodec.encode(coded) == wire, "wire → neutral → wire changed \(name)")
        if case .unsupported(let kept) = expected {
            // A parsed body has no bytes to keep: the unsupported payload is kept as the same JSON value.
            guard case .unsupported(let decoded) = coded.content else { Issue.record("\(name) is not unsupported"); return }
            #expect(decoded.vendor == kept.vendor && decoded.vendorType == kept.vendorType)
            #expect(try JSONValue.parse(decoded.raw) == (try JSONValue.parse(kept.raw)))
            return
        }
        #expect(coded.content == expected)
        #expect(try protocolCodec.decode(try protocolCodec.encode(CodedContent(expected, vendorExtras: coded.vendorExtras))).content == expected)
    }

    @Test func protocolRefusesANonNumericType() {
        #expect(throws: IMError.self) { try codec.decode(WireContent(type: "RC:TxtMsg", body: ["content": "x"])) }
    }

    @Test func unknownPayloadIsWrittenBackByteForByte() throws {
        let raw = #"{"type":14, "rich":[1,2]}"#
        let decoded = try codec.decode(payload: Data(raw.utf8))
        #expect(try codec.encodePayload(decoded.content) == Data(raw.utf8))
    }

    @Test func mentionReplyAndEntitiesRoundTrip() throws {
        let json = #"{"type":1,"content":"@bob hi","mention":{"uids":["bob"]},"entities":[{"offset":0,"length":4,"type":"mention","value":"bob"}],"reply":{"message_id":"77","message_seq":3,"from_uid":"bob","from_name":"Bob","payload":{"type":2,"url":"u","width":1,"height":1},"root_mid":"70"}}"#
        let decoded = try codec.decode(payload: Data(json.utf8))
        #expect(decoded.mentions == Mentions(users: ["bob"]))
        #expect(decoded.reply == ReplyRef(messageID: "77", sender: "bob", digest: "[图片]"))
        #expect(decoded.vendorExtras["entities"] != nil)
        let encoded = try codec.encode(decoded.content, mentions: decoded.mentions, reply: decoded.reply, vendorExtras: decoded.vendorExtras)
        #expect(JSONValue.object(encoded) == (try JSONValue.parse(json)))
    }

    @Test func mentionAllAndBareReplyRoundTripFromNeutral() throws {
        let reply = ReplyRef(messageID: "5", sender: "carol", digest: "earlier")
        let payload = try codec.encodePayload(.text("hi"), mentions: Mentions(all: true), reply: reply)
        let decoded = try codec.decode(payload: payload)
        #expect(decoded.mentions == Mentions(all: true))
        #expect(decoded.reply == reply)
        #expect(decoded.vendorExtras.isEmpty)
    }

    @Test func registeredCustomTypeDecodesTyped() throws {
        struct Order: CustomMessageContent {
            static let contentType = "order_card"
            var id: String
            var digest: String { "[订单] \(id)" }
        }
        let codec = WuKongContentCodec(registry: try ContentRegistry([Order.self]), customTypes: [101: "order_card"])
        let decoded = try codec.decode(payload: Data(#"{"type":101,"id":"A7"}"#.utf8))
        guard case .custom(let custom) = decoded.content else { Issue.record("not custom"); return }
        #expect(custom.as(Order.self)?.id == "A7")
        #expect(decoded.content.digest == "[订单] A7")
        #expect(try JSONValue.parse(codec.encodePayload(decoded.content)) == ["type": 101, "id": "A7"])
    }

    @Test func gifWithoutSizeDecodesAs100LikeTheSDK() throws {
        let decoded = try codec.decode(payload: Data(#"{"type":3,"url":"u"}"#.utf8))
        #expect(decoded.content == .gif(GIFContent(Self.remote("u", width: 100, height: 100))))
    }

    @Test func locationAcceptsLatitudeLongitudeKeys() throws {
        let decoded = try codec.decode(payload: Data(#"{"type":6,"latitude":1.5,"longitude":2.5}"#.utf8))
        #expect(decoded.content == .location(LocationContent(latitude: 1.5, longitude: 2.5)))
    }

    @Test func foreignUnsupportedIsRefused() throws {
        #expect(throws: IMError.self) {
            try codec.encodePayload(.unsupported(UnsupportedContent(vendor: "rongcloud", vendorType: "RC:X", raw: "{}")))
        }
    }

    @Test func malformedPayloadsAreRefused() {
        #expect(throws: IMError.self) { try codec.decode(payload: Data("[1]".utf8)) }
        #expect(throws: IMError.self) { try codec.decode(payload: Data(#"{"content":"no type"}"#.utf8)) }
        #expect(throws: IMError.self) { try codec.decode(payload: Data(#"{"type":99}"#.utf8)) }
    }
}
