import Foundation
import IMCore
import IMStore
import Logging
import Synchronization
import IMOutbox

/// Portals (docs/architecture.md, "Portals"): a wildcard group route into a target that gives new groups
/// ids of its own (NIM `tid`, JMessage `gid`, WuKong's business-server `group_no`) relays each source
/// group into a group the bridge sets up there and keeps in the conversation map (`PortalMap`).
///
/// - Until the map names the target group, everything a source group sends through such a leg goes into
///   one lane named after the source group (`PortalMap.lane`), so the group's creation
///   (`RelayAction.group` with no target id, queued at first sight) runs ahead of its first message; the
///   executor resolves that lane to the target group through the map when an entry runs. Once the map
///   names it and that lane has run dry, events go into the target group's own lane, the one every
///   other producer (verify's repairs, expansion convergence) uses.
/// - A creation is recorded in both directions (`PortalMap.link`): events of the target group relayed
///   back find the source group — through the map at intake when the other side keeps ids (RongCloud),
///   through their own portal lane when it assigns them too.
/// - A sender becomes a member of the target group before its message goes in (`ensureMember`): the
///   vendors that assign ids refuse a group message from a non-member, and a group its source does not
///   describe is set up with the senders seen so far.
final class PortalCache: Sendable {
    private struct State {
        /// Map keys read or written by this process (a portal changes only by `imbridge portals unlink`).
        var groups: [String: GroupID] = [:]
        /// Map keys read and found empty, with when (monotonic ms): not read again for `absentForMs`
        /// (forgotten at once when this process links a group; another instance's link is seen after that).
        var absent: [String: UInt64] = [:]
        /// Members known on target groups (`"<target>|<group>"`).
        var members: [String: Set<UserID>] = [:]
        /// Target groups set up from the senders seen (their source did not describe them).
        var fromSenders: Set<String> = []
        /// Whether a target group (`"<target>|<group>"`) stands for a group of the entry's source in the map.
        var isPortalGroup: [String: Bool] = [:]
        /// Portal lanes seen run dry after their group was mapped (map keys).
        var drained: Set<String> = []
        /// Groups a "not described" warning was logged for.
        var warned: Set<String> = []
    }

    private let state = Mutex(State())

    /// How long a map key read empty is taken as empty without reading it again.
    static let absentForMs: UInt64 = 60_000

    func group(_ key: String) -> GroupID? { state.withLock { $0.groups[key] } }

    func remember(_ key: String, _ id: GroupID) {
        state.withLock {
            $0.groups[key] = id
            $0.absent.removeAll()
        }
    }

    /// Whether `key` was read empty less than `absentForMs` ago.
    func knownAbsent(_ key: String, now: UInt64) -> Bool {
        state.withLock { state in
            guard let at = state.absent[key] else { return false }
            if now &- at < Self.absentForMs { return true }
            state.absent[key] = nil
            return false
        }
    }

    func noteAbsent(_ key: String, now: UInt64) {
        state.withLock { state in
            if state.absent.count > 100_000 { state.absent.removeAll() }
            state.absent[key] = now
        }
    }

    func isMember(_ user: UserID, of group: GroupID, on target: BackendID) -> Bool {
        state.withLock { $0.members["\(target)|\(group)"]?.contains(user) == true }
    }

    func noteMembers(_ users: [UserID], of group: GroupID, on target: BackendID) {
        state.withLock { $0.members["\(target)|\(group)", default: []].formUnion(users) }
    }

    func markFromSenders(_ group: GroupID, on target: BackendID) { state.withLock { _ = $0.fromSenders.insert("\(target)|\(group)") } }
    func isFromSenders(_ group: GroupID, on target: BackendID) -> Bool { state.withLock { $0.fromSenders.contains("\(target)|\(group)") } }

    func portalGroup(_ group: GroupID, on target: BackendID) -> Bool? { state.withLock { $0.isPortalGroup["\(target)|\(group)"] } }
    func notePortalGroup(_ group: GroupID, on target: BackendID, _ value: Bool) {
        state.withLock { $0.isPortalGroup["\(target)|\(group)"] = value }
    }

    func isDrained(_ key: String) -> Bool { state.withLock { $0.drained.contains(key) } }
    func markDrained(_ key: String) { state.withLock { _ = $0.drained.insert(key) } }

    /// True the first time for `name`.
    func firstWarning(_ name: String) -> Bool { state.withLock { $0.warned.insert(name).inserted } }
}

extension RelayEngine {
    /// Whether `leg` relays `event`'s group through a portal: a group on both sides, a wildcard target
    /// side, a target that assigns group ids and has a group directory.
    nonisolated func isPortal(_ event: IMEvent, leg: RouteLeg) -> Bool {
        guard event.conversation.kind == .group, leg.targetConversation.kind == .group, leg.targetIsWildcard,
              leg.route.groupIDs != .same, let target = backends[leg.target] else { return false }
        return target.capabilities.groupCreationAssignsID && target is any GroupDirectory
    }

