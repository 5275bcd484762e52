import Foundation
import IMCore
import IMMapping

/// Pure translation between JMessage messages (send requests, report/push message objects) and the
/// neutral `Message` / `OutgoingMessage`.
///
/// Relay attribution: JMessage REST can only send as an admin (`from_type: "admin"`). When the
/// neutral sender is not the admin, the message is sent by the admin with `from_name` set to the
/// requested sender and `extras.imbridge_sender` carrying its user id; reading it back (history,
/// poller, routing push) restores that sender. JMessage's own clients show the admin account with
/// the `from_name`. Messages whose `from_type` is `user` are always attributed to `from_id`.
///
/// Extras keys starting with `imbridge_` are ours (sender, client id, reply, original send time for
/// migrated messages → `vendorExtras["imbridge_original_sent_at"]`, location address); all
/// other extras are the app's and travel in `vendorExtras["jmessage_extras"]`, unchanged.
/// `vendorExtras["jmessage_body"]` keeps the body fields with no neutral home for an exact write-back.
public struct JMessageCodec: Sendable {
    public static let senderKey = "imbridge_sender"
    public static let clientIDKey = "imbridge_client_id"
    public static let replyIDKey = "imbridge_reply_id"
    public static let replySenderKey = "imbridge_reply_sender"
    public static let replyDigestKey = "imbridge_reply_digest"
    /// The time a migrated message was first sent (ms); JMessage stamps its own `msg_ctime`.
    public static let sentAtKey = "imbridge_sent_at"
    static let ownPrefix = "imbridge_"
    /// The documented `msg_body` limit, in UTF-8 bytes of its JSON.
    public static let maxBodyBytes = 4096

    public let identity: JMessageIdentity
    public let content: JMessageContentCodec

    public init(identity: JMessageIdentity, registry: ContentRegistry = ContentRegistry(),
                mapping: VendorTable = MappingSet.shipped.table("jmessage")) {
        self.identity = identity
        self.content = JMessageContentCodec(registry: registry, mapping: mapping)
    }

    // MARK: inbound

    public func decode(_ wire: JMHistoryMessage) throws -> Message {
        let decoded = try content.decode(msgType: wire.msgType, body: wire.msgBody)
        var kept = decoded.vendorExtras
        let keptExtras = kept.removeValue(forKey: "extras")?.objectValue
        kept.removeValue(forKey: OutgoingMessage.carriedKey)   // it is in extras, read below
        let extras = keptExtras ?? wire.msgBody["extras"]?.objectValue ?? [:]
        let realSender = identity.userID(username: wire.fromID, appKey: wire.fromAppKey)
        var sender = realSender
        if wire.fromType == "admin", let attributed = extras[Self.senderKey]?.stringValue, !attributed.isEmpty {
            sender = UserID(attributed)
        }
        let conversation: ConversationRef
        switch wire.targetType {
        case "single":
            conversation = .direct(sender, identity.userID(username: wire.targetID, appKey: wire.targetAppKey))
        case "group": conversation = .group(GroupID(wire.targetID))
        case "chatroom": conversation = .chatroom(wire.targetID)
        default: conversation = .other(wire.targetType, wire.targetID)
        }
        var reply: ReplyRef?
        if let replyID = extras[Self.replyIDKey]?.stringValue {
            reply = ReplyRef(messageID: MessageID(replyID), sender: extras[Self.replySenderKey]?.stringValue.map { UserID($0) },
                             digest: extras[Self.replyDigestKey]?.stringValue ?? "")
        }
        var vendorExtras: [String: JSONValue] = ["jmessage_from_type": .string(wire.fromType), "jmessage_from_id": .string(wire.fromID)]
        if let userExtras = keptExtras?.filter({ !$0.key.hasPrefix(Self.ownPrefix) }) { vendorExtras["jmessage_extras"] = .object(userExtras) }
        if !kept.isEmpty { vendorExtras["jmessage_body"] = .object(kept) }
        if let name = wire.fromName, !name.isEmpty { vendorExtras["jmessage_from_name"] = .string(name) }
        if let platform = wire.fromPlatform, !platform.isEmpty { vendorExtras["jmessage_from_platform"] = .string(platform) }
        if let level = wire.msgLevel { vendorExtras["jmessage_msg_level"] = .int(Int64(level)) }
        if let original = extras[Self.sentAtKey]?.int64Value { vendorExtras["imbridge_original_sent_at"] = .int(original) }
        if let carried = extras[OutgoingMessage.carriedKey] { vendorExtras[OutgoingMessage.carriedKey] = carried }
        var options = MessageOptions()
        options.persist = !(wire.noOffline ?? false)
        options.push = !(wire.noNotification ?? false)
        // The custom notification: its alert is the neutral push text, its title has no neutral home.
        if let notification = wire.notification {
            options.pushText = notification.alert
            if let title = notification.title { vendorExtras[Self.notificationTitleKey] = .string(title) }
        }
        return Message(id: MessageID(String(wire.msgid)),
                       clientMessageID: extras[Self.clientIDKey]?.stringValue.map { ClientMessageID($0) },
                       conversation: conversation, sender: sender,
                       sentAt: wire.msgCtime > 0 ? wire.msgCtime : wire.createTime * 1000,
                       content: decoded.content, reply: reply, options: options, vendorExtras: vendorExtras)
    }

