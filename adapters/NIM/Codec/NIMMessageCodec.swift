import IMCore
import IMMapping

/// Pure translation between NIM wire messages (history entries, message copies, sendMsg forms) and
/// neutral `Message`s.
///
/// Round trip: `vendorExtras` keeps what has no neutral home — `ext` (the raw extension string),
/// `nim_body` (the raw body, only when re-encoding the content would not give the same bytes, e.g. a key
/// order or an unknown key the neutral model has no field for), and the copy's other fields under their
/// own names. A message whose content is unchanged re-encodes to the original body byte for byte; one
/// whose content was replaced (an edit, re-hosted media) is encoded afresh.
public struct NIMMessageCodec: Sendable {
    public let content: NIMContentCodec

    public static let bodyHintKey = "nim_body"
    /// `vendorExtras` key of the send `option` flags the neutral options do not express.
    public static let optionKey = "nim_option"
    public static let extKey = "ext"

    public init(content: NIMContentCodec = NIMContentCodec()) {
        self.content = content
    }

    public init(registry: ContentRegistry, customFormat: NIMCustomFormat = NIMCustomFormat(),
                mapping: VendorTable = MappingSet.shipped.table("nim")) {
        self.init(content: NIMContentCodec(registry: registry, customFormat: customFormat, mapping: mapping))
    }

    // MARK: bodies with the round-trip hint

    /// Decodes a body and says whether the original text has to be kept to re-encode it exactly.
    public func decodeBody(type: Int, body: String) throws -> (content: MessageContent, hint: String?) {
        let decoded = try content.decode(type: type, body: body)
        let again = try? content.encode(decoded)
        return (decoded, again.map { $0.type == type && $0.body == body } == true ? nil : body)
    }

    /// Encodes a content, reusing `hint` when it decodes to exactly this content; another vendor's
    /// carried fields (`OutgoingMessage.carriedKey`) are added to a freshly encoded built-in body.
    public func encodeBody(_ value: MessageContent, hint: String?, carried: JSONValue? = nil) throws -> (type: Int, body: String) {
        let encoded = try content.encode(value)
        if let hint, (try? content.decode(type: encoded.type, body: hint)) == value { return (encoded.type, hint) }
        guard let carried, value.kind != .custom, value.kind != .unsupported,
              var object = (try? JSONValue.parse(encoded.body))?.objectValue else { return encoded }
        object[OutgoingMessage.carriedKey] = carried
        return (encoded.type, JSONValue.object(object).jsonString())
    }

    /// The carried fields a body holds (written by `encodeBody` for content from another vendor).
    static func carried(inBody body: String) -> JSONValue? {
        guard body.contains(OutgoingMessage.carriedKey) else { return nil }
        return (try? JSONValue.parse(body))?[OutgoingMessage.carriedKey]
    }

    // MARK: history entries

    /// A history entry of `conversation` (history answers do not name the conversation).
    public func message(from entry: NIMHistoryMessage, in conversation: ConversationRef) throws -> Message {
        let (decoded, hint) = try decodeBody(type: entry.type, body: entry.body)
        let ours = NIMExtension(ext: entry.ext)
        var vendorExtras = entry.others
        if let hint { vendorExtras[Self.bodyHintKey] = .string(hint) }
        if let ext = entry.ext { vendorExtras[Self.extKey] = .string(ext) }
        if let clientType = entry.fromclienttype { vendorExtras["fromclienttype"] = .int(Int64(clientType)) }
        if let client = entry.msgidclient { vendorExtras["msgidclient"] = .string(client) }
        if let carried = Self.carried(inBody: entry.body) { vendorExtras[OutgoingMessage.carriedKey] = carried }
        return Message(id: MessageID(String(entry.msgid)),
                       clientMessageID: ours.clientMessageID ?? entry.msgidclient.map { ClientMessageID($0) },
                       conversation: conversation, sender: UserID(entry.from), sentAt: entry.sendtime, content: decoded,
                       mentions: ours.mentions, reply: ours.reply, vendorExtras: vendorExtras)
    }

    /// The history entry a message reads as (the inverse of `message(from:in:)`).
    public func historyEntry(from message: Message) throws -> NIMHistoryMessage {
        guard let msgid = Int64(message.id.rawValue) else {
            throw IMError(.invalidArgument, "NIM message ids are numbers; '\(message.id)' is not")
        }
        var vendorExtras = message.vendorExtras
        let hint = vendorExtras.removeValue(forKey: Self.bodyHintKey)?.stringValue
        let appExt = vendorExtras.removeValue(forKey: Self.extKey)?.stringValue
        let clientType = vendorExtras.removeValue(forKey: "fromclienttype")?.int64Value.map { Int($0) }
        let vendorClientID = vendorExtras.removeValue(forKey: "msgidclient")?.stringValue
        let encoded = try encodeBody(message.content, hint: hint, carried: vendorExtras.removeValue(forKey: OutgoingMessage.carriedKey))
        let ours = NIMExtension(clientMessageID: message.clientMessageID.map(\.rawValue) == vendorClientID ? nil : message.clientMessageID,
                                reply: message.reply, mentions: message.mentions)
        return NIMHistoryMessage(from: message.sender.rawValue, msgid: msgid,
                                 msgidclient: vendorClientID, sendtime: message.sentAt,
                                 type: encoded.type, fromclienttype: clientType, body: encoded.body,
                                 ext: try ours.merged(into: appExt), others: vendorExtras)
    }

