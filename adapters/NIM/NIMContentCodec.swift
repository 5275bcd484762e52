import Foundation
import IMCore

/// Pure translation between a NIM `(type, body)` pair and a neutral `MessageContent` (vendor doc §3.4).
///
/// | type | body | neutral |
/// |---|---|---|
/// | 0 text | `{"msg"}` | `.text` |
/// | 1 image | `{name,md5,url,ext,w,h,size}` | `.image`, or `.gif` when `ext` is `gif` |
/// | 2 voice | `{dur,md5,url,ext,size}` (dur in ms) | `.voice` |
/// | 3 video | `{dur,md5,url,w,h,ext,size}` | `.video` (NIM has no cover field) |
/// | 4 location | `{title,lng,lat}` | `.location` |
/// | 6 file | `{name,md5,url,ext,size}` | `.file` |
/// | 10 tip | `{"msg"}` | `.notice` (`noticeType` "nim.tip") |
/// | 100 custom | app JSON | `.custom` through `NIMCustomFormat` + `ContentRegistry`; `imbridge.card` → `.card` |
/// | anything else (5 notification, 11 robot, unknown) | as is | `.unsupported` (vendor "nim", raw body) |
///
/// Encoding never re-serialises a custom payload or an unsupported body, so those round-trip byte for
/// byte; for the other types `NIMMessageCodec` keeps the original body when re-encoding would differ.
public struct NIMContentCodec: Sendable {
    public let registry: ContentRegistry
    public let customFormat: NIMCustomFormat

    /// The custom type name a contact card travels under (NIM has no card type).
    public static let cardTypeName = "imbridge.card"
    public static let tipNoticeType = "nim.tip"

    public init(registry: ContentRegistry = ContentRegistry(), customFormat: NIMCustomFormat = NIMCustomFormat()) {
        self.registry = registry
        self.customFormat = customFormat
    }

    // MARK: decode

    /// Decodes a body; a body that is not the JSON its type requires throws `malformed_payload`.
    public func decode(type: Int, body: String) throws -> MessageContent {
        guard let known = NIMMessageType(rawValue: type), known != .notification, known != .robot else {
            return .unsupported(UnsupportedContent(vendor: "nim", vendorType: String(type), raw: body))
        }
        if known == .custom { return try decodeCustom(body) }
        guard let json = try? JSONValue.parse(body), let object = json.objectValue else {
            throw IMError(.malformedPayload, "NIM type \(type) body is not a JSON object: \(body.prefix(200))")
        }
        switch known {
        case .text:
            guard let text = NIMLenient.string(object["msg"]) else { throw IMError(.malformedPayload, "text body lacks msg") }
            return .text(text)
        case .tip:
            return .notice(NoticeContent(text: NIMLenient.string(object["msg"]) ?? "", noticeType: Self.tipNoticeType))
        case .image:
            let attachment = try media(object, kind: "image")
            return object["ext"]?.stringValue?.lowercased() == "gif" ? .gif(GIFContent(attachment)) : .image(ImageContent(attachment))
        case .voice:
            return .voice(VoiceContent(try media(object, kind: "voice")))
        case .video:
            return .video(VideoContent(try media(object, kind: "video")))
        case .file:
            let attachment = try media(object, kind: "file")
            return .file(FileContent(attachment, name: attachment.fileName ?? ""))
        case .location:
            guard let lat = object["lat"]?.doubleValue, let lng = object["lng"]?.doubleValue else {
                throw IMError(.malformedPayload, "location body lacks lat/lng")
            }
            return .location(LocationContent(latitude: lat, longitude: lng, title: NIMLenient.string(object["title"])))
        case .custom, .notification, .robot:
            preconditionFailure("handled above")
        }
    }

    func decodeCustom(_ body: String) throws -> MessageContent {
        let (typeName, payload) = customFormat.split(body)
        if typeName == Self.cardTypeName, let card = try? JSONValue.parse(payload),
           let user = NIMLenient.string(card["userID"]) {
            return .card(CardContent(userID: UserID(user), name: NIMLenient.string(card["name"]) ?? "",
                                     avatar: NIMLenient.string(card["avatar"])))
        }
        return .custom(try registry.decode(typeName: typeName, payload: payload))
    }