    // MARK: outbound

    /// The `POST /v1/messages` body for a neutral message, sent by the admin (see the type's notes).
    ///
    /// Refused before any I/O: mentions and expansions (JMessage REST has neither), a direct
    /// conversation the sender is not part of, content kinds with no JMessage form, and a `msg_body`
    /// over 4096 bytes (`limit_exceeded`, `details["limit"] == "body_size"`).
    public func encode(_ outgoing: OutgoingMessage) throws -> JMSendRequest {
        guard outgoing.mentions.isEmpty else {
            throw IMError(.unsupported, "jmessage REST has no mentions", details: ["feature": Feature.mentions.rawValue])
        }
        guard outgoing.expansion == nil else {
            throw IMError(.unsupported, "jmessage has no message expansions", details: ["feature": Feature.expansion.rawValue])
        }
        let targetType: String
        var target: (username: String, appKey: String?)
        switch outgoing.conversation.kind {
        case .direct:
            guard let peer = outgoing.conversation.peer(of: outgoing.sender) else {
                throw IMError(.invalidArgument, "\(outgoing.sender) is not in \(outgoing.conversation)")
            }
            targetType = "single"
            target = identity.vendorUser(peer)
        case .group:
            targetType = "group"
            target = (outgoing.conversation.id, nil)
        case .chatroom:
            targetType = "chatroom"
            target = (outgoing.conversation.id, nil)
        default:
            throw IMError(.unsupported, "jmessage has no \(outgoing.conversation.kind) conversations")
        }
        var extras = outgoing.vendorExtras["jmessage_extras"]?.objectValue
        func put(_ key: String, _ value: String?) {
            guard let value else { return }
            extras = (extras ?? [:]).merging([key: .string(value)]) { _, new in new }
        }
        let attributed = outgoing.sender != identity.adminUser
        if attributed { put(Self.senderKey, outgoing.sender.rawValue) }
        put(Self.clientIDKey, outgoing.clientMessageID?.rawValue)
        put(Self.sentAtKey, outgoing.sentAt.map { String($0) })
        if let origin = outgoing.vendorExtras[OutgoingMessage.originKey] {
            extras = (extras ?? [:]).merging([OutgoingMessage.originKey: origin]) { _, new in new }
        }
        if let reply = outgoing.reply {
            put(Self.replyIDKey, reply.messageID.rawValue)
            put(Self.replySenderKey, reply.sender?.rawValue)
            put(Self.replyDigestKey, reply.digest)
        }
        var kept = outgoing.vendorExtras["jmessage_body"]?.objectValue ?? [:]
        if let extras { kept["extras"] = .object(extras) }
        var withCarried = kept
        withCarried[OutgoingMessage.carriedKey] = outgoing.vendorExtras[OutgoingMessage.carriedKey]
        var (msgType, body) = try content.encode(outgoing.content, vendorExtras: withCarried)
        var size = body.jsonData().count
        if size > Self.maxBodyBytes, withCarried[OutgoingMessage.carriedKey] != nil {
            // Carried fields (another vendor's, e.g. a WuKong thumbnail) are given up before the message.
            (msgType, body) = try content.encode(outgoing.content, vendorExtras: kept)
            size = body.jsonData().count
        }
        guard size <= Self.maxBodyBytes else {
            throw IMError(.limitExceeded, "msg_body is \(size) bytes; jmessage allows \(Self.maxBodyBytes)",
                          details: ["limit": "body_size"])
        }
        let fromName = outgoing.vendorExtras["jmessage_from_name"]?.stringValue ?? (attributed ? outgoing.sender.rawValue : nil)
        return JMSendRequest(targetType: targetType, targetID: target.username, targetAppKey: target.appKey,
                               fromType: "admin", fromID: identity.admin, fromName: fromName, msgType: msgType,
                               noOffline: outgoing.options.persist ? nil : true,
                               noNotification: outgoing.options.push ? nil : true,
                               notification: Self.notification(outgoing),
                               msgBody: body)
    }

    /// `vendorExtras` key of the custom notification's title (`notification.title`).
    public static let notificationTitleKey = "jmessage_notification_title"

    static func notification(_ outgoing: OutgoingMessage) -> JMNotification? {
        let title = outgoing.vendorExtras[notificationTitleKey]?.stringValue
        guard title != nil || outgoing.options.pushText != nil else { return nil }
        return JMNotification(title: title, alert: outgoing.options.pushText)
    }

    /// The event id of a message, shared by the poller and the routing push so that both paths (and
    /// every redelivery) name one message alike.
    public static func messageEventID(_ msgid: Int64) -> EventID { EventID("jmessage:msg:\(msgid)") }
    public static func retractEventID(_ msgid: String) -> EventID { EventID("jmessage:retract:\(msgid)") }
}