    // MARK: sending

    /// The sendMsg form for an outgoing message. Direct → `ope` 0 to the peer, group → `ope` 1 to the
    /// tid; other conversation kinds throw `unsupported`. Options map onto `option` (persist → history/
    /// roam/persistent, countUnread → badge, push → push) and `pushcontent`; group mentions also set
    /// `forcepushlist`/`forcepushall`; client id, reply and mentions travel in `ext` (`NIMExtension`).
    public func sendForm(for outgoing: OutgoingMessage) throws -> NIMSendMessageForm {
        let target = try Self.target(of: outgoing.conversation, sender: outgoing.sender)
        let encoded = try encodeBody(outgoing.content, hint: outgoing.vendorExtras[Self.bodyHintKey]?.stringValue,
                                     carried: outgoing.vendorExtras[OutgoingMessage.carriedKey])
        // Flags with no neutral form, kept from a form read earlier (`NIMSendOption.unmappedFlags`).
        var option = NIMSendOption(parsing: outgoing.vendorExtras[Self.optionKey] ?? .null)
        option.roam = nil; option.history = nil; option.persistent = nil; option.badge = nil; option.push = nil
        if !outgoing.options.persist { option.history = false; option.roam = false; option.persistent = false }
        if !outgoing.options.countUnread { option.badge = false }
        if !outgoing.options.push { option.push = false }
        let ours = NIMExtension(clientMessageID: outgoing.clientMessageID, reply: outgoing.reply, mentions: outgoing.mentions)
        var form = NIMSendMessageForm(from: outgoing.sender.rawValue, ope: target.type.ope, to: target.id,
                                      type: encoded.type, body: encoded.body, option: option,
                                      pushcontent: outgoing.options.pushText.map { Self.cut($0, to: Self.fieldLimits.pushcontent) },
                                      ext: try ours.merged(into: Self.withOrigin(outgoing)))
        if target.type == .team, !outgoing.mentions.isEmpty {
            if outgoing.mentions.all { form.forcepushall = true }
            if !outgoing.mentions.users.isEmpty { form.forcepushlist = outgoing.mentions.users.map(\.rawValue) }
        }
        if encoded.type != 0 && encoded.type != 10 { form.msgDesc = Self.cut(outgoing.content.digest, to: Self.fieldLimits.msgDesc) }
        return form
    }

    /// `text` cut to at most `limit` UTF-16 units (NIM counts characters as its Java SDK does): the push
    /// text and the description are previews, so they are shortened rather than refused.
    static func cut(_ text: String, to limit: Int) -> String {
        guard text.utf16.count > limit else { return text }
        var kept = 0
        var end = text.startIndex
        for character in text {
            kept += character.utf16.count
            if kept > limit - 1 { break }
            end = text.index(after: end)
        }
        return String(text[..<end]) + "…"
    }

    /// NIM's limits on the text fields of a message, in UTF-16 units (docs/adapters/nim.md, "Message field
    /// limits"): the backend keeps within them, the sandbox refuses past them.
    public static let fieldLimits = (ext: 1024, pushcontent: 500, msgDesc: 500, payload: 2048)

    /// The app's `ext` with a migrated copy's origin (`OutgoingMessage.originKey`) added, when there is one.
    static func withOrigin(_ outgoing: OutgoingMessage) throws -> String? {
        let appExt = outgoing.vendorExtras[extKey]?.stringValue
        guard let origin = outgoing.vendorExtras[OutgoingMessage.originKey] else { return appExt }
        guard var object = appExt.map({ (try? JSONValue.parse($0))?.objectValue }) ?? [:] else {
            throw IMError(.invalidArgument, "ext must be a JSON object to carry a migrated message's origin")
        }
        object[OutgoingMessage.originKey] = origin
        return JSONValue.object(object).jsonString()
    }

    /// The NIM side of a neutral conversation: `(person, peer)` or `(team, tid)`.
    public static func target(of conversation: ConversationRef, sender: UserID) throws -> (type: NIMConversationType, id: String) {
        switch conversation.kind {
        case .direct:
            guard let peer = conversation.peer(of: sender) else {
                throw IMError(.invalidArgument, "\(sender) is not a user of \(conversation)")
            }
            return (.person, peer.rawValue)
        case .group:
            return (.team, conversation.id)
        default:
            throw IMError(.unsupported, "NIM messages go to direct or group (team) conversations, not \(conversation.kind)")
        }
    }
}
