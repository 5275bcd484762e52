import Foundation
import IMAdapterKit
import IMCore
import IMMapping

/// Pure translation between JMessage `msg_type` + `msg_body` and `MessageContent`
/// (docs/adapters/jmessage.md).
///
/// Types, field names and units come from the mapping tables (`mappings/jmessage.yaml`, the
/// `jmessage:` sections of `mappings/custom/*.yaml`: `media_id` ⇄ URL, `fsize`, `media_crc32` as
/// decimal text, `duration` seconds, `label` (`lable` accepted), the video's nested `video{…}` and
/// `thumb{…}`). On top of the tables this codec handles:
/// - `format` ⇄ the attachment's MIME type (an image whose format is `gif` is a GIF via custom/gif.yaml);
/// - `vendorExtras`: the body's fields with no neutral home (`media_crc32`, `hash`, `scale` …) and its
///   `extras` object (under the key `extras`), so that writing the content back reproduces the body;
///   a location's address travels in extras `imbridge_address`, another vendor's carried fields
///   (`OutgoingMessage.carriedKey`) in extras under that key (and come back in `vendorExtras` under it);
/// - custom bodies: a mapped custom type (by its discriminator), else IMBridge's envelope
///   `{"imbridge_type", "imbridge_payload"}`, else the raw type `jmessage_custom` (the app's own
///   `customDictionary`, byte for byte as canonical JSON);
/// - anything else is `.unsupported`, written back unchanged.
///
/// Notice and command have no JMessage REST form and are refused (`unsupported`).
public struct JMessageContentCodec: ContentCodec {
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

    // MARK: ContentCodec

    /// A `msg_type` + `msg_body`; the quoted reply is read from extras (`imbridge_reply_*`, as
    /// `JMessageCodec` writes it) and leaves the kept extras.
    public func decode(_ wire: WireContent) throws -> CodedContent {
        var coded = try decode(msgType: wire.type, body: .object(wire.body))
        if var extras = coded.vendorExtras[Self.extrasKey]?.objectValue, let replyID = extras[JMessageCodec.replyIDKey]?.stringValue {
            coded.reply = ReplyRef(messageID: MessageID(replyID), sender: extras[JMessageCodec.replySenderKey]?.stringValue.map { UserID($0) },
                                   digest: extras[JMessageCodec.replyDigestKey]?.stringValue ?? "")
            for key in Self.replyKeys { extras.removeValue(forKey: key) }
            coded.vendorExtras[Self.extrasKey] = extras.isEmpty ? nil : .object(extras)
        }
        return coded
    }

    /// The `msg_type` + `msg_body` of a content; a reply goes into extras, mentions are refused
    /// (JMessage REST has none).
    public func encode(_ coded: CodedContent) throws -> WireContent {
        guard coded.mentions.isEmpty else {
            throw IMError(.unsupported, "jmessage REST has no mentions", details: ["feature": Feature.mentions.rawValue])
        }
        var vendorExtras = coded.vendorExtras
        if let reply = coded.reply {
            var extras = vendorExtras[Self.extrasKey]?.objectValue ?? [:]
            extras[JMessageCodec.replyIDKey] = .string(reply.messageID.rawValue)
            if let sender = reply.sender { extras[JMessageCodec.replySenderKey] = .string(sender.rawValue) }
            extras[JMessageCodec.replyDigestKey] = .string(reply.digest)
            vendorExtras[Self.extrasKey] = .object(extras)
        }
        let (msgType, body) = try encode(coded.content, vendorExtras: vendorExtras)
        return WireContent(type: msgType, body: body.objectValue ?? [:])
    }

    static let extrasKey = "extras"
    static let replyKeys = [JMessageCodec.replyIDKey, JMessageCodec.replySenderKey, JMessageCodec.replyDigestKey]

    // MARK: decode

