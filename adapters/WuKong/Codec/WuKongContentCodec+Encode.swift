import Foundation
import IMAdapterKit
import IMCore
import IMMapping

extension WuKongContentCodec {
    /// `ContentCodec`: the payload's `type` as a string and its other keys as the body.
    public func encode(_ content: CodedContent) throws -> WireContent {
        var object = try encode(content.content, mentions: content.mentions, reply: content.reply, vendorExtras: content.vendorExtras)
        let type = object.removeValue(forKey: "type")
        guard let number = type?.int64Value else {
            throw IMError(.malformedPayload, "stored WuKong payload has no numeric `type`")
        }
        return WireContent(type: String(number), body: object)
    }

    /// The payload JSON object for a content plus the common keys; `vendorExtras` are a message's
    /// (only `entities`, `payload_fields`, `reply`, the origin key and WuKong's carried fields are read).
    /// Throws `unsupported` for another vendor's unsupported payload.
    public func encode(_ content: MessageContent, mentions: Mentions = Mentions(), reply: ReplyRef? = nil,
                       vendorExtras: [String: JSONValue] = [:]) throws -> [String: JSONValue] {
        var object: [String: JSONValue]
        switch content {
        case .unsupported(let unsupported):
            guard unsupported.vendor == "wukong" else {
                throw IMError(.unsupported, "a \(unsupported.vendor) '\(unsupported.vendorType)' payload cannot be written to WuKong")
            }
            guard case .object(let raw) = try JSONValue.parse(unsupported.raw) else {
                throw IMError(.malformedPayload, "stored WuKong payload is not a JSON object")
            }
            return raw
        case .custom(let custom) where customTypes.values.contains(custom.typeName):
            let type = customTypes.filter { $0.value == custom.typeName }.keys.min()!
            guard case .object(let fields)? = custom.json else {
                throw IMError(.invalidContent, "payload of '\(custom.typeName)' must be a JSON object to travel on WuKong")
            }
            object = fields
            object["type"] = .int(Int64(type))
        case .custom(let custom) where !mapping.carries(.custom(custom.typeName)):
            object = ["type": .int(Int64(WKContentType.imbridgeCustom)), "content_type": .string(custom.typeName),
                      "data": .string(custom.payload)]
        default:
            if let carried = vendorExtras[OutgoingMessage.carriedKey]?[Self.vendor], let carriedType = carried["type"]?.int64Value,
               let mapped = try mapping.encode(content, throughWire: String(carriedType), base: carried["body"]?.objectValue ?? [:]) {
                object = mapped.body
                object["type"] = .int(carriedType)
                if let origin = vendorExtras[OutgoingMessage.originKey] { object[OutgoingMessage.originKey] = origin }
                break
            }
            guard var mapped = try mapping.encode(content), let type = Int64(mapped.wireType) else {
                throw IMError(.unsupported, "the WuKong mapping has no type for \(content.kind.rawValue) content",
                              details: ["kind": content.kind.rawValue])
            }
            // The mapped keys win over kept ones; without kept ones the mapped body is taken as it is
            // (moved out, so that adding `type` changes it in place: the table left room for it).
            if let kept = vendorExtras["payload_fields"]?.objectValue {
                object = kept.merging(mapped.body) { _, mapped in mapped }
            } else {
                object = mapped.takeBody()
            }
            object["type"] = .int(type)
            if let entities = vendorExtras["entities"] { object["entities"] = entities }
            if let origin = vendorExtras[OutgoingMessage.originKey] { object[OutgoingMessage.originKey] = origin }
        }
        if !mentions.isEmpty {
            var mention: [String: JSONValue] = [:]
            if mentions.all { mention["all"] = 1 }
            if !mentions.users.isEmpty { mention["uids"] = .array(mentions.users.map { .string($0.rawValue) }) }
            object["mention"] = .object(mention)
        }
        if let reply {
            if let raw = vendorExtras["reply"], raw["message_id"]?.stringValue == reply.messageID.rawValue {
                object["reply"] = raw
            } else {
                object["reply"] = Self.encodeReply(reply)
            }
        }
        return object
    }

    /// The payload bytes (compact JSON, sorted keys); an unsupported WuKong payload is returned as received.
    public func encodePayload(_ content: MessageContent, mentions: Mentions = Mentions(), reply: ReplyRef? = nil,
                              vendorExtras: [String: JSONValue] = [:]) throws -> Data {
        if case .unsupported(let unsupported) = content, unsupported.vendor == "wukong", mentions.isEmpty, reply == nil {
            return Data(unsupported.raw.utf8)
        }
        return JSONValue.object(try encode(content, mentions: mentions, reply: reply, vendorExtras: vendorExtras)).jsonData()
    }

    /// The quote object IMBridge writes when it has only a `ReplyRef` (the quoted payload is the digest as text).
    static func encodeReply(_ reply: ReplyRef) -> JSONValue {
        var object: [String: JSONValue] = [
            "message_id": .string(reply.messageID.rawValue),
            "payload": ["type": 1, "content": .string(reply.digest)],
        ]
        if let sender = reply.sender { object["from_uid"] = .string(sender.rawValue) }
        return .object(object)
    }
}
