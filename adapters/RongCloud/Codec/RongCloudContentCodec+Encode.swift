import IMAdapterKit
import IMCore
import IMMapping

extension RongCloudContentCodec {
    /// `ContentCodec`: the `content` text of the encoded body as a JSON object (custom types whose
    /// payload is not a JSON object are refused with `unsupported` here; `encode(_:mentions:reply:vendorExtras:)`
    /// writes them as they are).
    public func encode(_ coded: CodedContent) throws -> WireContent {
        let wire = try encode(coded.content, mentions: coded.mentions, reply: coded.reply, vendorExtras: coded.vendorExtras)
        guard case .object(let body)? = try? JSONValue.parse(wire.content) else {
            throw IMError(.unsupported, "\(wire.objectName) content is not a JSON object", details: ["kind": coded.content.kind.rawValue])
        }
        return WireContent(type: wire.objectName, body: body)
    }

    /// Encodes a neutral content for the wire (see the type's mapping).
    ///
    /// - `vendorExtras` are a message's or a decode's (`CodedContent.vendorExtras`): the fields kept
    ///   under `vendorExtrasKey` by a RongCloud decode (absent for content from elsewhere) are merged
    ///   back under the mapped fields, so a round trip is exact.
    /// - Media must already have a remote URL: the Server API has no upload, so an attachment in
    ///   `needsUpload` is refused with `invalid_argument`.
    /// - A reply is carried natively only on text (`RC:ReferenceMsg` quotes with a text body); other
    ///   contents are sent without the quote.
    /// - `.unsupported` from another vendor cannot be carried and is refused with `unsupported`.
    public func encode(_ content: MessageContent, mentions: Mentions = Mentions(), reply: ReplyRef? = nil,
                       vendorExtras: [String: JSONValue] = [:]) throws -> RCContent {
        let kept = vendorExtras.isEmpty ? nil : vendorExtras[Self.vendorExtrasKey]?.objectValue
        var object = ContentObject()
        let objectName: String
        switch content {
        case .text(let text) where reply != nil:
            let reply = reply!
            object.set("content", text.text)
            objectName = RCObjectName.reference
            object.set("referMsgUid", reply.messageID.rawValue)
            object.set("referMsgUserId", reply.sender?.rawValue)
            if kept?["referMsg"] == nil {
                object.set("objName", RCObjectName.text)
                object["referMsg"] = .object(["content": .string(reply.digest)])
            }
        case .notice(let notice) where notice.noticeType == RCObjectName.recallNotification && kept != nil:
            objectName = RCObjectName.recallNotification
            object.merge(kept!)
            return RCContent(objectName: objectName, content: object.json)
        case .custom(let custom) where objectNames[custom.typeName] != nil || !mapping.carries(.custom(custom.typeName)):
            let name = objectNames[custom.typeName] ?? custom.typeName
            try Self.checkCustomName(name)
            return RCContent(objectName: name, content: custom.payload)
        case .unsupported(let unsupported):
            guard unsupported.vendor == Self.vendor else {
                throw IMError(.unsupported, "a \(unsupported.vendor) '\(unsupported.vendorType)' payload cannot be sent to RongCloud",
                              details: ["kind": "unsupported"])
            }
            return RCContent(objectName: unsupported.vendorType, content: unsupported.raw)
        default:
            if let attachment = content.attachments.first, content.kind != .custom {
                _ = try Self.url(attachment, content.kind.rawValue)
            }
            guard let mapped = try mapping.encode(content) else {
                throw IMError(.unsupported, "the RongCloud mapping has no objectName for \(content.kind.rawValue) content",
                              details: ["kind": content.kind.rawValue])
            }
            objectName = mapped.wireType
            object = ContentObject(mapped.body)   // nothing was written before in this branch
            if case .file(let file) = content, kept == nil, object["type"] == nil,
               let dot = file.name.lastIndex(of: "."), file.name.index(after: dot) < file.name.endIndex {
                object.set("type", String(file.name[file.name.index(after: dot)...]))
            }
        }
        if !mentions.isEmpty {
            var info: [String: JSONValue] = ["type": .int(mentions.all ? 1 : 2)]
            if !mentions.users.isEmpty { info["userIdList"] = .array(mentions.users.map { .string($0.rawValue) }) }
            object["mentionedInfo"] = .object(info)
        }
        if let carried = vendorExtras[OutgoingMessage.carriedKey] { object[OutgoingMessage.carriedKey] = carried }
        if let kept { object.merge(kept) }
        return RCContent(objectName: objectName, content: object.json)
    }

    /// A custom objectName must be 1…32 characters and outside the vendor's `RC:` namespace.
    public static func checkCustomName(_ name: String) throws {
        guard !name.isEmpty, name.count <= RCObjectName.maxLength, !RCObjectName.isBuiltIn(name) else {
            throw IMError(.invalidArgument, "custom objectName '\(name)' must be 1…\(RCObjectName.maxLength) characters and not start with RC:",
                          details: ["field": "objectName"])
        }
    }

    private static func url(_ attachment: MediaAttachment, _ objectName: String) throws -> String {
        guard let url = attachment.remoteURL, !url.isEmpty else {
            throw IMError(.invalidArgument, "\(objectName) needs a remote URL: upload the attachment first (the Server API has no upload)",
                          details: ["field": "attachment"])
        }
        return url
    }
}
