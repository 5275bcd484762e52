import IMCore
import IMMapping

/// Pure translation between RongCloud contents (`objectName` + `content` JSON text) and the neutral
/// `MessageContent` (vendor doc §4). No I/O.
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
public struct RongCloudContentCodec: Sendable {
    public let registry: ContentRegistry
    /// Neutral custom `contentType` → RongCloud objectName, for opaque app types.
    public let objectNames: [String: String]
    public let mapping: VendorTable

    static let vendor = "rongcloud"

    public init(registry: ContentRegistry = ContentRegistry(), objectNames: [String: String] = [:],
                mapping: VendorTable = MappingSet.shipped.table("rongcloud")) {
        self.registry = registry
        self.objectNames = objectNames
        self.mapping = mapping
    }

    // MARK: decoding

    /// Throws `malformed_payload` when a built-in type's content is not its JSON shape.
    public func decode(objectName: String, content text: String) throws -> RongCloudContent {
        if let typeName = objectNames.first(where: { $0.value == objectName })?.key {
            return RongCloudContent(content: .custom(rawOrTyped(typeName, text)))
        }
        guard objectName == RCObjectName.recallNotification || mapping.knows(wire: objectName) else {
            if RCObjectName.isBuiltIn(objectName) {
                return RongCloudContent(content: .unsupported(UnsupportedContent(vendor: Self.vendor, vendorType: objectName, raw: text)))
            }
            return RongCloudContent(content: .custom(rawOrTyped(objectName, text)))
        }
        guard case .object(let object) = try? JSONValue.parse(text) else {
            if !RCObjectName.isBuiltIn(objectName) { return RongCloudContent(content: .custom(rawOrTyped(objectName, text))) }
            throw IMError(.malformedPayload, "\(objectName) content is not a JSON object")
        }
        var fields = ContentFields(object)
        let mentions = Self.decodeMentions(&fields)
        if objectName == RCObjectName.recallNotification {
            // Everything stays in the leftovers: the notice is written back exactly as received.
            let text = object["operatorId"]?.stringValue.map { "\($0) 撤回了一条消息" } ?? "撤回了一条消息"
            return RongCloudContent(content: .notice(NoticeContent(text: text, noticeType: RCObjectName.recallNotification)),
                                    mentions: mentions, leftovers: fields.remaining)
        }
        let mapped: MappedContent?
        do {
            mapped = try mapping.decode(wire: objectName, body: fields.remaining, registry: registry)
        } catch where !RCObjectName.isBuiltIn(objectName) {
            // An app type that does not match its mapping still arrives, raw (refusing it would only
            // make the vendor redeliver it forever).
            return RongCloudContent(content: .custom(CustomContent(raw: objectName, payload: text)))
        }
        guard let mapped else {
            return RongCloudContent(content: .custom(rawOrTyped(objectName, text)))
        }
        fields.remaining = mapped.remaining
        var reply: ReplyRef?
        if objectName == RCObjectName.reference { reply = try decodeReference(&fields) }
        return RongCloudContent(content: mapped.content, mentions: mentions, reply: reply, leftovers: fields.remaining)
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
