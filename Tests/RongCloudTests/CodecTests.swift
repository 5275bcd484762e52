import Foundation
import IMAdapterKit
import IMCore
import Testing
@testable import RongCloud

/// Table tests: payloads shaped like the content examples in docs/adapters/rongcloud.md, decoded to the
/// neutral model and encoded back to the same JSON value (custom and unsupported: the same bytes).
struct RongCloudCodecTests {
    struct Row: CustomTestStringConvertible, Sendable {
        let objectName: String
        let content: String
        let check: @Sendable (CodedContent) -> Bool
        var testDescription: String { objectName + " " + content.prefix(40) }
    }

    static let rows: [Row] = [
        Row(objectName: "RC:TxtMsg",
            content: #"{"content":"hello","extra":"helloExtra","user":{"id":"u1","name":"Alice","portrait":"http://x/p.png"}}"#) {
            $0.content == .text("hello") && $0.mentions.isEmpty && $0.vendorExtras[RongCloudContentCodec.vendorExtrasKey]?["extra"] == "helloExtra"
        },
        Row(objectName: "RC:TxtMsg",
            content: #"{"content":"@Bob @Carol hi","mentionedInfo":{"type":2,"userIdList":["u2","u3"],"mentionedContent":"有人@你"}}"#) {
            $0.mentions == Mentions(users: ["u2", "u3"]) && $0.content == .text("@Bob @Carol hi")
        },
        Row(objectName: "RC:TxtMsg", content: #"{"content":"@所有人 开会","mentionedInfo":{"type":1}}"#) {
            $0.mentions == Mentions(all: true)
        },
        Row(objectName: "RC:ImgMsg",
            content: #"{"content":"/9j/4AAQSkZJRgABAgAAZABkAAD","imageUri":"http://rongcloud-image.cn/image.jpg","extra":""}"#) {
            guard case .image(let image) = $0.content else { return false }
            return image.attachment.remoteURL == "http://rongcloud-image.cn/image.jpg"
                && image.attachment.thumbnail == "/9j/4AAQSkZJRgABAgAAZABkAAD" && image.attachment.needsDownload
        },
        Row(objectName: "RC:GIFMsg",
            content: #"{"gifDataSize":34324,"height":200,"width":300,"remoteUrl":"https://rongcloud-image.cn/a.gif","extra":""}"#) {
            guard case .gif(let gif) = $0.content else { return false }
            return gif.attachment.size == 34324 && gif.attachment.width == 300 && gif.attachment.height == 200
        },
        Row(objectName: "RC:HQVCMsg", content: #"{"remoteUrl":"https://rongcloud-file.cn/v.aac","duration":7,"extra":""}"#) {
            guard case .voice(let voice) = $0.content else { return false }
            return voice.attachment.durationMs == 7000 && voice.attachment.remoteURL == "https://rongcloud-file.cn/v.aac"
        },
        Row(objectName: "RC:VcMsg", content: #"{"content":"IyFBTVIKPJEXFr5meeHgAeev8AAAAIA=","duration":3}"#) {
            guard case .voice(let voice) = $0.content else { return false }
            return voice.attachment.remoteURL == "data:audio/amr;base64,IyFBTVIKPJEXFr5meeHgAeev8AAAAIA="
                && voice.attachment.durationMs == 3000
        },
        Row(objectName: "RC:SightMsg",
            content: #"{"sightUrl":"http://rongcloud-file.cn/s.mp4","content":"/9j/4AAQ","duration":10,"size":1024000,"name":"s.mp4","extra":""}"#) {
            guard case .video(let video) = $0.content else { return false }
            return video.attachment.durationMs == 10_000 && video.attachment.size == 1_024_000
                && video.attachment.fileName == "s.mp4" && video.attachment.thumbnail == "/9j/4AAQ"
        },
        Row(objectName: "RC:FileMsg", content: #"{"name":"report.pdf","size":2048,"type":"pdf","fileUrl":"http://rongcloud-file.cn/report.pdf"}"#) {
            guard case .file(let file) = $0.content else { return false }
            return file.name == "report.pdf" && file.attachment.size == 2048 && $0.vendorExtras[RongCloudContentCodec.vendorExtrasKey]?["type"] == "pdf"
        },
        Row(objectName: "RC:LBSMsg",
            content: #"{"content":"/9j/4AAQSk","latitude":39.9139,"longitude":116.3917,"poi":"北京市朝阳区","extra":""}"#) {
            guard case .location(let location) = $0.content else { return false }
            return location.latitude == 39.9139 && location.longitude == 116.3917 && location.title == "北京市朝阳区"
        },
        Row(objectName: "RC:ReferenceMsg",
            content: #"{"content":"I agree","referMsgUserId":"u2","referMsg":{"content":"shall we?"},"objName":"RC:TxtMsg","referMsgUid":"BRGM-DEN2-01E4-BN66"}"#) {
            $0.content == .text("I agree")
                && $0.reply == ReplyRef(messageID: "BRGM-DEN2-01E4-BN66", sender: "u2", digest: "shall we?")
        },
        Row(objectName: "RC:CmdMsg", content: #"{"name":"sync_read","data":"{\"lastTime\":1700000000000}"}"#) {
            $0.content == .command(CommandContent(name: "sync_read", data: "{\"lastTime\":1700000000000}"))
        },
        Row(objectName: "RC:InfoNtf", content: #"{"message":"u1 邀请 u2 加入了群组","extra":""}"#) {
            $0.content == .notice(NoticeContent(text: "u1 邀请 u2 加入了群组", noticeType: "RC:InfoNtf"))
        },
        Row(objectName: "RC:RcNtf",
            content: #"{"operatorId":"u1","recallTime":1700000000000,"originalObjectName":"RC:TxtMsg","isAdmin":false,"isDelete":false,"recallContent":"hi"}"#) {
            guard case .notice(let notice) = $0.content else { return false }
            return notice.noticeType == "RC:RcNtf" && notice.text == "u1 撤回了一条消息"
        },
        Row(objectName: "RC:CardMsg", content: #"{"userId":"u9","name":"Nine","portraitUri":"http://x/9.png"}"#) {
            $0.content == .card(CardContent(userID: "u9", name: "Nine", avatar: "http://x/9.png"))
        },
    ]