    func media(_ object: [String: JSONValue], kind: String) throws -> MediaAttachment {
        guard let url = NIMLenient.string(object["url"]), !url.isEmpty else {
            throw IMError(.malformedPayload, "\(kind) body lacks url")
        }
        let ext = NIMLenient.string(object["ext"])
        return MediaAttachment(remoteURL: url, mimeType: ext.flatMap(NIMMediaTypes.mime(forExtension:)),
                          size: object["size"]?.int64Value, checksum: NIMLenient.string(object["md5"]),
                          width: object["w"]?.int64Value.map { Int($0) }, height: object["h"]?.int64Value.map { Int($0) },
                          durationMs: object["dur"]?.int64Value, fileName: NIMLenient.string(object["name"]),
                          transferState: .needsDownload)
    }

    // MARK: encode

    /// Encodes a content for `/msg/sendMsg.action`. Media must have a remote URL (upload first);
    /// commands are not messages (they go out as custom system notifications) and unsupported contents
    /// of another vendor cannot be written: both throw `unsupported`.
    public func encode(_ content: MessageContent) throws -> (type: Int, body: String) {
        switch content {
        case .text(let text):
            return (0, JSONValue.object(["msg": .string(text.text)]).jsonString())
        case .notice(let notice):
            return (10, JSONValue.object(["msg": .string(notice.text)]).jsonString())
        case .image(let image):
            return (1, try mediaBody(image.attachment, kind: .image, defaultExt: "jpg"))
        case .gif(let gif):
            return (1, try mediaBody(gif.attachment, kind: .image, defaultExt: "gif", forcedExt: "gif"))
        case .voice(let voice):
            return (2, try mediaBody(voice.attachment, kind: .voice, defaultExt: "aac"))
        case .video(let video):
            return (3, try mediaBody(video.attachment, kind: .video, defaultExt: "mp4"))
        case .file(let file):
            var attachment = file.attachment
            attachment.fileName = file.name
            return (6, try mediaBody(attachment, kind: .file, defaultExt: nil))
        case .location(let location):
            var object: [String: JSONValue] = ["lat": .double(location.latitude), "lng": .double(location.longitude)]
            if let title = location.title ?? location.address { object["title"] = .string(title) }
            return (4, JSONValue.object(object).jsonString())
        case .card(let card):
            var object: [String: JSONValue] = ["userID": .string(card.userID.rawValue), "name": .string(card.name)]
            if let avatar = card.avatar { object["avatar"] = .string(avatar) }
            return (100, customFormat.join(typeName: Self.cardTypeName, payload: JSONValue.object(object).jsonString()))
        case .custom(let custom):
            return (100, customFormat.join(typeName: custom.typeName, payload: custom.payload))
        case .unsupported(let unsupported):
            guard unsupported.vendor == "nim", let type = Int(unsupported.vendorType) else {
                throw IMError(.unsupported, "a \(unsupported.vendor) '\(unsupported.vendorType)' payload cannot be written to NIM")
            }
            return (type, unsupported.raw)
        case .command:
            throw IMError(.unsupported, "commands are sent as NIM custom system notifications, not messages")
        }
    }

    func mediaBody(_ attachment: MediaAttachment, kind: NIMMessageType, defaultExt: String?, forcedExt: String? = nil) throws -> String {
        guard let url = attachment.remoteURL, !url.isEmpty else {
            throw IMError(.invalidContent, "the \(kind.copyName.lowercased()) attachment has no URL yet; upload it first",
                          details: ["transfer_state": attachment.transferState.rawValue])
        }
        var object: [String: JSONValue] = ["url": .string(url)]
        let ext = forcedExt ?? attachment.mimeType.flatMap(NIMMediaTypes.fileExtension(forMIME:))
            ?? attachment.fileName.flatMap(NIMMediaTypes.fileExtension(ofName:)) ?? defaultExt
        if let ext { object["ext"] = .string(ext) }
        if let md5 = attachment.checksum { object["md5"] = .string(md5) }
        if let size = attachment.size { object["size"] = .int(size) }
        if kind == .image || kind == .video {
            if let width = attachment.width { object["w"] = .int(Int64(width)) }
            if let height = attachment.height { object["h"] = .int(Int64(height)) }
        }
        if kind == .voice || kind == .video, let duration = attachment.durationMs { object["dur"] = .int(duration) }
        if kind == .image || kind == .file, let name = attachment.fileName { object["name"] = .string(name) }
        return JSONValue.object(object).jsonString()
    }
}
