import IMAdapterKit
import IMCore
import NIM
import Testing

/// A custom type with media, as an app would register it (the seed's NIMCustomAttachment with a picture).
struct PhotoCard: CustomMessageContent {
    static let contentType = "photo_card"
    var title: String
    var subTitle: String
    var photo: MediaAttachment?
    var digest: String { "[卡片] \(title)" }
    var attachments: [MediaAttachment] { photo.map { [$0] } ?? [] }
    func replacingAttachments(_ attachments: [MediaAttachment]) -> PhotoCard {
        var copy = self
        copy.photo = attachments.first
        return copy
    }
}

@Suite struct NIMCodecTests {
    static let codec = NIMMessageCodec(registry: try! ContentRegistry([PhotoCard.self]))

    /// (type, body shaped like NIM's documented examples (docs/adapters/nim.md), expected neutral content)
    static let table: [(Int, String, MessageContent)] = [
        (0, #"{"msg":"哈哈哈"}"#, .text("哈哈哈")),
        (1, #"{"name":"图片发送于2015-05-07 13:59","md5":"9894907e4ad9de4678091277509361f7","url":"http://nimtest.nos.netease.com/cbc500e8-e19c-4b0f-834b-c32d4dc1075e","ext":"jpg","w":6814,"h":2332,"size":388245}"#,
         .image(ImageContent(MediaAttachment(remoteURL: "http://nimtest.nos.netease.com/cbc500e8-e19c-4b0f-834b-c32d4dc1075e", mimeType: "image/jpeg",
                                             size: 388245, checksum: "9894907e4ad9de4678091277509361f7", width: 6814, height: 2332,
                                             fileName: "图片发送于2015-05-07 13:59", transferState: .needsDownload)))),
        (1, #"{"url":"http://nos.example/a.gif","ext":"gif","w":120,"h":90,"size":4096}"#,
         .gif(GIFContent(MediaAttachment(remoteURL: "http://nos.example/a.gif", mimeType: "image/gif", size: 4096, width: 120, height: 90,
                                         transferState: .needsDownload)))),
        (2, #"{"dur":4551,"md5":"87b94a090dec5c58f242b7132a530a01","url":"http://nimtest.nos.netease.com/a2583322-413d-4653-9a70-9cabdfc7f5f9","ext":"aac","size":16420}"#,
         .voice(VoiceContent(MediaAttachment(remoteURL: "http://nimtest.nos.netease.com/a2583322-413d-4653-9a70-9cabdfc7f5f9", mimeType: "audio/aac",
                                             size: 16420, checksum: "87b94a090dec5c58f242b7132a530a01", durationMs: 4551,
                                             transferState: .needsDownload)))),
        (3, #"{"dur":8003,"md5":"da2cef3e5663ee9c3547ef5d127f7e3e","url":"http://nimtest.nos.netease.com/21f34447-e9ac-4871-91ad-d9f03af20412","w":356,"h":640,"ext":"mp4","size":673914}"#,
         .video(VideoContent(MediaAttachment(remoteURL: "http://nimtest.nos.netease.com/21f34447-e9ac-4871-91ad-d9f03af20412", mimeType: "video/mp4",
                                             size: 673914, checksum: "da2cef3e5663ee9c3547ef5d127f7e3e", width: 356, height: 640,
                                             durationMs: 8003, transferState: .needsDownload)))),
        (4, #"{"title":"中国 浙江省 杭州市 网商路 599号","lng":120.1908686708565,"lat":30.18704515647036}"#,
         .location(LocationContent(latitude: 30.18704515647036, longitude: 120.1908686708565, title: "中国 浙江省 杭州市 网商路 599号"))),
        (6, #"{"name":"BlizzardReg.ttf","md5":"79d62a35fa3d34c367b20c66afc2a500","url":"http://nimtest.nos.netease.com/08c9859d-183f-4daa-9904-d6cacb51c95b","ext":"ttf","size":91680}"#,
         .file(FileContent(MediaAttachment(remoteURL: "http://nimtest.nos.netease.com/08c9859d-183f-4daa-9904-d6cacb51c95b", size: 91680,
                                           checksum: "79d62a35fa3d34c367b20c66afc2a500", fileName: "BlizzardReg.ttf", transferState: .needsDownload),
                           name: "BlizzardReg.ttf"))),
        (10, #"{"msg":"这是一条提示"}"#, .notice(NoticeContent(text: "这是一条提示", noticeType: "nim.tip"))),
        // The NIM custom-message guide's bare attachment is recognised by mappings/custom/title_card.yaml (by its `title`).
        (100, #"{"title":"Hello","subTitle":"World"}"#, .custom(CustomContent(raw: "title_card", payload: #"{"subtitle":"World","title":"Hello"}"#))),
        (100, #"{"caption":"Hello"}"#, .custom(CustomContent(raw: "nim_custom", payload: #"{"caption":"Hello"}"#))),
        (5, #"{"data":{"ids":["a"]},"id":2}"#, .unsupported(UnsupportedContent(vendor: "nim", vendorType: "5", raw: #"{"data":{"ids":["a"]},"id":2}"#))),
        (11, #"{"robot":"r1"}"#, .unsupported(UnsupportedContent(vendor: "nim", vendorType: "11", raw: #"{"robot":"r1"}"#))),
        (42, "not even json", .unsupported(UnsupportedContent(vendor: "nim", vendorType: "42", raw: "not even json"))),
    ]

    /// The shared `ContentCodec` protocol: every row whose body is a JSON object decodes through
    /// `WireContent` to the same content and encodes back to the same type and fields.
    @Test(arguments: 0..<table.count)
    func theContentCodecProtocolRoundTrips(row: Int) throws {
        let (type, body, expected) = Self.table[row]
        guard let object = (try? JSONValue.parse(body))?.objectValue else { return }
        let codec: any ContentCodec = Self.codec.content
        let wire = WireContent(type: String(type), body: object)
        let decoded = try codec.decode(wire)
        #expect(decoded.content == expected)
        #expect(decoded.mentions.isEmpty && decoded.reply == nil)
        #expect(try codec.encode(decoded) == wire)
    }

    /// Fields the neutral content has no place for ride in `vendorExtras` (the body text under `nim_body`)
    /// and come back while the content is unchanged; changed content is written afresh.
    @Test func unmappedBodyFieldsRideInVendorExtras() throws {
        let codec = Self.codec.content
        let wire = WireContent(type: "0", body: ["msg": "hi", "app_flag": 7])
        let decoded = try codec.decode(wire)
        #expect(decoded.content == .text("hi"))
        #expect(decoded.vendorExtras[NIMMessageCodec.bodyHintKey] == .string(#"{"app_flag":7,"msg":"hi"}"#))
        #expect(try codec.encode(decoded) == wire)
        var edited = decoded
        edited.content = .text("changed")
        #expect(try codec.encode(edited) == WireContent(type: "0", body: ["msg": "changed"]))
        #expect(try codec.decode(WireContent(type: "0", body: ["msg": "plain"])).vendorExtras.isEmpty)
        #expect(throws: IMError.self) { try codec.decode(WireContent(type: "text", body: ["msg": "x"])) }
    }

    @Test func contentsEncodeToTheDocShapes() throws {
        let encoded = try Self.codec.content.encode(.text("hi \"you\""))
        #expect(encoded.type == 0 && encoded.body == #"{"msg":"hi \"you\""}"#)
        let image = try Self.codec.content.encode(.image(ImageContent(MediaAttachment(remoteURL: "https://x/1.png", mimeType: "image/png",
                                                                                         size: 10, width: 2, height: 3))))
        #expect(image.type == 1 && image.body == #"{"ext":"png","h":3,"size":10,"url":"https://x/1.png","w":2}"#)
        let card = try Self.codec.content.encode(.card(CardContent(userID: "u1", name: "小明")))
        #expect(try card.type == 100 && JSONValue.parse(card.body) == JSONValue.parse(#"{"type":"imbridge.card","data":{"name":"小明","userID":"u1"}}"#))
        #expect(try Self.codec.content.decode(type: card.type, body: card.body) == .card(CardContent(userID: "u1", name: "小明")))
    }

    @Test func mediaWithoutURLIsRefusedUntilUploaded() {
        #expect(throws: IMError.self) {
            _ = try Self.codec.content.encode(.image(ImageContent(.local("/tmp/x.jpg"))))
        }
    }

    @Test func foreignUnsupportedAndCommandsAreNotMessages() {
        #expect(throws: IMError.self) {
            _ = try Self.codec.content.encode(.unsupported(UnsupportedContent(vendor: "rongcloud", vendorType: "RC:X", raw: "{}")))
        }
        #expect(throws: IMError.self) { _ = try Self.codec.content.encode(.command(CommandContent(name: "typing"))) }
    }

    @Test func malformedBodiesAreRefused() {
        #expect(throws: IMError.self) { _ = try Self.codec.content.decode(type: 0, body: "plain") }
        #expect(throws: IMError.self) { _ = try Self.codec.content.decode(type: 1, body: #"{"ext":"jpg"}"#) }
        #expect(throws: IMError.self) { _ = try Self.codec.content.decode(type: 4, body: #"{"title":"x"}"#) }
    }
}

/// Type-100 custom attachments (the NIMCustomAttachment hooks).
extension NIMCodecTests {
    @Test func registeredCustomWithMediaDecodesTypedAndKeepsPayloadBytes() throws {
        let body = #"{"type":"photo_card","data":{"title":"T","subTitle":"S","photo":{"remoteURL":"http://nos/p.jpg","transferState":"needs_download"}}}"#
        let decoded = try Self.codec.decodeBody(type: 100, body: body)
        guard case .custom(let custom) = decoded.content, let card = custom.as(PhotoCard.self) else {
            Issue.record("not a PhotoCard: \(decoded.content)")
            return
        }
        #expect(card.title == "T" && card.photo?.remoteURL == "http://nos/p.jpg")
        #expect(card.photo?.needsDownload == true)
        #expect(custom.payload == #"{"title":"T","subTitle":"S","photo":{"remoteURL":"http://nos/p.jpg","transferState":"needs_download"}}"#)
        #expect(try Self.codec.encodeBody(decoded.content, hint: decoded.hint).body == body)
    }

    @Test func registeredCustomWithoutMedia() throws {
        let content = MessageContent.custom(CustomContent(PhotoCard(title: "无图", subTitle: "x")))
        let encoded = try Self.codec.content.encode(content)
        #expect(encoded.type == 100)
        #expect(encoded.body.hasPrefix(#"{"type":"photo_card","data":{"#))
        let back = try Self.codec.content.decode(type: 100, body: encoded.body)
        #expect(back == content)
        guard case .custom(let custom) = back else { return }
        #expect(custom.attachments.isEmpty && custom.as(PhotoCard.self)?.title == "无图")
    }

    /// The NIMCustomAttachment hooks map onto the media transfer states: needs upload with a path, then
    /// the uploaded URL goes back into the custom content and into its encoded body.
    @Test func uploadHooksRewriteTheEncodedBody() throws {
        let pending = PhotoCard(title: "T", subTitle: "S", photo: .local("/tmp/p.jpg", mimeType: "image/jpeg"))
        let content = CustomContent(pending)
        #expect(content.attachments.first?.needsUpload == true)
        #expect(content.attachments.first?.pathForUploading == "/tmp/p.jpg")
        var uploaded = content.attachments[0]
        try uploaded.markUploaded(url: "http://nos/uploaded.jpg")
        let rehosted = content.replacingAttachments([uploaded])
        let body = try Self.codec.content.encode(.custom(rehosted)).body
        #expect(body.contains("http://nos/uploaded.jpg"))
        let received = try Self.codec.content.decode(type: 100, body: body)
        guard case .custom(let custom) = received else { Issue.record("not custom"); return }
        #expect(custom.attachments.first?.remoteURL == "http://nos/uploaded.jpg")
    }

    @Test func numericDiscriminatorsUseAliases() throws {
        let format = NIMCustomFormat(aliases: ["1": "photo_card"])
        let codec = NIMContentCodec(registry: try ContentRegistry([PhotoCard.self]), customFormat: format)
        let body = #"{"type":1,"data":{"title":"A","subTitle":"B"}}"#
        guard case .custom(let custom) = try codec.decode(type: 100, body: body) else { Issue.record("not custom"); return }
        #expect(custom.typeName == "photo_card" && custom.as(PhotoCard.self)?.subTitle == "B")
        #expect(try codec.encode(.custom(custom)).body == body)
    }

    @Test func unknownTypedCustomStaysRawByteForByte() throws {
        let payload = #"{"z":1,"a":"x y","nested":{"k":[1,2.5,"三"]}}"#
        let content = MessageContent.custom(CustomContent(raw: "unknown_probe", payload: payload))
        let body = try Self.codec.content.encode(content).body
        #expect(body == #"{"type":"unknown_probe","data":{"z":1,"a":"x y","nested":{"k":[1,2.5,"三"]}}}"#)
        #expect(try Self.codec.content.decode(type: 100, body: body) == content)
    }
}
