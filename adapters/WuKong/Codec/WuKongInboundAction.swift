import Foundation
import IMCore

/// What one webhook message means for the backend.
public enum WuKongInboundAction: Hashable, Sendable {
    /// An event ready to deliver.
    case event(IMEvent)
    /// CMD `syncMessageExtra`: pull `/v1/message/extra/sync` for the channel; `actor` is the CMD's sender.
    case syncExtras(conversation: ConversationRef, actor: UserID, at: Int64)
    /// CMD `syncMessageReaction`: pull `/v1/reaction/sync` for the channel.
    case syncReactions(conversation: ConversationRef, actor: UserID, at: Int64)
}

/// Pure mapping of webhook messages to actions.
///
/// - A stored (or `no_persist`) non-CMD message → `message` event, `eventID` `msg:<message_id>`
///   (the same for `msg.notify` and `msg.offline` copies and for every redelivery).
/// - CMD (type 99) `messageRevoke` `{"message_id":"…"}` → `recalled` by the CMD's sender,
///   `eventID` `recall:<message_id>`; `syncMessageExtra` / `syncMessageReaction` → a sync action;
///   any other CMD → `command` event, `eventID` `cmd:<message_id>`.
/// - The business server's "group created" notice (type 1001, `isGroupCreated`) → nothing: it is the
///   vendor's bookkeeping for a new group (docs/adapters/wukong.md, "Users and groups"), not a member's
///   message, so it is not relayed.
/// CMD channels (`…____cmd`) are mapped to the conversation they serve.
public struct WuKongInboundMapper: Sendable {
    public static let revokeCommand = "messageRevoke"
    public static let syncExtraCommand = "syncMessageExtra"
    public static let syncReactionCommand = "syncMessageReaction"

    public let backend: BackendID
    public let codec: WuKongMessageCodec

    public init(backend: BackendID, codec: WuKongMessageCodec) {
        self.backend = backend
        self.codec = codec
    }

    /// The business server's type 1001 "group created" notice.
    public static func isGroupCreated(_ message: Message) -> Bool {
        guard case .notice(let notice) = message.content else { return false }
        return notice.noticeType == String(WKContentType.groupCreated)
    }

    public func actions(for wire: WKMessage) throws -> [WuKongInboundAction] {
        let message = try codec.decode(wire)
        if Self.isGroupCreated(message) { return [] }
        guard case .command(let command) = message.content else {
            return [.event(IMEvent(eventID: EventID("msg:\(message.id)"), backend: backend, kind: .message(message)))]
        }
        switch command.name {
        case Self.revokeCommand:
            guard let target = command.data["message_id"]?.stringValue, !target.isEmpty else {
                throw IMError(.malformedPayload, "messageRevoke CMD \(message.id) names no message_id")
            }
            return [.event(IMEvent(eventID: EventID("recall:\(target)"), backend: backend,
                                   kind: .recalled(messageID: MessageID(target), conversation: message.conversation,
                                                   by: message.sender, at: message.sentAt)))]
        case Self.syncExtraCommand:
            return [.syncExtras(conversation: message.conversation, actor: message.sender, at: message.sentAt)]
        case Self.syncReactionCommand:
            return [.syncReactions(conversation: message.conversation, actor: message.sender, at: message.sentAt)]
        default:
            // Parameters beyond `cmd`/`param` (the iOS SDK's `sign` …) and the message's own extras stay with the event.
            return [.event(IMEvent(eventID: EventID("cmd:\(message.id)"), backend: backend,
                                   kind: .command(conversation: message.conversation, sender: message.sender,
                                                  content: command, at: message.sentAt),
                                   mentions: message.mentions, reply: message.reply, vendorExtras: message.vendorExtras))]
        }
    }
}
