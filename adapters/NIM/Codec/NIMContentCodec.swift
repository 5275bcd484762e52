import Foundation
import IMCore
import IMAdapterKit
import IMMapping

/// Pure translation between a NIM `(type, body)` pair and a neutral `MessageContent` (docs/adapters/nim.md).
///
/// Types, field names and units come from the mapping tables (`mappings/nim.yaml`, the `nim:` sections
/// of `mappings/custom/*.yaml`). On top of the tables this codec handles:
/// - `ext` ⇄ the attachment's MIME type (`NIMMediaTypes`), with a default per kind when encoding;
/// - type 100: a body matching a custom mapping (`{"type": …, "data": {…}}` or the NIM custom-message guide's bare
///   attachment) becomes that type; any other body goes through `NIMCustomFormat` + `ContentRegistry`;
/// - 5 notification, 11 robot and unknown types are `.unsupported` (vendor "nim", raw body).
///
/// Encoding never re-serialises an opaque custom payload or an unsupported body, so those round-trip
/// byte for byte; for the other types `NIMMessageCodec` keeps the original body when re-encoding would differ.
public struct NIMContentCodec: Sendable {
    public let registry: ContentRegistry
    public let customFormat: NIMCustomFormat
    public let mapping: VendorTable

    public init(registry: ContentRegistry = ContentRegistry(), customFormat: NIMCustomFormat = NIMCustomFormat(),
                mapping: VendorTable = MappingSet.shipped.table("nim")) {
        self.registry = registry
        self.customFormat = customFormat
        self.mapping = mapping
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
        guard let mapped = try mapping.decode(wire: String(type), body: object, registry: registry) else {
            return .unsupported(UnsupportedContent(vendor: "nim", vendorType: String(type), raw: body))
        }
        let mime = NIMLenient.string(object["ext"]).flatMap(NIMMediaTypes.mime(forExtension:))
        guard let mime, var attachment = mapped.content.attachments.first, attachment.mimeType == nil else { return mapped.content }
        attachment.mimeType = mime
        return mapped.content.replacingAttachments([attachment])
    }

    func decodeCustom(_ body: String) throws -> MessageContent {
        let (typeName, payload) = customFormat.split(body)
        if customFormat.aliases.values.contains(typeName) {
            return .custom(try registry.decodeOrRaw(typeName: typeName, payload: payload))
        }
        if let object = (try? JSONValue.parse(body))?.objectValue,
           let mapped = try mapping.decode(wire: String(NIMMessageType.custom.rawValue), body: object, registry: registry) {
            return mapped.content
        }
        return .custom(try registry.decodeOrRaw(typeName: typeName, payload: payload))
    }

    // MARK: encode

    /// Encodes a content for `/msg/sendMsg.action`. Media must have a remote URL (upload first);
    /// commands are not messages (they go out as custom system notifications) and unsupported contents
    /// of another vendor cannot be written: both throw `unsupported`.
    public func encode(_ content: MessageContent) throws -> (type: Int, body: String) {
        switch content {
        case .custom(let custom) where customFormat.aliases.values.contains(custom.typeName)
            || !mapping.carries(.custom(custom.typeName)):
            return (100, customFormat.join(typeName: custom.typeName, payload: custom.payload))
        case .unsupported(let unsupported):
            guard unsupported.vendor == "nim", let type = Int(unsupported.vendorType) else {
                throw IMError(.unsupported, "a \(unsupported.vendor) '\(unsupported.vendorType)' payload cannot be written to NIM")
            }
            return (type, unsupported.raw)
        case .command:
            throw IMError(.unsupported, "commands are sent as NIM custom system notifications, not messages")
        default:
            if content.kind != .custom, let attachment = content.attachments.first, (attachment.remoteURL ?? "").isEmpty {
                throw IMError(.invalidContent, "the \(content.kind.rawValue) attachment has no URL yet; upload it first",
                              details: ["transfer_state": attachment.transferState.rawValue])
            }
            guard let mapped = try mapping.encode(content), let type = Int(mapped.wireType) else {
                throw IMError(.unsupported, "the NIM mapping has no type for \(content.kind.rawValue) content",
                              details: ["kind": content.kind.rawValue])
            }
            var body = mapped.body
            if content.kind != .custom, body["ext"] == nil, let attachment = content.attachments.first,
               let ext = attachment.mimeType.flatMap(NIMMediaTypes.fileExtension(forMIME:))
                ?? attachment.fileName.flatMap(NIMMediaTypes.fileExtension(ofName:))
                ?? Self.defaultExtension(content) {
                body["ext"] = .string(ext)
            }
            return (type, JSONValue.object(body).jsonString())
        }
    }

    static func defaultExtension(_ content: MessageContent) -> String? {
        switch content {
        case .image: "jpg"
        case .gif: "gif"
        case .voice: "aac"
        case .video: "mp4"
        case .file(let file): NIMMediaTypes.fileExtension(ofName: file.name)
        default: nil
        }
    }
}

/// The shared content-codec protocol over `decode(type:body:)` / `encode(_:)`.
///
/// `WireContent.type` is the decimal type number and `body` the body's JSON object (NIM bodies are JSON
/// text; this codec reads them with sorted keys). When writing the decoded content back would not give
/// the same type and fields, the body text rides in `vendorExtras` under `nim_body`
/// (`NIMMessageCodec.bodyHintKey`, the key it has in `Message.vendorExtras` too) and `encode` reuses it
/// as long as it still decodes to exactly the content given. Mentions and the quoted reply travel in a
/// message's `ext`, not in its body (`NIMMessageCodec`): this codec leaves them empty and ignores them.
extension NIMContentCodec: ContentCodec {
    public func decode(_ wire: WireContent) throws -> CodedContent {
        guard let type = Int(wire.type) else {
            throw IMError(.malformedPayload, "NIM message types are numbers; '\(wire.type)' is not")
        }
        let body = JSONValue.object(wire.body).jsonString()
        let content = try decode(type: type, body: body)
        var vendorExtras: [String: JSONValue] = [:]
        let again = try? encode(content)
        if again?.type != type || again.flatMap({ (try? JSONValue.parse($0.body))?.objectValue }) != wire.body {
            vendorExtras[NIMMessageCodec.bodyHintKey] = .string(body)
        }
        if let carried = wire.body[OutgoingMessage.carriedKey] { vendorExtras[OutgoingMessage.carriedKey] = carried }
        return CodedContent(content, vendorExtras: vendorExtras)
    }

    public func encode(_ coded: CodedContent) throws -> WireContent {
        let (type, body) = try NIMMessageCodec(content: self).encodeBody(coded.content, hint: coded.vendorExtras[NIMMessageCodec.bodyHintKey]?.stringValue,
                                                                         carried: coded.vendorExtras[OutgoingMessage.carriedKey])
        guard let object = (try? JSONValue.parse(body))?.objectValue else {
            throw IMError(.unsupported, "the NIM type \(type) body is not a JSON object: \(body.prefix(200))")
        }
        return WireContent(type: String(type), body: object)
    }
}