    /// The neutral content of a body; `vendorExtras` holds the body without its neutral fields (the
    /// `extras` object included), for an exact write-back.
    public func decode(msgType: String, body: JSONValue) throws -> CodedContent {
        guard var object = body.objectValue else {
            throw IMError(.malformedPayload, "msg_body of a \(msgType) message is not a JSON object")
        }
        let extras = object.removeValue(forKey: Self.extrasKey).flatMap(\.objectValue)
        func kept(_ fields: [String: JSONValue]) -> [String: JSONValue] {
            var kept = fields
            if let extras { kept[Self.extrasKey] = .object(extras) }
            // Another vendor's carried fields, where that vendor's codec looks for them.
            if let carried = extras?[OutgoingMessage.carriedKey] { kept[OutgoingMessage.carriedKey] = carried }
            return kept
        }
        if msgType == "custom", let typeName = object[Self.typeKey]?.stringValue, let payload = object[Self.payloadKey]?.stringValue {
            return CodedContent(.custom(try registry.decodeOrRaw(typeName: typeName, payload: payload)), vendorExtras: kept(object))
        }
        guard let mapped = try mapping.decode(wire: msgType, body: object, registry: registry) else {
            if msgType == "custom" {
                return CodedContent(.custom(CustomContent(raw: Self.nativeCustomType, payload: body.jsonString())))
            }
            return CodedContent(.unsupported(UnsupportedContent(vendor: "jmessage", vendorType: msgType, raw: body.jsonString())))
        }
        var content = mapped.content
        // The format is looked up only for a content with media (a text's body is not searched for it).
        if content.kind != .custom, var attachment = content.attachments.first, attachment.mimeType == nil,
           let mime = (object["format"] ?? object["video"]?["format"])?.stringValue.flatMap(JMessageMediaFormat.mimeType(for:)) {
            attachment.mimeType = mime
            content = content.replacingAttachments([attachment])
        }
        if case .location(var location) = content, let address = extras?[Self.addressKey]?.stringValue {
            location.address = address
            content = .location(location)
        }
        return CodedContent(content, vendorExtras: kept(object))
    }

    // MARK: encode

    /// The `msg_type` and `msg_body` for a content. `vendorExtras` are what `decode` kept of the body
    /// this content came from (vendor fields with no neutral home survive); its `extras` object becomes
    /// the body's `extras`.
    public func encode(_ content: MessageContent, vendorExtras: [String: JSONValue] = [:]) throws
        -> (msgType: String, body: JSONValue) {
        var kept = vendorExtras
        // (Nothing to take out of none: removing a key hashes it even from an empty dictionary.)
        var extras = kept.isEmpty ? nil : kept.removeValue(forKey: Self.extrasKey)?.objectValue
        if !kept.isEmpty, let carried = kept.removeValue(forKey: OutgoingMessage.carriedKey), content.kind != .custom {
            extras = (extras ?? [:]).merging([OutgoingMessage.carriedKey: carried]) { _, new in new }
        }
        switch content {
        case .custom(let custom) where custom.typeName == Self.nativeCustomType:
            guard let object = try? JSONValue.parse(custom.payload), object.objectValue != nil else {
                throw IMError(.invalidContent, "a \(Self.nativeCustomType) payload must be a JSON object")
            }
            return ("custom", object)
        case .custom(let custom) where !mapping.carries(.custom(custom.typeName)):
            var body = kept
            body[Self.typeKey] = .string(custom.typeName)
            body[Self.payloadKey] = .string(custom.payload)
            if let extras { body[Self.extrasKey] = .object(extras) }
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
        guard let mapped = try mapping.encode(content, base: kept) else {
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
        if let extras { body[Self.extrasKey] = .object(extras) }
        return (mapped.wireType, .object(body))
    }

    private static func putFormat(_ attachment: MediaAttachment, into body: inout [String: JSONValue], kind: JMessageMediaFormat.Kind) {
        guard body["format"] == nil, let mediaID = attachment.remoteURL else { return }
        body["format"] = .string(JMessageMediaFormat.format(mimeType: attachment.mimeType, url: mediaID, kind: kind))
    }
}
