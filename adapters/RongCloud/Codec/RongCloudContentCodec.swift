import IMCore

/// Pure translation between RongCloud contents (`objectName` + `content` JSON text) and the neutral
/// `MessageContent` (vendor doc §4). No I/O.
///
/// Mapping (see `docs/adapters/rongcloud.md` for the full table):
/// - `RC:TxtMsg` ⇄ text; `RC:ImgMsg` ⇄ image (`imageUri`, base64 thumbnail `content`); `RC:GIFMsg` ⇄ gif;
///   `RC:HQVCMsg` ⇄ voice (`remoteUrl`, `duration` seconds); `RC:VcMsg` ⇄ voice whose URL is a
///   `data:audio/amr;base64,` URL holding the inline AMR; `RC:SightMsg` ⇄ video; `RC:FileMsg` ⇄ file;
///   `RC:LBSMsg` ⇄ location (`poi` is the title); `RC:ReferenceMsg` ⇄ text with a `ReplyRef`;
///   `RC:CmdMsg` ⇄ command; `RC:InfoNtf` and `RC:RcNtf` ⇄ notice (`noticeType` keeps which);
///   `RC:CardMsg` (IMKit's contact card) ⇄ card.
/// - `mentionedInfo` (any built-in type): `type` 1 = @all, 2 = the users in `userIdList`.
/// - An objectName without the `RC:` prefix is an app type: typed through the `ContentRegistry` when
///   registered and valid, raw `.custom` (payload kept byte for byte) otherwise. Custom names map through
///   `objectNames` (neutral `contentType` → objectName), identity by default.
/// - Any other `RC:` type (`RC:CombineMsg`, `RC:GrpNtf`, …, and the signals `RC:RcCmd`/`RC:MsgExMsg`
///   when read as content) is `.unsupported` with the exact content text, written back unchanged.
public struct RongCloudContentCodec: Sendable {
    public let registry: ContentRegistry
    /// Neutral custom `contentType` → RongCloud objectName, for app types registered under another name.
    public let objectNames: [String: String]

    public static let amrDataURLPrefix = "data:audio/amr;base64,"
    static let vendor = "rongcloud"

    public init(registry: ContentRegistry = ContentRegistry(), objectNames: [String: String] = [:]) {
        self.registry = registry
        self.objectNames = objectNames
    }

    // MARK: decoding