    /// The leg and lane `event`'s actions go into. For a portal: the target group's own lane once the map
    /// names it and the portal's lane has run dry (so that nothing queued there before is overtaken), else
    /// the portal's lane. A group first met this way that the bridge relays into the source under its own
    /// id is adopted first (`adoptRelayedGroup`).
    nonisolated func portalLane(_ event: IMEvent, _ leg: RouteLeg, _ tx: StoreTransaction, at now: Int64) throws -> (RouteLeg, LaneKey) {
        guard isPortal(event, leg: leg) else { return (leg, LaneKey(backend: leg.target, conversation: leg.targetConversation)) }
        let group = GroupID(event.conversation.id)
        let portalLane = PortalMap.lane(target: leg.target, source: event.backend, group: group)
        let key = PortalMap.key(source: event.backend, conversation: event.conversation, target: leg.target)
        let id: GroupID
        if let cached = people.portals.group(key) {
            id = cached
        } else if let stored = try PortalMap.group(key, tx) {
            id = stored
            people.portals.remember(key, id)
        } else if try adoptRelayedGroup(source: event.backend, group: group, target: leg.target, at: now, tx) {
            id = group
            people.portals.remember(key, id)
        } else {
            return (leg, portalLane)
        }
        if !people.portals.isDrained(key) {
            guard try tx.head(of: portalLane) == nil else { return (leg, portalLane) }
            people.portals.markDrained(key)
        }
        var mapped = leg
        mapped.targetConversation = .group(id)
        return (mapped, LaneKey(backend: leg.target, conversation: .group(id)))
    }

    /// `leg` with the target conversation the map names, for an event of a group whose source assigns
    /// ids (a group the bridge set up there for a group of the target, relayed back) on a wildcard leg to
    /// a target that keeps ids; `leg` as it is otherwise.
    nonisolated func mappedLeg(_ event: IMEvent, _ leg: RouteLeg, _ tx: StoreTransaction) throws -> RouteLeg {
        guard event.conversation.kind == .group, leg.targetIsWildcard, leg.targetConversation.kind == .group,
              backends[event.backend]?.capabilities.groupCreationAssignsID == true, !isPortal(event, leg: leg) else { return leg }
        let key = PortalMap.key(source: event.backend, conversation: event.conversation, target: leg.target)
        var found = people.portals.group(key)
        let now = DispatchTime.now().uptimeNanoseconds / 1_000_000
        if found == nil, !people.portals.knownAbsent(key, now: now) {
            if let read = try PortalMap.group(key, tx) {
                people.portals.remember(key, read)
                found = read
            } else {
                people.portals.noteAbsent(key, now: now)
            }
        }
        guard let found else { return leg }
        var mapped = leg
        mapped.targetConversation = .group(found)
        return mapped
    }

    /// The target conversation of an entry's lane: for a portal lane, the group the map names (an error
    /// when it names none: the group's creation, queued ahead, failed — see the dead letters).
    nonisolated func conversation(of entry: OutboxEntry) async throws -> ConversationRef {
        guard let (source, group) = PortalMap.source(of: entry.lane) else { return entry.lane.conversation }
        let key = PortalMap.key(source: source, conversation: .group(group), target: entry.lane.backend)
        if let known = people.portals.group(key) { return .group(known) }
        guard let id = try await store.reading({ try PortalMap.group(key, $0) }) else {
            throw IMError(.notFound, "no group on \(entry.lane.backend) stands for \(source)'s group \(group): its creation did not succeed "
                          + "(see `imbridge deadletters list`, or link one with `imbridge portals link`)", isRetryable: false)
        }
        people.portals.remember(key, id)
        return .group(id)
    }

    /// Makes `sender` a member of the target group before it sends there, where the bridge keeps the
    /// group's members: a portal's group, or a group set up from its senders. One read of the group per
    /// process, then only for senders not seen in it yet.
    nonisolated func ensureMember(_ sender: UserID, in conversation: ConversationRef, entry: OutboxEntry, delivery: Delivery) async throws {
        guard conversation.kind == .group, let directory = delivery.target as? any GroupDirectory else { return }
        let group = GroupID(conversation.id), target = entry.lane.backend
        guard !people.portals.isMember(sender, of: group, on: target) else { return }
        var keeps = PortalMap.source(of: entry.lane) != nil || people.portals.isFromSenders(group, on: target)
        if !keeps {
            if let known = people.portals.portalGroup(group, on: target) {
                keeps = known
            } else {
                let back = PortalMap.key(source: target, conversation: .group(group), target: entry.sourceBackend)
                keeps = try await store.reading { try PortalMap.group(back, $0) } != nil
                people.portals.notePortalGroup(group, on: target, keeps)
            }
        }
        guard keeps else { return }
        try await delivery.provision(sender)
        guard let current = try await directory.group(group) else { return }
        people.portals.noteMembers(current.members, of: group, on: target)
        guard !current.members.contains(sender) else { return }
        try await directory.updateGroup(GroupProfile(id: group, members: [sender]))
        people.portals.noteMembers([sender], of: group, on: target)
        logs.relay.info("a sender joined the target group before its message", metadata: [
            "target": "\(target)", "group": "\(group)", "member": "\(sender)",
        ])
    }
}
