import Foundation
import IMCore

/// A decoded `msg_body`: the neutral content, the body's `extras` and the body without `extras`
/// (kept so that writing the content back reproduces every vendor field, e.g. `media_crc32`, `hash`,
/// `scale`, that has no neutral home).
public struct JMessageDecodedBody: Hashable, Sendable {
    public var content: MessageContent
    /// The `extras` object, nil when the body had none.
    public var extras: [String: JSONValue]?
    public var base: [String: JSONValue]
}

/// Pure translation between JMessage `msg_type` + `msg_body` and `MessageContent` (D-IM §3, D-PROTO).
///
/// | msg_type | neutral | notes |
/// |---|---|---|
/// | text | text | `text` |
/// | image | image, or gif when `format` is `gif` | `media_id` ⇄ `remoteURL`, `fsize` ⇄ size, `media_crc32` ⇄ `checksum` (decimal) |
/// | voice | voice | `duration` seconds ⇄ `durationMs` |
/// | file | file | `fname` ⇄ name |
/// | location | location | `label` ⇄ title (`lable` accepted on input), address in extras `imbridge_address` |
/// | video | video | `video{…}` file object, `thumb{…}` cover, `duration` seconds |
/// | custom | custom | ours: `{"imbridge_type", "imbridge_payload"}`; any other body → raw type `jmessage_custom` |
/// | anything else | unsupported | body kept byte-for-byte (as canonical JSON) and written back unchanged |
///
/// Card, notice and command have no JMessage REST form and are refused (`unsupported`).
public struct JMessageContentCodec: Sendable {
    /// The raw type name for a custom body that is not one of ours (a JMessage app's `customDictionary`).
    public static let nativeCustomType = "jmessage_custom"
    static let typeKey = "imbridge_type"
    static let payloadKey = "imbridge_payload"
    static let addressKey = "imbridge_address"

    public let registry: ContentRegistry
    public init(registry: ContentRegistry = ContentRegistry()) { self.registry = registry }

    // MARK: decode

    public func decode(msgType: String, body: JSONValue) throws -> JMessageDecodedBody {
        guard var object = body.objectValue else {
            throw IMError(.malformedPayload, "msg_body of a \(msgType) message is not a JSON object")
        }
        let extras = object.removeValue(forKey: "extras").flatMap(\.objectValue)
        let content: MessageContent
        switch msgType {
        case "text":
            guard let text = object["text"]?.stringValue else { throw IMError(.malformedPayload, "text body without `text`") }
            content = .text(text)
        case "image":
            let attachment = try media(object, kind: "image")
            content = object["format"]?.stringValue?.lowercased() == "gif" ? .gif(GIFContent(attachment)) : .image(ImageContent(attachment))
        case "voice":
            content = .voice(VoiceContent(try media(object, kind: "voice")))
        case "file":
            let attachment = try media(object, kind: "file")
            content = .file(FileContent(attachment, name: attachment.fileName ?? ""))
        case "location":
            guard let latitude = object["latitude"]?.doubleValue, let longitude = object["longitude"]?.doubleValue else {
                throw IMError(.malformedPayload, "location body without latitude/longitude")
            }
            let label = (object["label"] ?? object["lable"])?.stringValue
            content = .location(LocationContent(latitude: latitude, longitude: longitude, title: label.flatMap { $0.isEmpty ? nil : $0 },
                                                address: extras?[Self.addressKey]?.stringValue))
        case "video":
            guard let file = object["video"]?.objectValue else { throw IMError(.malformedPayload, "video body without `video`") }
            var attachment = try media(file, kind: "video")
            attachment.durationMs = object["duration"]?.doubleValue.map { Int64(($0 * 1000).rounded()) }
            let cover = try object["thumb"]?.objectValue.map { try media($0, kind: "thumb") }
            content = .video(VideoContent(attachment, cover: cover))
        case "custom":
            if let typeName = object[Self.typeKey]?.stringValue, let payload = object[Self.payloadKey]?.stringValue {
                content = .custom(try registry.decode(typeName: typeName, payload: payload))
            } else {
                return JMessageDecodedBody(content: .custom(CustomContent(raw: Self.nativeCustomType, payload: body.jsonString())),
                                           extras: nil, base: [:])
            }
        default:
            return JMessageDecodedBody(content: .unsupported(UnsupportedContent(vendor: "jmessage", vendorType: msgType, raw: body.jsonString())),
                                       extras: nil, base: [:])
        }
        return JMessageDecodedBody(content: content, extras: extras, base: object)
    }

    private func media(_ object: [String: JSONValue], kind: String) throws -> MediaAttachment {
        guard let mediaID = object["media_id"]?.stringValue, !mediaID.isEmpty else {
            throw IMError(.malformedPayload, "\(kind) body without `media_id`")
        }
        let format = object["format"]?.stringValue
        return MediaAttachment(remoteURL: mediaID, mimeType: format.flatMap(JMessageMediaFormat.mimeType(for:)),
                               size: object["fsize"]?.int64Value,
                               checksum: object["media_crc32"]?.int64Value.map(String.init),
                               width: object["width"]?.int64Value.map { Int($0) }, height: object["height"]?.int64Value.map { Int($0) },
                               durationMs: object["duration"]?.doubleValue.map { Int64(($0 * 1000).rounded()) },
                               fileName: object["fname"]?.stringValue, transferState: .needsDownload)
    }