    /// Throws `malformed_payload` when a modelled built-in type's content is not its JSON shape.
    public func decode(objectName: String, content text: String) throws -> RongCloudContent {
        guard RCObjectName.isBuiltIn(objectName) else {
            let typeName = objectNames.first { $0.value == objectName }?.key ?? objectName
            // A registered type whose payload does not decode or validate stays raw: the message still
            // arrives (refusing it would only make the vendor redeliver it forever).
            let custom = (try? registry.decode(typeName: typeName, payload: text)) ?? CustomContent(raw: typeName, payload: text)
            return RongCloudContent(content: .custom(custom))
        }
        guard Self.modelled.contains(objectName) else {
            return RongCloudContent(content: .unsupported(UnsupportedContent(vendor: Self.vendor, vendorType: objectName, raw: text)))
        }
        guard case .object(let object) = try JSONValue.parse(text) else {
            throw IMError(.malformedPayload, "\(objectName) content is not a JSON object")
        }
        var fields = ContentFields(object)
        let mentions = Self.decodeMentions(&fields)
        var reply: ReplyRef?
        let content: MessageContent
        switch objectName {
        case RCObjectName.text:
            content = .text(try fields.requireString("content", in: objectName))
        case RCObjectName.image:
            let thumbnail = fields.string("content")
            content = .image(ImageContent(MediaAttachment(remoteURL: try fields.requireString("imageUri", in: objectName),
                                                     thumbnail: thumbnail, transferState: .needsDownload)))
        case RCObjectName.gif:
            content = .gif(GIFContent(MediaAttachment(remoteURL: try fields.requireString("remoteUrl", in: objectName),
                                                 size: fields.int64("gifDataSize"), width: fields.int("width"),
                                                 height: fields.int("height"), transferState: .needsDownload)))
        case RCObjectName.hqVoice:
            content = .voice(VoiceContent(MediaAttachment(remoteURL: try fields.requireString("remoteUrl", in: objectName),
                                                     durationMs: fields.int64("duration").map { $0 * 1000 },
                                                     transferState: .needsDownload)))
        case RCObjectName.voice:
            let amr = try fields.requireString("content", in: objectName)
            content = .voice(VoiceContent(MediaAttachment(remoteURL: Self.amrDataURLPrefix + amr, mimeType: "audio/amr",
                                                     durationMs: fields.int64("duration").map { $0 * 1000 },
                                                     transferState: .needsDownload)))
        case RCObjectName.sight:
            let url = try fields.requireString("sightUrl", in: objectName)
            content = .video(VideoContent(MediaAttachment(remoteURL: url, size: fields.int64("size"),
                                                     durationMs: fields.int64("duration").map { $0 * 1000 },
                                                     thumbnail: fields.string("content"), fileName: fields.string("name"),
                                                     transferState: .needsDownload)))
        case RCObjectName.file:
            let name = try fields.requireString("name", in: objectName)
            content = .file(FileContent(MediaAttachment(remoteURL: try fields.requireString("fileUrl", in: objectName),
                                                   size: fields.int64("size"), fileName: name, transferState: .needsDownload),
                                        name: name))
        case RCObjectName.location:
            guard let latitude = fields.double("latitude"), let longitude = fields.double("longitude") else {
                throw IMError(.malformedPayload, "RC:LBSMsg content needs numeric latitude and longitude")
            }
            content = .location(LocationContent(latitude: latitude, longitude: longitude, title: fields.string("poi"),
                                                thumbnail: fields.string("content")))
        case RCObjectName.reference:
            content = .text(try fields.requireString("content", in: objectName))
            reply = try decodeReference(&fields)
        case RCObjectName.command:
            content = .command(CommandContent(name: try fields.requireString("name", in: objectName),
                                              data: fields.take("data") ?? .null))
        case RCObjectName.infoNotification:
            content = .notice(NoticeContent(text: try fields.requireString("message", in: objectName),
                                            noticeType: RCObjectName.infoNotification))
        case RCObjectName.recallNotification:
            // Everything stays in the leftovers: the notice is written back exactly as received.
            let text = object["operatorId"]?.stringValue.map { "\($0) 撤回了一条消息" } ?? "撤回了一条消息"
            content = .notice(NoticeContent(text: text, noticeType: RCObjectName.recallNotification))
        case RCObjectName.card:
            content = .card(CardContent(userID: UserID(try fields.requireString("userId", in: objectName)),
                                        name: fields.string("name") ?? "", avatar: fields.string("portraitUri")))
        default:
            preconditionFailure("modelled type \(objectName) has no decoder")
        }
        return RongCloudContent(content: content, mentions: mentions, reply: reply, leftovers: fields.remaining)
    }

    /// The built-in types this codec models (everything else with `RC:` is unsupported).
    static let modelled: Set<String> = [
        RCObjectName.text, RCObjectName.image, RCObjectName.gif, RCObjectName.hqVoice, RCObjectName.voice,
        RCObjectName.sight, RCObjectName.file, RCObjectName.location, RCObjectName.reference, RCObjectName.command,
        RCObjectName.infoNotification, RCObjectName.recallNotification, RCObjectName.card,
    ]

    private static func decodeMentions(_ fields: inout ContentFields) -> Mentions {
        guard case .object(var info)? = fields.take("mentionedInfo") else { return Mentions() }
        let type = info.removeValue(forKey: "type")?.int64Value ?? 0
        let users = (info.removeValue(forKey: "userIdList")?.arrayValue ?? []).compactMap(\.stringValue).map(UserID.init)
        if !info.isEmpty { fields.remaining["mentionedInfo"] = .object(info) }
        return Mentions(all: type == 1, users: type == 1 ? [] : users)
    }

    /// `referMsgUid`, `referMsgUserId`; the quoted `referMsg` + `objName` stay as leftovers and give the digest.
    private func decodeReference(_ fields: inout ContentFields) throws -> ReplyRef {
        guard let uid = fields.string("referMsgUid") else {
            throw IMError(.malformedPayload, "RC:ReferenceMsg content has no 'referMsgUid'")
        }
        let sender = fields.string("referMsgUserId").map(UserID.init)
        var digest = ""
        if let quoted = fields.remaining["referMsg"], let objName = fields.remaining["objName"]?.stringValue {
            let text = quoted.stringValue ?? quoted.jsonString()
            digest = (try? decode(objectName: objName, content: text).content.digest) ?? "[\(objName)]"
        }
        return ReplyRef(messageID: MessageID(uid), sender: sender, digest: digest)
    }
}
