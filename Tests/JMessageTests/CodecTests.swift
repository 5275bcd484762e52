import Foundation
import IMAdapterKit
import IMCore
import JMessage
import Testing

/// Bodies shaped like the vendor doc's examples, decoded and written back.
@Suite struct JMessageCodecTests {
    let codec = JMessageContentCodec()

    struct Row: Sendable, CustomStringConvertible {
        var msgType: String
        var body: String
        var kind: ContentKind
        var description: String { msgType + " " + body }
    }

    static let rows: [Row] = [
        Row(msgType: "text", body: #"{"extras":{"k1":"v1","n":2},"text":"Hello, JMessage"}"#, kind: .text),
        Row(msgType: "text", body: #"{"text":"没有 extras"}"#, kind: .text),
        Row(msgType: "image", body: #"{"extras":{"a":"b"},"format":"png","fsize":3386,"hash":"FnIJA2S3aW1Cy9dNLdcJ1vO61kRn","height":57,"media_crc32":2778919613,"media_id":"qiniu/image/CE0ACD035CBF71F8","width":43}"#, kind: .image),
        Row(msgType: "image", body: #"{"format":"gif","fsize":10240,"height":90,"media_crc32":11,"media_id":"qiniu/image/j/GIF0001","width":120}"#, kind: .gif),
        Row(msgType: "voice", body: #"{"duration":6,"format":"m4a","fsize":8957,"hash":"FnIJA2S3aW1Cy9dN","media_crc32":1882116055,"media_id":"qiniu/voice/j/A96B61EB3AF0E5CDE66D377DEA4F76B8"}"#, kind: .voice),
        Row(msgType: "file", body: #"{"extras":{},"fname":"合同.pdf","fsize":1024,"hash":"Fh1","media_crc32":7,"media_id":"qiniu/file/j/0123456789ABCDEF0123456789ABCDEF"}"#, kind: .file),
        Row(msgType: "location", body: #"{"label":"人民广场","latitude":31.2304,"longitude":121.4737,"scale":16}"#, kind: .location),
        Row(msgType: "location", body: #"{"lable":"old spelling","latitude":-33.5,"longitude":151.25,"scale":12}"#, kind: .location),
        Row(msgType: "video", body: #"{"duration":15,"thumb":{"format":"jpg","fsize":2048,"height":240,"media_crc32":3,"media_id":"qiniu/image/j/T1","width":320},"video":{"fname":"clip.mp4","fsize":90000,"media_crc32":2,"media_id":"qiniu/file/j/V1"}}"#, kind: .video),
        Row(msgType: "custom", body: #"{"age":18,"nested":{"list":[1,2.5,"三"]},"title":"a native customDictionary"}"#, kind: .custom),
        Row(msgType: "custom", body: #"{"extras":{"x":"y"},"imbridge_payload":"{\"amount\":1}","imbridge_type":"order"}"#, kind: .custom),
        Row(msgType: "prompt", body: #"{"prompt_type":0,"text":"消息已撤回"}"#, kind: .unsupported),
    ]

    @Test(arguments: rows)
    func decodesAndWritesBackExactly(row: Row) throws {
        let body = try JSONValue.parse(row.body)
        let decoded = try codec.decode(msgType: row.msgType, body: body)
        #expect(decoded.content.kind == row.kind)
        let (msgType, written) = try codec.encode(decoded.content, vendorExtras: decoded.vendorExtras)
        #expect(msgType == row.msgType)
        #expect(written == body, "wrote \(written.jsonString())")
    }

    @Test func mapsFieldsIntoTheNeutralModel() throws {
        let image = try codec.decode(msgType: "image", body: try JSONValue.parse(Self.rows[2].body))
        guard case .image(let content) = image.content else { Issue.record("not an image"); return }
        #expect(content.attachment.remoteURL == "qiniu/image/CE0ACD035CBF71F8")
        #expect(content.attachment.width == 43 && content.attachment.height == 57 && content.attachment.size == 3386)
        #expect(content.attachment.mimeType == "image/png" && content.attachment.checksum == "2778919613")
        #expect(image.vendorExtras["extras"] == ["a": "b"])

        let voice = try codec.decode(msgType: "voice", body: try JSONValue.parse(Self.rows[4].body))
        #expect(voice.content.attachments.first?.durationMs == 6000)

        let location = try codec.decode(msgType: "location", body: try JSONValue.parse(Self.rows[7].body))
        #expect(location.content == .location(LocationContent(latitude: -33.5, longitude: 151.25, title: "old spelling")))

        let video = try codec.decode(msgType: "video", body: try JSONValue.parse(Self.rows[8].body))
        guard case .video(let clip) = video.content else { Issue.record("not a video"); return }
        #expect(clip.attachment.remoteURL == "qiniu/file/j/V1" && clip.attachment.durationMs == 15000 && clip.attachment.fileName == "clip.mp4")
        #expect(clip.cover?.remoteURL == "qiniu/image/j/T1" && clip.cover?.width == 320)

        let native = try codec.decode(msgType: "custom", body: try JSONValue.parse(Self.rows[9].body))
        guard case .custom(let custom) = native.content else { Issue.record("not custom"); return }
        #expect(custom.typeName == JMessageContentCodec.nativeCustomType && custom.json?["age"] == 18)

        let prompt = try codec.decode(msgType: "prompt", body: try JSONValue.parse(Self.rows[11].body))
        #expect(prompt.content == .unsupported(UnsupportedContent(vendor: "jmessage", vendorType: "prompt",
                                                                  raw: #"{"prompt_type":0,"text":"消息已撤回"}"#)))
    }

    @Test func neutralContentsBecomeDocumentedBodies() throws {
        let gif = MessageContent.gif(GIFContent(MediaAttachment(remoteURL: "qiniu/image/j/G", size: 10, width: 4, height: 3)))
        let (type, body) = try codec.encode(gif)
        #expect(type == "image")
        #expect(body == JSONValue.object(["media_id": "qiniu/image/j/G", "media_crc32": 0, "fsize": 10, "width": 4, "height": 3, "format": "gif"]))

        let location = MessageContent.location(LocationContent(latitude: 1.5, longitude: 2.5, title: "T", address: "A street"))
        let (_, written) = try codec.encode(location)
        #expect(written["label"] == "T" && written["extras"]?["imbridge_address"] == "A street" && written["scale"] == 16)
        #expect(try codec.decode(msgType: "location", body: written).content == location)

        let voice = MessageContent.voice(VoiceContent(MediaAttachment(remoteURL: "https://cdn.example/v.aac", mimeType: "audio/aac",
                                                                      size: 5, durationMs: 2600)))
        let (_, voiceBody) = try codec.encode(voice)
        #expect(voiceBody["duration"] == 3 && voiceBody["format"] == "aac")

        // A contact card travels as the custom body of mappings/custom/contact_card.yaml.
        let (cardType, cardBody) = try codec.encode(.card(CardContent(userID: "u", name: "n")))
        #expect(cardType == "custom" && cardBody == ["type": "card", "username": "u", "nickname": "n"])
        #expect(try codec.decode(msgType: cardType, body: cardBody).content == .card(CardContent(userID: "u", name: "n")))
        for refused: MessageContent in [.notice(NoticeContent(text: "n")),
                                         .command(CommandContent(name: "typing")),
                                         .unsupported(UnsupportedContent(vendor: "rongcloud", vendorType: "RC:X", raw: "{}"))] {
            #expect { _ = try codec.encode(refused) } throws: { ($0 as? IMError)?.code == .unsupported }
        }
        let local = MessageContent.image(ImageContent(.local("/tmp/x.png")))
        #expect { _ = try codec.encode(local) } throws: { ($0 as? IMError)?.code == .invalidArgument }
    }

    /// The same bodies through the `ContentCodec` protocol: every body comes back exactly.
    @Test(arguments: rows)
    func theContentCodecProtocolWritesBackExactly(row: Row) throws {
        let body = try #require(try JSONValue.parse(row.body).objectValue)
        let protocolCodec: any ContentCodec = codec
        let coded = try protocolCodec.decode(WireContent(type: row.msgType, body: body))
        #expect(coded.content.kind == row.kind && coded.reply == nil && coded.mentions.isEmpty)
        #expect(try protocolCodec.encode(coded) == WireContent(type: row.msgType, body: body))
    }

    @Test func theContentCodecProtocolCarriesRepliesInExtrasAndRefusesMentions() throws {
        let reply = ReplyRef(messageID: "43143728109", sender: "alice", digest: "quoted")
        let coded = CodedContent(.text("answer"), reply: reply, vendorExtras: ["extras": ["k": "v"]])
        let wire = try codec.encode(coded)
        #expect(wire.type == "text" && wire.body["extras"]?["imbridge_reply_id"] == "43143728109")
        #expect(wire.body["extras"]?["imbridge_reply_sender"] == "alice" && wire.body["extras"]?["k"] == "v")
        let back = try codec.decode(wire)
        #expect(back.content == coded.content && back.reply == reply && back.mentions.isEmpty)
        #expect(back.vendorExtras["extras"] == ["k": "v"], "the reply leaves the kept extras")
        #expect(try codec.encode(back) == wire)
        let bare = try codec.decode(try codec.encode(CodedContent(.text("answer"), reply: reply)))
        #expect(bare.content == .text("answer") && bare.reply == reply && bare.vendorExtras["extras"] == nil)
        #expect { _ = try codec.encode(CodedContent(.text("@bob"), mentions: Mentions(users: ["bob"]))) } throws: {
            ($0 as? IMError)?.code == .unsupported
        }
    }

    @Test func registeredCustomTypesComeBackTyped() throws {
        let registry = ContentRegistry()
        try registry.register(Order.self)
        let typed = JMessageContentCodec(registry: registry)
        let order = CustomContent(Order(id: 42, note: "加急"))
        let (type, body) = try typed.encode(.custom(order))
        #expect(type == "custom" && body["imbridge_type"] == "order")
        let back = try typed.decode(msgType: type, body: body).content
        guard case .custom(let custom) = back else { Issue.record("not custom"); return }
        #expect(custom.as(Order.self) == Order(id: 42, note: "加急") && custom.payload == order.payload)
    }
}

struct Order: CustomMessageContent {
    static let contentType = "order"
    var id: Int
    var note: String
    var digest: String { "[订单] \(id)" }
}
