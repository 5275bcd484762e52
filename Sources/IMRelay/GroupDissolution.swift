import IMCore
import IMStore
import IMOutbox

/// A source group's dissolution (`IMEvent.Kind.groupDissolved`) relayed (docs/architecture.md,
/// "Portals"): each group leg queues a `.dissolve` entry in the lane the group's messages use (the
/// portal's lane until the map names the target group, then the target group's own), so it runs after
/// every earlier event of the group. The entry dissolves the target group (`GroupDissolving`), or — on a
/// route with `on_dissolve: keep`, or a target that cannot dissolve groups — leaves it with a notice. A
/// target group that does not exist (never set up, or dissolved already) is left alone.
///
/// The conversation map keeps the pair: later events of the same source group id (RongCloud lets an app
/// make a group of that id again) go to the dissolved group until `imbridge portals unlink`.
extension RelayEngine {
    /// The notice a kept target group gets.
    static let dissolvedNotice = "[群已解散]"

    /// The `.dissolve` entry of `event` (a `groupDissolved`) on `leg`; nil for a leg whose target is not a group.
    nonisolated func dissolution(_ event: IMEvent, leg: RouteLeg) -> OutboxPayload? {
        guard case .groupDissolved(let group, let by, let at) = event.kind, leg.targetConversation.kind == .group else { return nil }
        // Who dissolved it, as the leg names them; unknown: the target group's owner (read when it runs).
        let sender = by.map(leg.targetUser) ?? UserID("")
        let notice = OutgoingMessage(conversation: leg.targetConversation, sender: sender, content: .text(Self.dissolvedNotice), sentAt: at)
        return OutboxPayload(action: .dissolve(source: group, keep: leg.route.onDissolve == .keep, notice: notice), route: leg.route,
                             eventTimeMs: at, sourceConversation: event.conversation)
    }

    /// Runs a `.dissolve` entry; true when the target was called.
    nonisolated func dissolveGroup(keep: Bool, notice: OutgoingMessage, entry: OutboxEntry, delivery: Delivery,
                                   mayWrite: @escaping @Sendable () throws -> Void) async throws -> Bool {
        let target = entry.lane.backend
        if let (source, group) = PortalMap.source(of: entry.lane) {
            // A portal whose group was never set up has nothing to dissolve.
            let key = PortalMap.key(source: source, conversation: .group(group), target: target)
            guard try await store.reading({ try PortalMap.group(key, $0) }) != nil else { return false }
        }
        let conversation = try await self.conversation(of: entry)
        let id = GroupID(conversation.id)
        guard let directory = delivery.target as? any GroupDirectory, let existing = try await directory.group(id) else {
            logs.relay.info("dissolved source group: its target group does not exist, nothing to do",
                            metadata: ["target": "\(target)", "group": "\(id)"])
            return false
        }
        if !keep, let dissolving = delivery.target as? any GroupDissolving {
            try mayWrite()
            try await dissolving.dissolveGroup(id)
            logs.relay.info("target group dissolved after its source group", metadata: ["target": "\(target)", "group": "\(id)"])
            return true
        }
        var outgoing = notice
        if outgoing.sender.rawValue.isEmpty || !existing.members.contains(outgoing.sender) {
            guard let owner = existing.owner ?? existing.members.first else { return false }
            outgoing.sender = owner
        }
        outgoing.clientMessageID = ClientMessageID("\(Self.clientIDPrefix)\(entry.id)")
        outgoing.conversation = conversation
        try await ensureMember(outgoing.sender, in: conversation, entry: entry, delivery: delivery)
        _ = try await delivery.send(outgoing, in: conversation, earlierAttemptAt: entry.attempts > 0 ? entry.createdAt : nil,
                                    beforeWrite: mayWrite)
        logs.relay.info("target group kept after its source group was dissolved: notice sent", metadata: ["target": "\(target)", "group": "\(id)"])
        return true
    }
}