    @Test(arguments: rows)
    func builtInRoundTripsExactly(row: Row) throws {
        let codec = RongCloudContentCodec()
        let decoded = try codec.decode(objectName: row.objectName, content: row.content)
        #expect(row.check(decoded), "decoded: \(decoded)")
        let encoded = try codec.encode(decoded.content, mentions: decoded.mentions, reply: decoded.reply, vendorExtras: decoded.vendorExtras)
        #expect(encoded.objectName == row.objectName)
        #expect(try JSONValue.parse(encoded.content) == JSONValue.parse(row.content))
    }

    /// The same rows through `ContentCodec` (body as a JSON object): decode gives the same content,
    /// and encoding what was decoded gives the body back.
    @Test(arguments: rows)
    func builtInRoundTripsThroughTheContentCodecProtocol(row: Row) throws {
        let codec: any ContentCodec = RongCloudContentCodec()
        let body = try #require(try JSONValue.parse(row.content).objectValue)
        let decoded = try codec.decode(WireContent(type: row.objectName, body: body))
        #expect(row.check(decoded), "decoded: \(decoded)")
        #expect(decoded == (try RongCloudContentCodec().decode(objectName: row.objectName, content: row.content)))
        #expect(try codec.encode(decoded) == WireContent(type: row.objectName, body: body))
    }

    @Test func contentFromElsewhereCarriesNoKeptFieldsAndGetsTheDerivedOnes() throws {
        let codec = RongCloudContentCodec()
        let file = MessageContent.file(FileContent(MediaAttachment(remoteURL: "https://x/report.pdf", size: 2048), name: "report.pdf"))
        let fresh = try codec.encode(CodedContent(file))
        #expect(fresh.type == "RC:FileMsg" && fresh.body["type"] == "pdf", "a file from elsewhere gets its type from its name")
        let decoded = try codec.decode(WireContent(type: "RC:FileMsg", body: ["name": "report.pdf", "size": 2048, "fileUrl": "https://x/report.pdf"]))
        #expect(decoded.vendorExtras[RongCloudContentCodec.vendorExtrasKey] == .object([:]), "a RongCloud decode is marked as such")
        #expect(try codec.encode(decoded).body["type"] == nil, "a RongCloud file without type is written back without one")
    }

