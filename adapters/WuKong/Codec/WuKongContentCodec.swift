import Foundation
import IMAdapterKit
import IMCore
import IMMapping

/// Pure translation of WuKong payload JSON (`{"type":N,…}`) ⇄ neutral content.
///
/// Rules:
/// - Built-in types and app types come from the mapping tables (`mappings/wukong.yaml` and the
///   `wukong:` sections of `mappings/custom/*.yaml`: field names, units, defaults). The `custom_types`
///   setting (and 11, 12, 13 by default) names opaque app types: `.custom` through the
///   `ContentRegistry` with the payload = the JSON without `type`/`mention`/`reply`, sorted keys.
///   Custom types with neither travel as type 10000 `{"content_type":name,"data":"<payload text>"}`,
///   so their payload text survives byte for byte. Anything else is `.unsupported` keeping the
///   received payload text, written back byte for byte.
/// - Common keys: `mention` ⇄ `Mentions`, `reply` ⇄ `ReplyRef`; `entities` and any key the mapping
///   does not name are kept in `vendorExtras` (`entities`, `payload_fields`, `reply`) and written back,
///   so wire → neutral → wire is exact.
/// - The WuKongIM custom-message guide's app types 102 (location with title), 103 (contact card with phone, email) and 104
///   (image with thumbnail and sizes) are `secondary` entries of the table: their type and whole body
///   ride in `vendorExtras[OutgoingMessage.carriedKey]["wukong"]`, which the other adapters carry, and a
///   content written back with them is written as that type over that body (its neutral values win).
public struct WuKongContentCodec: ContentCodec {
    public let registry: ContentRegistry
    /// WuKong type number → registry content-type name, for opaque app types.
    public let customTypes: [Int: String]
    /// The compiled WuKong mapping table.
    public let mapping: VendorTable
    /// The smallest to the largest number of `customTypes` (nil when none): a type outside is not
    /// looked up there (a built-in type's payload is decoded without hashing its number).
    private let customTypeRange: ClosedRange<Int>?
    /// The adapter name: the key of WuKong's part of `OutgoingMessage.carriedKey`.
    static let vendor = "wukong"

    public init(registry: ContentRegistry = ContentRegistry(), customTypes: [Int: String] = [:],
                mapping: VendorTable = MappingSet.shipped.table("wukong")) {
        self.registry = registry
        let types = WKContentType.defaultCustomTypes.merging(customTypes) { _, app in app }
        self.customTypes = types
        self.mapping = mapping
        customTypeRange = types.keys.min().map { $0...types.keys.max()! }
    }

    // MARK: decoding

    /// `ContentCodec`: the payload's `type` as a string and its other keys as the body. The
    /// `vendorExtras` of the result are `entities`, `payload_fields` and `reply` (the raw quote, when
    /// it holds more than `ReplyRef`).
    public func decode(_ wire: WireContent) throws -> CodedContent {
        guard let type = Int64(wire.type) else {
            throw IMError(.malformedPayload, "WuKong payload type '\(wire.type)' is not a number")
        }
        var object = wire.body
        object["type"] = .int(type)
        return try decode(object, rawPayload: nil)
    }

    /// The payload bytes as WuKongIM carries them (base64-decoded).
    public func decode(payload: Data) throws -> CodedContent {
        guard case .object(let object) = try JSONValue.parse(payload) else {
            throw IMError(.malformedPayload, "WuKong payload is not a JSON object")
        }
        return try decode(object, rawPayload: payload)
    }

    /// The payload JSON object, `type` included.
    public func decode(_ object: [String: JSONValue], rawText: String? = nil) throws -> CodedContent {
        try decode(object, rawPayload: rawText.map { Data($0.utf8) })
    }

    /// `rawPayload` is only turned into text for an unsupported type (kept byte for byte).
    /// `object` is consumed: a parsed payload's dictionary has its common keys taken out in place,
    /// not in a copy.
    func decode(_ object: consuming [String: JSONValue], rawPayload: Data?) throws -> CodedContent {
        var rest = object
        let typeJSON = rest.removeValue(forKey: "type")
        guard let type = typeJSON?.int64Value.map(Int.init) else {
            throw IMError(.malformedPayload, "WuKong payload has no numeric `type`")
        }
        let mentionJSON = rest.removeValue(forKey: "mention")
        let mentions = Self.decodeMentions(mentionJSON)
        let replyJSON = rest.removeValue(forKey: "reply")
        var vendorExtras: [String: JSONValue] = [:]
        let reply = try replyJSON.flatMap { try decodeReply($0, vendorExtras: &vendorExtras) }
        let content: MessageContent
        if type == WKContentType.imbridgeCustom, let name = rest["content_type"]?.stringValue,
           let data = rest["data"]?.stringValue {
            content = .custom(try registry.decodeOrRaw(typeName: name, payload: data))
            rest["content_type"] = nil
            rest["data"] = nil
        } else if customTypeRange?.contains(type) == true, let name = customTypes[type] {
            content = .custom(try registry.decodeOrRaw(typeName: name, payload: JSONValue.object(rest).jsonString()))
            rest = [:]
        } else if let mapped = try mapping.decode(wire: String(type), body: rest, registry: registry) {
            content = mapped.content
            if mapped.entry.secondary {
                // An app type of the WuKongIM custom-message guide (102, 103, 104): the neutral kind alone would come back as the
                // built-in type, so the type and the whole body travel as carried fields.
                vendorExtras[OutgoingMessage.carriedKey] = [Self.vendor: ["type": .int(Int64(type)), "body": .object(rest)]]
                return CodedContent(content, mentions: mentions, reply: reply, vendorExtras: vendorExtras)
            }
            rest = mapped.remaining
            if !rest.isEmpty, let entities = rest.removeValue(forKey: "entities") { vendorExtras["entities"] = entities }
        } else {
            // The object as received: `rest` has not changed since its common keys were taken out.
            var received = rest
            received["type"] = typeJSON
            received["mention"] = mentionJSON
            received["reply"] = replyJSON
            content = .unsupported(UnsupportedContent(vendor: "wukong", vendorType: String(type),
                                                      raw: rawPayload.map { String(decoding: $0, as: UTF8.self) }
                                                        ?? JSONValue.object(received).jsonString()))
            return CodedContent(content, mentions: mentions, reply: reply)
        }
        if !rest.isEmpty { vendorExtras["payload_fields"] = .object(rest) }
        return CodedContent(content, mentions: mentions, reply: reply, vendorExtras: vendorExtras)
    }

    static func decodeMentions(_ value: JSONValue?) -> Mentions {
        guard let value else { return Mentions() }
        let all = (value["all"]?.int64Value ?? 0) != 0
        let uids = (value["uids"]?.arrayValue ?? []).compactMap(\.stringValue).map(UserID.init)
        return Mentions(all: all, users: uids)
    }

    private func decodeReply(_ value: JSONValue, vendorExtras: inout [String: JSONValue]) throws -> ReplyRef? {
        guard let id = value["message_id"]?.stringValue, !id.isEmpty else { return nil }
        var digest = ""
        if case .object(let quoted)? = value["payload"] {
            digest = (try? decode(quoted))?.content.digest ?? ""
        } else if let text = value["payload"]?.stringValue, let data = Data(base64Encoded: text) {
            digest = (try? decode(payload: data))?.content.digest ?? ""
        }
        let sender = value["from_uid"]?.stringValue.flatMap { $0.isEmpty ? nil : UserID($0) }
        let ref = ReplyRef(messageID: MessageID(id), sender: sender, digest: digest)
        if Self.encodeReply(ref) != value { vendorExtras["reply"] = value }
        return ref
    }
}
