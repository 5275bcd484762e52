import IMCore

/// Message copies (eventType 1) and recall copies (7/8/25) → neutral values.
///
/// Body mapping (docs/adapters/nim.md): a TEXT copy carries the text in `body`; PICTURE/AUDIO/VIDEO/LOCATION/
/// FILE/CUSTOM/NOTIFICATION carry the type's JSON in `attach` (string or inline object) and a stock
/// phrase or nothing in `body`. UNCONFIRMED: TIPS — the text is taken from `body` (and from `attach`'s
/// `msg` if `body` is empty).
extension NIMMessageCodec {
    /// Fields of an eventType-1 copy that map onto the neutral message; every other field is kept in
    /// `vendorExtras` under its own name.
    static let mappedCopyFields: Set<String> = ["eventtype", "convtype", "to", "fromaccount", "msgtype", "body", "attach",
                                                "msgtimestamp", "msgidserver", "msgidclient", "ext"]

    /// The conversation a copy belongs to; nil for conversation types that carry no chat messages.
    public static func conversation(convType: String, from: String, to: String) -> ConversationRef? {
        switch convType.uppercased() {
        case "PERSON": .direct(UserID(from), UserID(to))
        case "TEAM": .group(GroupID(to))
        case "SUPER_TEAM": .other("superteam", to)
        default: nil
        }
    }

    /// The wire `(type, body)` a copy carries; nil when `msgType` is not a chat message type.
    public static func typeAndBody(of copy: NIMCopyEvent) -> (type: Int, body: String)? {
        guard let name = copy.msgType, let type = NIMMessageType(copyName: name) else { return nil }
        let body = copy.body ?? ""
        let attach = copy.attach ?? ""
        switch type {
        case .text:
            return (0, JSONValue.object(["msg": .string(body)]).jsonString())
        case .tip:
            let text = body.isEmpty ? (NIMLenient.string((try? JSONValue.parse(attach))?["msg"]) ?? "") : body
            return (10, JSONValue.object(["msg": .string(text)]).jsonString())
        default:
            return (type.rawValue, attach)
        }
    }

    /// The neutral message of an eventType-1 copy of a PERSON/TEAM/SUPER_TEAM chat message; nil for
    /// other copies (system notifications, friend/team operations, net calls). Throws
    /// `malformed_payload` when an id, party or time is missing or the body does not decode.
    public func message(fromCopy copy: NIMCopyEvent) throws -> Message? {
        guard let convType = copy.convType, let wire = Self.typeAndBody(of: copy) else { return nil }
        guard let from = copy.fromAccount, let to = copy.to, let serverID = copy.msgidServer,
              let sentAt = copy.msgTimestamp else {
            throw IMError(.malformedPayload, "message copy lacks fromAccount/to/msgidServer/msgTimestamp")
        }
        guard let conversation = Self.conversation(convType: convType, from: from, to: to) else { return nil }
        let (decoded, hint) = try decodeBody(type: wire.type, body: wire.body)
        let ours = NIMExtension(ext: copy.ext)
        var vendorExtras = copy.fields.filter { !Self.mappedCopyFields.contains($0.key.lowercased()) }
        if let hint { vendorExtras[Self.bodyHintKey] = .string(hint) }
        if let ext = copy.ext { vendorExtras[Self.extKey] = .string(ext) }
        if let client = copy.msgidClient { vendorExtras["msgidclient"] = .string(client) }
        if let carried = NIMMessageCodec.carried(inBody: wire.body) { vendorExtras[OutgoingMessage.carriedKey] = carried }
        return Message(id: MessageID(serverID), clientMessageID: ours.clientMessageID ?? copy.msgidClient.map { ClientMessageID($0) },
                       conversation: conversation, sender: UserID(from), sentAt: sentAt, content: decoded,
                       mentions: ours.mentions, reply: ours.reply, vendorExtras: vendorExtras)
    }

    /// The recall a 7/8/25 copy reports: `(message id, conversation, by, at)`.
    public static func recall(fromCopy copy: NIMCopyEvent) throws -> (id: MessageID, conversation: ConversationRef, by: UserID, at: Int64) {
        guard let eventType = copy.eventType, let msgId = copy.msgId, let from = copy.from, let to = copy.to,
              let at = copy.deleteTime else {
            throw IMError(.malformedPayload, "recall copy lacks msgId/from/to/deleteTime")
        }
        let conversation: ConversationRef = switch eventType {
        case 7: .direct(UserID(from), UserID(to))
        case 8: .group(GroupID(to))
        default: .other("superteam", to)
        }
        return (MessageID(msgId), conversation, UserID(from), at)
    }
}
