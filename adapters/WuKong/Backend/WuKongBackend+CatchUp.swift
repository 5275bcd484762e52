import IMAdapterKit
import IMCore

/// Catch-up (docs/architecture.md, "Catch-up"): a message read from `/channel/messagesync` becomes the
/// event `msg.notify` gives it (`msg:<message_id>`; none for a CMD or the business server's "group
/// created" notice, as `WuKongInboundMapper`), gaps show as a `message_seq` jump, and a user's
/// conversations come from `POST /conversation/channels`.
extension WuKongBackend: CatchUpSource {
    public func catchUpEvent(for message: Message) -> IMEvent? {
        if case .command = message.content { return nil }
        if WuKongInboundMapper.isGroupCreated(message) { return nil }
        return IMEvent(eventID: EventID("msg:\(message.id)"), backend: id, kind: .message(message))
    }

    /// `recall:<message_id>`, as the `messageRevoke` CMD and the extras feed's `revoke` give it.
    public func recallEvent(for message: Message) -> IMEvent? {
        recallEvent(for: message, eventIDPrefix: "")
    }

    public var gapSignal: CatchUpGapSignal { .sequence }

    public func catchUpConversations(of user: UserID) async throws -> [ConversationRef] {
        let data = try await client.im("/conversation/channels", WKConversationChannelsRequest(uid: user.rawValue))
        if (try? JSONValue.parse(data))?.objectValue != nil { return [] }
        let channels = try WuKongClient.decode([WKChannelRef].self, data, "/conversation/channels")
        return channels.compactMap { channel in
            guard !channel.channelID.hasSuffix(WuKongChannel.cmdSuffix) else { return nil }
            if channel.channelType == WKChannelType.person {
                let halves = channel.channelID.split(separator: "@", maxSplits: 1).map { UserID(String($0)) }
                return halves.count == 2 ? .direct(halves[0], halves[1]) : .direct(user, UserID(channel.channelID))
            }
            return WuKongChannel.conversation(channelID: channel.channelID, channelType: channel.channelType, fromUID: user.rawValue)
        }
    }
}
