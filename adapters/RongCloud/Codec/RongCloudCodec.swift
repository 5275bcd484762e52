import IMCore

/// Pure translation between RongCloud messages (routed callback forms, history rows, publish forms)
/// and neutral `Message`s. No I/O.
///
/// Conversations: `PERSON` ⇄ `direct(fromUserId, toUserId)`, `GROUP` ⇄ `group(toUserId)`, `TEMPGROUP`
/// → `chatroom`, `NOTIFY` → `system(fromUserId)`, `ULTRAGROUP` → `other("ultragroup")`, any other
/// channel → `other(<channelType lowercased>)`. Only direct and group conversations are published.
///
/// `vendorExtras` keys written on decode: `rongcloud.content` (the content fields kept by
/// `RongCloudContentCodec`, see its `vendorExtrasKey`), `rongcloud.source`, `rongcloud.sensitiveType`, `rongcloud.busChannel`,
/// `rongcloud.groupUserIds`.
public struct RongCloudCodec: Sendable {
    /// `msgRandom` for a client id: the id itself when it is a decimal Int64, else the FNV-1a hash of its
    /// UTF-8 bytes with the sign bit cleared (stable across processes and releases, unlike `hashValue`).
    public static func msgRandom(for id: ClientMessageID) -> Int64 {
        if let number = Int64(id.rawValue) { return number }
        return Int64(bitPattern: StableHash.fnv1a64(id.rawValue) & 0x7fff_ffff_ffff_ffff)
    }

    public let content: RongCloudContentCodec

    public init(content: RongCloudContentCodec = RongCloudContentCodec()) { self.content = content }

    public static let sourceKey = "rongcloud.source"
    public static let sensitiveTypeKey = "rongcloud.sensitiveType"
    public static let busChannelKey = "rongcloud.busChannel"
    public static let groupUserIdsKey = "rongcloud.groupUserIds"
    /// The content JSON key a notice's `clientMessageID` rides in (docs/adapters/rongcloud.md, "Client ids").
    public static let clientIDKey = "imbridge_cid"

    /// The client id a notice's content JSON carries (`clientIDKey`); nil for any other content.
    static func clientID(of content: MessageContent, json: String) -> ClientMessageID? {
        guard case .notice = content, json.contains(clientIDKey),
              let id = (try? JSONValue.parse(json))?.objectValue?[clientIDKey]?.stringValue else { return nil }
        return ClientMessageID(id)
    }

    // MARK: conversations

    public static func conversation(channelType: String, from: String, to: String) -> ConversationRef {
        switch RCChannelType(rawValue: channelType.uppercased()) {
        case .person: .direct(UserID(from), UserID(to))
        case .group: .group(GroupID(to))
        case .tempGroup: .chatroom(to)
        case .notify: .system(from)
        case .ultragroup: .other("ultragroup", to)
        case .persons: .other("discussion", to)
        default: .other(channelType.lowercased(), to)
        }
    }

    /// `conversationType` (1 private, 3 group) and `targetId` of a conversation as `user` addresses it:
    /// the peer for a direct conversation, the group id for a group. The only kinds this backend
    /// publishes, recalls and extends in; others are `unsupported`.
    /// Ids over 64 bytes are refused here, before any call (`checkId`).
    public static func target(of conversation: ConversationRef, for user: UserID) throws -> (type: RCConversationType, targetId: String) {
        switch conversation.kind {
        case .direct:
            guard let peer = conversation.peer(of: user) else {
                throw IMError(.invalidArgument, "\(user) is not a user of \(conversation)")
            }
            try checkId(user.rawValue, "fromUserId")
            try checkId(peer.rawValue, "toUserId")
            return (.private, peer.rawValue)
        case .group:
            try checkId(user.rawValue, "fromUserId")
            try checkId(conversation.id, "toGroupId")
            return (.group, conversation.id)
        default:
            throw IMError(.unsupported, "RongCloud's Server API calls here cover direct and group conversations, not \(conversation.kind)",
                          details: ["conversation": conversation.description])
        }
    }

    /// RongCloud takes user and group ids of at most 64 bytes (docs/adapters/rongcloud.md, "Publish
    /// refusals"): a longer one — a puppet's prefix plus a long source id — is `invalid_argument`, not
    /// retryable, as the server's own refusal (1002) would be, but with a message that says why.
    public static func checkId(_ id: String, _ field: String) throws {
        let bytes = id.utf8.count
        guard bytes > RCUserLimits.maxIdBytes else { return }
        throw IMError(.invalidArgument, "RongCloud ids are at most \(RCUserLimits.maxIdBytes) bytes; \(field) '\(id)' has \(bytes)",
                      isRetryable: false, details: ["limit": "id_length", "field": field])
    }

    /// `profile` as `/user/getToken.json` and `/user/refresh.json` take it (docs/adapters/rongcloud.md,
    /// "Profiles in live relay"): a name over 64 characters cut to its first 64 (characters, not bytes), a
    /// portrait over 1024 bytes left out (nil), since a cut URL would point elsewhere.
    public static func fitted(_ profile: UserProfile) -> UserProfile {
        var fitted = profile
        fitted.name = profile.name.map { String($0.prefix(RCUserLimits.maxNameLength)) }
        if let avatar = profile.avatar, avatar.utf8.count > RCUserLimits.maxPortraitBytes { fitted.avatar = nil }
        return fitted
    }

    // MARK: inbound