    @Test(arguments: [
        ("App:GiftMsg", #"{"orderId": "A1",  "amount":3}"#),
        ("App:Plain", "not json at all"),
    ])
    func unregisteredCustomKeepsBytes(objectName: String, payload: String) throws {
        let codec = RongCloudContentCodec()
        let decoded = try codec.decode(objectName: objectName, content: payload)
        guard case .custom(let custom) = decoded.content else { Issue.record("not custom: \(decoded)"); return }
        #expect(custom.typeName == objectName && !custom.isRegistered)
        let encoded = try codec.encode(decoded.content)
        #expect(encoded == RCContent(objectName: objectName, content: payload))
    }

    @Test(arguments: [
        ("RC:CombineMsg", #"{"remoteUrl":"https://x/c.html","conversationType":1,"nameList":["a"],"summaryList":["a: hi"]}"#),
        ("RC:GrpNtf", #"{"operatorUserId":"u1","operation":"Add","data":{"targetUserIds":["u2"]},"message":"","extra":""}"#),
        ("RC:TypSts", #"{"typingContentType":"RC:TxtMsg"}"#),
    ])
    func unknownBuiltInIsUnsupportedAndWrittenBackUnchanged(objectName: String, payload: String) throws {
        let codec = RongCloudContentCodec()
        let decoded = try codec.decode(objectName: objectName, content: payload)
        #expect(decoded.content == .unsupported(UnsupportedContent(vendor: "rongcloud", vendorType: objectName, raw: payload)))
        #expect(try codec.encode(decoded.content) == RCContent(objectName: objectName, content: payload))
    }

    struct OrderCard: CustomMessageContent {
        static let contentType = "order_card"
        var orderId: String
        var amount: Int
        var digest: String { "[订单] \(orderId)" }
        func validate() throws {
            if amount < 0 { throw IMError(.invalidContent, "negative amount") }
        }
    }

    @Test func registeredCustomTypeDecodesTypedThroughTheNameMap() throws {
        let registry = try ContentRegistry([OrderCard.self])
        let codec = RongCloudContentCodec(registry: registry, objectNames: ["order_card": "App:OrderMsg"])
        let decoded = try codec.decode(objectName: "App:OrderMsg", content: #"{"orderId":"A1","amount":3}"#)
        guard case .custom(let custom) = decoded.content else { Issue.record("not custom"); return }
        #expect(custom.as(OrderCard.self) == OrderCard(orderId: "A1", amount: 3))
        #expect(decoded.content.digest == "[订单] A1")
        let encoded = try codec.encode(.custom(CustomContent(OrderCard(orderId: "B2", amount: 1))))
        #expect(encoded.objectName == "App:OrderMsg")
        #expect(try JSONValue.parse(encoded.content) == ["orderId": "B2", "amount": 1])
        // A payload failing validate() is refused (the routing callback sets the message aside); one
        // that does not decode as the type stays raw and travels.
        #expect { try codec.decode(objectName: "App:OrderMsg", content: #"{"orderId":"A1","amount":-1}"#) } throws: {
            ($0 as? IMError)?.code == .invalidContent
        }
        let undecodable = try codec.decode(objectName: "App:OrderMsg", content: #"{"orderId":7}"#)
        #expect(undecodable.content == .custom(CustomContent(raw: "order_card", payload: #"{"orderId":7}"#)))
        if case .custom(let raw) = undecodable.content { #expect(!raw.isRegistered, "an undecodable payload stays raw") }
    }

    @Test func malformedBuiltInPayloadsAreRefused() {
        let codec = RongCloudContentCodec()
        #expect(throws: IMError.self) { try codec.decode(objectName: "RC:TxtMsg", content: "not json") }
        #expect(throws: IMError.self) { try codec.decode(objectName: "RC:TxtMsg", content: #"{"extra":"no content"}"#) }
        #expect(throws: IMError.self) { try codec.decode(objectName: "RC:LBSMsg", content: #"{"latitude":"north"}"#) }
        #expect(throws: IMError.self) { try codec.decode(objectName: "RC:ImgMsg", content: "[1,2]") }
    }
}
