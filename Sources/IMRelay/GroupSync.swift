import Foundation
import IMCore
import IMStore
import Synchronization

/// Groups a route reaches for the first time are created on the target (docs/architecture.md,
/// "Groups"): the first event of a source group on a leg to a target group queues a `.group` entry in
/// the conversation's lane, ahead of the event's own entries, so the group exists — with its name,
/// avatar, announcement, owner and members — before the first message goes into it. The store remembers
/// that it was queued (checkpoint `group:<target>:<group>`), once per target group for the life of the
/// store. The entry reads the source group when it runs and writes through `Delivery.bringGroup`, the
/// code migration's group phase uses: an existing group is brought up to date (members added, never
/// removed), a missing one created.
///
/// Only targets that keep the id the bridge asks for (RongCloud, and the testing kit's worlds with other
/// rules) get groups created: NIM, JMessage and WuKong's business server give new groups ids of their
/// own, while a route relays into the group of the same id (migration maps ids; live relay does not yet).
public enum GroupSync {
    public static func checkpointName(target: BackendID, group: GroupID) -> String { "group:\(target):\(group)" }

    /// Vendors whose group creation gives an id of its own (docs/adapters/<vendor>.md).
    static let idAssigningVendors: Set<String> = ["nim", "jmessage", "wukong"]

    /// Target groups whose first entry is known to be queued (the store's checkpoint says so).
    final class Seen: Sendable {
        private let names = Mutex<Set<String>>([])
        func contains(_ name: String) -> Bool { names.withLock { $0.contains(name) } }
        func insert(_ added: [String]) { names.withLock { $0.formUnion(added) } }
    }
}

extension RelayEngine {
    /// The `.group` entry a new event's leg needs first, when its target group was never set up: a
    /// group conversation on both sides, source and target with group directories, a target that keeps
    /// the id asked for. Marked queued in the same transaction (`name` is returned for `groupsSeen`).
    nonisolated func firstSightGroup(_ event: IMEvent, leg: RouteLeg, _ tx: StoreTransaction,
                                     at now: Int64) throws -> (entry: StoreTransaction.NewEntry, payload: OutboxPayload, bytes: Data, name: String)? {
        guard event.conversation.kind == .group, leg.targetConversation.kind == .group,
              backends[event.backend] is any GroupDirectory, let target = backends[leg.target], target is any GroupDirectory,
              !GroupSync.idAssigningVendors.contains(target.capabilities.vendor) else { return nil }
        let name = GroupSync.checkpointName(target: leg.target, group: GroupID(leg.targetConversation.id))
        guard !groupsSeen.contains(name), try tx.checkpoint(name) == nil else { return nil }
        try tx.setCheckpoint(name, "", at: now)
        let action = RelayAction.group(source: GroupID(event.conversation.id), users: leg.users)
        let payload = OutboxPayload(action: action, route: leg.route, eventTimeMs: now, sourceConversation: event.conversation)
        let bytes = try payload.encoded()
        let entry = StoreTransaction.NewEntry(lane: LaneKey(backend: leg.target, conversation: leg.targetConversation),
                                              sourceBackend: event.backend, sourceEventID: event.eventID, kind: action.kindName, payload: bytes)
        return (entry, payload, bytes, name)
    }

    /// Runs a `.group` entry: reads the source group and brings the target group (the lane's) up to it,
    /// members as the leg names them on the target. Members that are the bridge's own puppets on the
    /// source (the other direction's) are left out: the users they stand for are on the target already.
    /// A source that cannot describe its groups, or does not know the group, leaves the target as it is.
    nonisolated func syncGroup(_ group: GroupID, from source: BackendID, users: UserMode, payload: OutboxPayload, entry: OutboxEntry,
                               delivery: Delivery, mayWrite: @Sendable () throws -> Void) async throws {
        guard let directory = backends[source] as? any GroupDirectory else { return }
        let found: GroupProfile?
        do {
            found = try await directory.group(group)
        } catch let error as IMError where error.code == .unsupported {
            return
        }
        guard var profile = found else { return }
        profile.members = profile.members.filter { !routes.isBridgeIdentity($0, on: source) }
        if let owner = profile.owner, routes.isBridgeIdentity(owner, on: source) { profile.owner = nil }
        let leg = RouteLeg(route: payload.route, target: entry.lane.backend, targetConversation: entry.lane.conversation, users: users)
        let desired = Delivery.targetGroup(profile, user: leg.targetUser)
        guard !desired.members.isEmpty else { return }
        try mayWrite()
        _ = try await delivery.bringGroup(desired, id: GroupID(entry.lane.conversation.id))
    }
}
