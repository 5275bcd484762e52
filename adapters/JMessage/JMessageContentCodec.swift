import Foundation
import IMCore
import IMMapping

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
/// Types, field names and units come from the mapping tables (`mappings/jmessage.yaml`, the
/// `jmessage:` sections of `mappings/custom/*.yaml`: `media_id` ⇄ URL, `fsize`, `media_crc32` as
/// decimal text, `duration` seconds, `label` (`lable` accepted), the video's nested `video{…}` and
/// `thumb{…}`). On top of the tables this codec handles:
/// - `format` ⇄ the attachment's MIME type (an image whose format is `gif` is a GIF via custom/gif.yaml);
/// - `extras` (kept apart), a location's address in extras `imbridge_address`;
/// - custom bodies: a mapped custom type (by its discriminator), else IMBridge's envelope
///   `{"imbridge_type", "imbridge_payload"}`, else the raw type `jmessage_custom` (the app's own
///   `customDictionary`, byte for byte as canonical JSON);
/// - anything else is `.unsupported`, written back unchanged.
///
/// Notice and command have no JMessage REST form and are refused (`unsupported`).
public struct JMessageContentCodec: Sendable {
    /// The raw type name for a custom body that is not one of ours (a JMessage app's `customDictionary`).
    public static let nativeCustomType = "jmessage_custom"
    static let typeKey = "imbridge_type"
    static let payloadKey = "imbridge_payload"
    static let addressKey = "imbridge_address"

    public let registry: ContentRegistry
    public let mapping: VendorTable
    public init(registry: ContentRegistry = ContentRegistry(), mapping: VendorTable = MappingSet.shipped.table("jmessage")) {
        self.registry = registry
        self.mapping = mapping
    }

    // MARK: decode

    public func decode(msgType: String, body: JSONValue) throws -> JMessageDecodedBody {
        guard var object = body.objectValue else {
            throw IMError(.malformedPayload, "msg_body of a \(msgType) message is not a JSON object")
        }
        let extras = object.removeValue(forKey: "extras").flatMap(\.objectValue)
        if msgType == "custom", let typeName = object[Self.typeKey]?.stringValue, let payload = object[Self.payloadKey]?.stringValue {
            return JMessageDecodedBody(content: .custom(try registry.decode(typeName: typeName, payload: payload)), extras: extras, base: object)
        }
        guard let mapped = try mapping.decode(wire: msgType, body: object, registry: registry) else {
            if msgType == "custom" {
                return JMessageDecodedBody(content: .custom(CustomContent(raw: Self.nativeCustomType, payload: body.jsonString())),
                                           extras: nil, base: [:])
            }
            return JMessageDecodedBody(content: .unsupported(UnsupportedContent(vendor: "jmessage", vendorType: msgType, raw: body.jsonString())),
                                       extras: nil, base: [:])
        }
        var content = mapped.content
        let format = (object["format"] ?? object["video"]?["format"])?.stringValue
        if let mime = format.flatMap(JMessageMediaFormat.mimeType(for:)), var attachment = content.attachments.first,
           attachment.mimeType == nil, content.kind != .custom {
            attachment.mimeType = mime
            content = content.replacingAttachments([attachment])
        }
        if case .location(var location) = content, let address = extras?[Self.addressKey]?.stringValue {
            location.address = address
            content = .location(location)
        }
        return JMessageDecodedBody(content: content, extras: extras, base: object)
    }

    // MARK: encode

    /// The `msg_type` and `msg_body` for a content. `base` is the body this content was decoded from
    /// (vendor fields with no neutral home survive); `extras` becomes the body's `extras` when non-nil.
    public func encode(_ content: MessageContent, extras: [String: JSONValue]?, base: [String: JSONValue] = [:]) throws
        -> (msgType: String, body: JSONValue) {
        var extras = extras
        switch content {
        case .custom(let custom) where custom.typeName == Self.nativeCustomType:
            guard let object = try? JSONValue.parse(custom.payload), object.objectValue != nil else {
                throw IMError(.invalidContent, "a \(Self.nativeCustomType) payload must be a JSON object")
            }
            return ("custom", object)
        case .custom(let custom) where !mapping.carries(.custom(custom.typeName)):
            var body = base
            body[Self.typeKey] = .string(custom.typeName)
            body[Self.payloadKey] = .string(custom.payload)
            if let extras { body["extras"] = .object(extras) }
            return ("custom", .object(body))
        case .unsupported(let raw) where raw.vendor == "jmessage":
            guard let object = try? JSONValue.parse(raw.raw) else {
                throw IMError(.invalidContent, "unsupported jmessage payload of type \(raw.vendorType) is not JSON")
            }
            return (raw.vendorType, object)
        case .unsupported(let raw):
            throw IMError(.unsupported, "jmessage cannot carry a \(raw.vendor) \(raw.vendorType) payload", details: ["kind": "unsupported"])
        case .notice, .command:
            throw IMError(.unsupported, "jmessage REST has no form for \(content.kind.rawValue) content", details: ["kind": content.kind.rawValue])
        default:
            break
        }
        if content.kind != .custom, let attachment = content.attachments.first, (attachment.remoteURL ?? "").isEmpty {
            throw IMError(.invalidArgument, "the attachment has no media id or URL yet: upload it first (state \(attachment.transferState.rawValue))")
        }
        guard let mapped = try mapping.encode(content, base: base) else {
            throw IMError(.unsupported, "the JMessage mapping has no msg_type for \(content.kind.rawValue) content",
                          details: ["kind": content.kind.rawValue])
        }
        var body = mapped.body
        switch content {
        case .image(let image): Self.putFormat(image.attachment, into: &body, kind: .image)
        case .gif(let gif): Self.putFormat(gif.attachment, into: &body, kind: .image)
        case .voice(let voice): Self.putFormat(voice.attachment, into: &body, kind: .voice)
        case .video(let video):
            if let cover = video.cover, var thumb = body["thumb"]?.objectValue {
                Self.putFormat(cover, into: &thumb, kind: .image)
                body["thumb"] = .object(thumb)
            }
        case .location(let location):
            if let address = location.address, location.title != nil {
                extras = (extras ?? [:]).merging([Self.addressKey: .string(address)]) { _, new in new }
            }
        default:
            break
        }
        if let extras { body["extras"] = .object(extras) }
        return (mapped.wireType, .object(body))
    }

    private static func putFormat(_ attachment: MediaAttachment, into body: inout [String: JSONValue], kind: JMessageMediaFormat.Kind) {
        guard body["format"] == nil, let mediaID = attachment.remoteURL else { return }
        body["format"] = .string(JMessageMediaFormat.format(mimeType: attachment.mimeType, url: mediaID, kind: kind))
    }
}
