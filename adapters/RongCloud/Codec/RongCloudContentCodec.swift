import IMAdapterKit
import IMCore
import IMMapping

/// Pure translation between RongCloud contents (`objectName` + `content` JSON text) and the neutral
/// `MessageContent` (docs/adapters/rongcloud.md). No I/O.
///
/// Mapping: the tables in `mappings/rongcloud.yaml` and the `rongcloud:` sections of
/// `mappings/custom/*.yaml` (objectName, field names, seconds ⇄ milliseconds, the inline-AMR
/// `RC:VcMsg` as a `data:audio/amr;base64,` URL …). On top of the tables this codec handles:
/// - `mentionedInfo` (any type): `type` 1 = @all, 2 = the users in `userIdList`;
/// - `RC:ReferenceMsg` ⇄ text with a `ReplyRef` (the quoted `referMsg` + `objName` give the digest);
/// - `RC:RcNtf` (recall notice) ⇄ notice, written back exactly as received;
/// - `objectNames` (the `object_names` setting): opaque app types whose content text is the payload;
/// - any other objectName without the `RC:` prefix: an app type, typed through the `ContentRegistry`
///   when registered and valid, raw `.custom` (payload kept byte for byte) otherwise;
/// - any other `RC:` type (`RC:CombineMsg`, `RC:GrpNtf`, …) is `.unsupported` with the exact content
///   text, written back unchanged.
///
/// `vendorExtras`: a decode keeps the content JSON fields the neutral model has no home for (`user`,
/// `extra`, `mentionedInfo.mentionedContent`, a quote's `referMsg`, …) as one object under
/// `vendorExtrasKey`, the shape `Message.vendorExtras` carries them in; encoding merges them back, so
/// RongCloud → neutral → RongCloud yields the same JSON value. Their presence marks content that came
/// from RongCloud: fields the neutral model does not carry (a file's `type`) are derived only without it.
/// Another vendor's carried fields (`OutgoingMessage.carriedKey`) are written as a content key of that
/// name and read back into `vendorExtras` under it.
public struct RongCloudContentCodec: ContentCodec {
    public let registry: ContentRegistry
    /// Neutral custom `contentType` → RongCloud objectName, for opaque app types.
    public let objectNames: [String: String]
    public let mapping: VendorTable

    static let vendor = "rongcloud"

    /// The `vendorExtras` key (of `CodedContent` and `Message`) holding the kept content fields.
    public static let vendorExtrasKey = "rongcloud.content"

    public init(registry: ContentRegistry = ContentRegistry(), objectNames: [String: String] = [:],
                mapping: VendorTable = MappingSet.shipped.table("rongcloud")) {
        self.registry = registry
        self.objectNames = objectNames
        self.mapping = mapping
    }

    // MARK: decoding

    /// `ContentCodec`: the body is the `content` JSON object.
    public func decode(_ wire: WireContent) throws -> CodedContent {
        try decode(objectName: wire.type, content: JSONValue.object(wire.body).jsonString())
    }

    /// Decodes a `content` text as received (custom types may carry any text). Throws
    /// `malformed_payload` when a built-in type's content is not its JSON shape.
    public func decode(objectName: String, content text: String) throws -> CodedContent {
        var decoded = try decodeContent(objectName: objectName, content: text)
        // Nothing kept, nothing to wrap (the hot path allocates nothing more) — except for a file, where
        // the wrapper marks RongCloud as the origin (its `type` is derived only for files from elsewhere).
        if decoded.vendorExtras.isEmpty && decoded.content.kind != .file { return decoded }
        // Another vendor's carried fields are not RongCloud's: they stay beside the kept fields.
        let carried = decoded.vendorExtras.removeValue(forKey: OutgoingMessage.carriedKey)
        decoded.vendorExtras = [Self.vendorExtrasKey: .object(decoded.vendorExtras)]
        if let carried { decoded.vendorExtras[OutgoingMessage.carriedKey] = carried }
        return decoded
    }

    /// The decoded content with the kept fields as a flat object (wrapped by `decode`).
    private func decodeContent(objectName: String, content text: String) throws -> CodedContent {
        if let typeName = objectNames.first(where: { $0.value == objectName })?.key {
            return CodedContent(.custom(rawOrTyped(typeName, text)))
        }
        guard objectName == RCObjectName.recallNotification || mapping.knows(wire: objectName) else {
            if RCObjectName.isBuiltIn(objectName) {
                return CodedContent(.unsupported(UnsupportedContent(vendor: Self.vendor, vendorType: objectName, raw: text)))
            }
            return CodedContent(.custom(rawOrTyped(objectName, text)))
        }
        guard case .object(let object) = try? JSONValue.parse(text) else {
            if !RCObjectName.isBuiltIn(objectName) { return CodedContent(.custom(rawOrTyped(objectName, text))) }
            throw IMError(.malformedPayload, "\(objectName) content is not a JSON object")
        }
        var fields = ContentFields(object)
        let mentions = Self.decodeMentions(&fields)
        if objectName == RCObjectName.recallNotification {
            // Everything stays in vendorExtras: the notice is written back exactly as received.
            let text = object["operatorId"]?.stringValue.map { "\($0) 撤回了一条消息" } ?? "撤回了一条消息"
            return CodedContent(.notice(NoticeContent(text: text, noticeType: RCObjectName.recallNotification)),
                                    mentions: mentions, vendorExtras: fields.remaining)
        }
        let mapped: MappedContent?
        do {
            mapped = try mapping.decode(wire: objectName, body: fields.remaining, registry: registry)
        } catch where !RCObjectName.isBuiltIn(objectName) {
            // An app type that does not match its mapping still arrives, raw (refusing it would only
            // make the vendor redeliver it forever).
            return CodedContent(.custom(CustomContent(raw: objectName, payload: text)))
        }
        guard let mapped else {
            return CodedContent(.custom(rawOrTyped(objectName, text)))
        }
        fields.remaining = mapped.remaining
        var reply: ReplyRef?
        if objectName == RCObjectName.reference { reply = try decodeReference(&fields) }
        return CodedContent(mapped.content, mentions: mentions, reply: reply, vendorExtras: fields.remaining)
    }

    /// A registered type whose payload does not decode or validate stays raw.
    private func rawOrTyped(_ typeName: String, _ text: String) -> CustomContent {
        (try? registry.decode(typeName: typeName, payload: text)) ?? CustomContent(raw: typeName, payload: text)
    }

    private static func decodeMentions(_ fields: inout ContentFields) -> Mentions {
        guard case .object(var info)? = fields.take("mentionedInfo") else { return Mentions() }
        let type = info.removeValue(forKey: "type")?.int64Value ?? 0
        let users = (info.removeValue(forKey: "userIdList")?.arrayValue ?? []).compactMap(\.stringValue).map(UserID.init)
        if !info.isEmpty { fields.remaining["mentionedInfo"] = .object(info) }
        return Mentions(all: type == 1, users: type == 1 ? [] : users)
    }

    /// `referMsgUid`, `referMsgUserId`; the quoted `referMsg` + `objName` stay in vendorExtras and give the digest.
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