    /// A routed message as a neutral `Message` (signals `RC:RcCmd`/`RC:MsgExMsg` are not messages: see
    /// `RongCloudInbound`). `expansion=true` makes the message extensible with the `extraContent` keys,
    /// versioned at `msgTimestamp`; without it the message has no expansion.
    public func message(from routed: RCRoutedMessage) throws -> Message {
        let decoded = try content.decode(objectName: routed.objectName, content: routed.content)
        var vendorExtras = decoded.vendorExtras
        if let source = routed.source { vendorExtras[Self.sourceKey] = .string(source) }
        if let sensitive = routed.sensitiveType { vendorExtras[Self.sensitiveTypeKey] = .int(Int64(sensitive)) }
        if let channel = routed.busChannel { vendorExtras[Self.busChannelKey] = .string(channel) }
        if !routed.groupUserIds.isEmpty { vendorExtras[Self.groupUserIdsKey] = .array(routed.groupUserIds.map { .string($0) }) }
        var options = MessageOptions()
        if case .command = decoded.content { options = MessageOptions(persist: false, countUnread: false) }
        if case .notice = decoded.content { options.countUnread = false }
        var expansion: Expansion?
        if routed.expansion == true {
            let parsed = try RongCloudExpansionCodec.expansion(fromHistoryText: routed.extraContent)
            expansion = Expansion(entries: parsed.entries.mapValues {
                $0.version == 0 ? ExpansionEntry(value: $0.value, version: routed.msgTimestamp) : $0
            })
        }
        return Message(id: MessageID(routed.msgUID), clientMessageID: Self.clientID(of: decoded.content, json: routed.content),
                       conversation: Self.conversation(channelType: routed.channelType, from: routed.fromUserId, to: routed.toUserId),
                       sender: UserID(routed.fromUserId), sentAt: routed.msgTimestamp, content: decoded.content,
                       mentions: decoded.mentions, reply: decoded.reply, options: options, expansion: expansion, vendorExtras: vendorExtras)
    }

    /// A history row as a neutral `Message`. `extraContent` (present when `expansion` is true) becomes
    /// the expansion; each key's version is its `ts` (see `RongCloudExpansionCodec`).
    public func message(from row: RCHistoryMessage, conversation: ConversationRef) throws -> Message {
        let decoded = try content.decode(objectName: row.objectName, content: row.content)
        var vendorExtras = decoded.vendorExtras
        if let channel = row.busChannel { vendorExtras[Self.busChannelKey] = .string(channel) }
        var expansion: Expansion?
        if row.expansion == true {
            expansion = try RongCloudExpansionCodec.expansion(fromHistoryText: row.extraContent)
        }
        return Message(id: MessageID(row.messageUID), clientMessageID: Self.clientID(of: decoded.content, json: row.content),
                       conversation: conversation, sender: UserID(row.fromUserId),
                       sentAt: row.msgTime, content: decoded.content, mentions: decoded.mentions, reply: decoded.reply,
                       expansion: expansion, vendorExtras: vendorExtras)
    }

    // MARK: outbound

    /// The publish path and form for a neutral outgoing message.
    ///
    /// Flags are written only where they differ from the server's defaults, except `isIncludeSender=1`,
    /// always sent so the sender's own clients see what the bridge sent in their name. `msgRandom`
    /// carries the `clientMessageID` (the vendor's idempotency key is a Long, docs/adapters/rongcloud.md):
    /// a decimal id as itself, any other (the relay's `imb-<entry>`) as a stable 63-bit hash of it, so
    /// that two attempts of one entry carry the same key.
    public func publish(_ outgoing: OutgoingMessage) throws -> (path: String, form: RCPublishForm) {
        let target = try Self.target(of: outgoing.conversation, for: outgoing.sender)
        var wire = try content.encode(outgoing.content, mentions: outgoing.mentions, reply: outgoing.reply,
                                      vendorExtras: outgoing.vendorExtras)
        // A migrated copy's origin rides in the content JSON (clients ignore keys they do not know), and so
        // does a notice's client id: RongCloud keeps none a history read returns, and a notice is in no id
        // map, so a retry's earlier-copy search could not tell one puppet's `😂 +1` about one message from
        // the same line about another (RongCloud quotes only texts; seed 588, docs/reliability.md).
        let origin = outgoing.vendorExtras[OutgoingMessage.originKey]
        let noticeID: ClientMessageID? = if case .notice = outgoing.content { outgoing.clientMessageID } else { nil }
        if origin != nil || noticeID != nil, var object = (try? JSONValue.parse(wire.content))?.objectValue {
            if let origin { object[OutgoingMessage.originKey] = origin }
            if let noticeID { object[Self.clientIDKey] = .string(noticeID.rawValue) }
            wire.content = JSONValue.object(object).jsonString()
        }
        let isGroup = target.type == .group
        var form = RCPublishForm(fromUserId: outgoing.sender.rawValue,
                                   toUserIds: isGroup ? [] : [target.targetId], toGroupIds: isGroup ? [target.targetId] : [],
                                   objectName: wire.objectName, content: wire.content)
        let options = outgoing.options
        form.pushContent = options.pushText
        if !options.persist { form.isPersisted = false }
        if !options.countUnread { form.isCounted = false }
        if !options.push { form.disablePush = true }
        if options.receiptRequested { form.needReadReceipt = true }
        form.isIncludeSender = true
        if isGroup, !outgoing.mentions.isEmpty { form.isMentioned = true }
        if let initial = outgoing.expansion {
            form.expansion = true
            if !initial.isEmpty { form.extraContent = JSONValue.object(initial.mapValues { .string($0) }).jsonString() }
        }
        form.msgRandom = outgoing.clientMessageID.map { Self.msgRandom(for: $0) }
        let path = isGroup ? RCPaths.groupPublish : RCPaths.privatePublish
        return (path, form)
    }
}