    // MARK: encode

    /// The `msg_type` and `msg_body` for a content. `base` is the body this content was decoded from
    /// (vendor fields with no neutral home survive); `extras` becomes the body's `extras` when non-nil.
    public func encode(_ content: MessageContent, extras: [String: JSONValue]?, base: [String: JSONValue] = [:]) throws
        -> (msgType: String, body: JSONValue) {
        var body = base
        var extras = extras
        let msgType: String
        switch content {
        case .text(let text):
            msgType = "text"
            body["text"] = .string(text.text)
        case .image(let image):
            msgType = "image"
            try putMedia(image.attachment, into: &body, kind: .image)
        case .gif(let gif):
            msgType = "image"
            try putMedia(gif.attachment, into: &body, kind: .image)
            body["format"] = "gif"
        case .voice(let voice):
            msgType = "voice"
            try putMedia(voice.attachment, into: &body, kind: .voice)
        case .file(let file):
            msgType = "file"
            try putMedia(file.attachment, into: &body, kind: .file)
            body["fname"] = .string(file.name)
        case .location(let location):
            msgType = "location"
            if body["latitude"]?.doubleValue != location.latitude { body["latitude"] = .double(location.latitude) }
            if body["longitude"]?.doubleValue != location.longitude { body["longitude"] = .double(location.longitude) }
            if body["scale"] == nil { body["scale"] = 16 }
            if body["lable"] == nil || location.title != body["lable"]?.stringValue {
                body.removeValue(forKey: "lable")
                body["label"] = .string(location.title ?? location.address ?? "")
            }
            if let address = location.address, location.title != nil {
                extras = (extras ?? [:]).merging([Self.addressKey: .string(address)]) { _, new in new }
            }
        case .video(let video):
            msgType = "video"
            var file = body["video"]?.objectValue ?? [:]
            try putMedia(video.attachment, into: &file, kind: .file)
            if file["fname"] == nil { file["fname"] = .string(video.attachment.fileName ?? "") }
            file.removeValue(forKey: "duration")
            body["video"] = .object(file)
            if let duration = video.attachment.durationMs { body["duration"] = .int((duration + 500) / 1000) }
            if let cover = video.cover {
                var thumb = body["thumb"]?.objectValue ?? [:]
                try putMedia(cover, into: &thumb, kind: .image)
                body["thumb"] = .object(thumb)
            }
        case .custom(let custom) where custom.typeName == Self.nativeCustomType:
            guard let object = try? JSONValue.parse(custom.payload), object.objectValue != nil else {
                throw IMError(.invalidContent, "a \(Self.nativeCustomType) payload must be a JSON object")
            }
            return ("custom", object)
        case .custom(let custom):
            msgType = "custom"
            body[Self.typeKey] = .string(custom.typeName)
            body[Self.payloadKey] = .string(custom.payload)
        case .unsupported(let raw) where raw.vendor == "jmessage":
            guard let object = try? JSONValue.parse(raw.raw) else {
                throw IMError(.invalidContent, "unsupported jmessage payload of type \(raw.vendorType) is not JSON")
            }
            return (raw.vendorType, object)
        case .unsupported(let raw):
            throw IMError(.unsupported, "jmessage cannot carry a \(raw.vendor) \(raw.vendorType) payload", details: ["kind": "unsupported"])
        case .card, .notice, .command:
            throw IMError(.unsupported, "jmessage REST has no form for \(content.kind.rawValue) content", details: ["kind": content.kind.rawValue])
        }
        if let extras { body["extras"] = .object(extras) }
        return (msgType, .object(body))
    }

    private func putMedia(_ attachment: MediaAttachment, into body: inout [String: JSONValue], kind: JMessageMediaFormat.Kind) throws {
        guard let mediaID = attachment.remoteURL, !mediaID.isEmpty else {
            throw IMError(.invalidArgument, "the attachment has no media id or URL yet: upload it first (state \(attachment.transferState.rawValue))")
        }
        body["media_id"] = .string(mediaID)
        if let crc = attachment.checksum.flatMap({ Int64($0) }) { body["media_crc32"] = .int(crc) }
        if body["media_crc32"] == nil { body["media_crc32"] = 0 }
        body["fsize"] = .int(attachment.size ?? body["fsize"]?.int64Value ?? 0)
        switch kind {
        case .image:
            body["width"] = .int(Int64(attachment.width ?? 0))
            body["height"] = .int(Int64(attachment.height ?? 0))
        case .voice:
            body["duration"] = .int(((attachment.durationMs ?? 0) + 500) / 1000)
        case .file:
            if let name = attachment.fileName { body["fname"] = .string(name) }
        }
        if body["format"] == nil, kind != .file {
            body["format"] = .string(JMessageMediaFormat.format(mimeType: attachment.mimeType, url: mediaID, kind: kind))
        }
    }
}
