import Foundation
import IMCore
import IMConfig
import IMStore
import Synchronization
import IMOutbox

/// Groups a route reaches for the first time are created on the target (docs/architecture.md,
/// "Groups"): the first message of a source group on a leg to a target group queues a `.group` entry in
/// the conversation's lane, ahead of the message's own entries, so the group exists — with its name,
/// avatar, announcement, owner and members — before the first message goes into it. The store remembers
/// that it was queued (checkpoint `group:<target>:<group>`), once per target group for the life of the
/// store. The entry reads the source group when it runs and writes through `Delivery.bringGroup`, the
/// code migration's group phase uses: an existing group is brought up to date (members added, never
/// removed), a missing one created.
///
/// Afterwards, the groups with events since the last round are compared again every
/// `groups.refresh` (default 1h; at most `maxPerRound` a round): a `.group` entry in a lane of
/// its own per target group (`lane(target:group:)`, so a failing one never holds a message back) brings
/// the target group up to the source's again — members who joined are added, a new name, avatar or
/// announcement is set, and the leg's own puppets whose source users left are removed (`puppets(of:)`;
/// never a native member nor another route's puppet).
///
/// A target that keeps the id the bridge asks for (RongCloud) gets the group of the source's id. One
/// that gives new groups ids of its own (NIM, JMessage, WuKong's business server) gets, on a wildcard
/// route, a group of its own kept in the conversation map (`Portals`); a route that names the target
/// group relays into it as it is.
///
/// A group its source does not describe (no directory, or a group only the message service knows) is
/// set up with its channel's subscribers where the source lists them (`GroupSubscriberListing`: WuKongIM),
/// else with the senders seen so far; either way each later sender is added before its first message
/// (`ensureMember`), with one warning — never left without members.
public enum GroupSync {
    public static func checkpointName(target: BackendID, group: GroupID) -> String { "group:\(target):\(group)" }

    /// The lane of a target group's periodic comparisons: its own, beside the conversation's.
    public static func lane(target: BackendID, group: GroupID) -> LaneKey {
        LaneKey(backend: target, conversation: .other("group-sync", group.rawValue))
    }

    /// The target members a leg may remove from a target group: its own puppets (`prefix + user`, a
    /// non-empty prefix), never a native member nor another route's puppet. A relay-account leg removes
    /// nobody (its one account stands for every source member).
    static func puppets(of users: UserMode) -> (@Sendable (UserID) -> Bool)? {
        guard case .puppet(let prefix) = users, !prefix.isEmpty else { return nil }
        return { $0.rawValue.hasPrefix(prefix) }
    }

    /// At most this many groups are compared per round; the others wait for the next round.
    public static let maxPerRound = 200

    /// One target group that follows a source group.
    struct Subject: Hashable, Sendable {
        var source: BackendID
        var group: GroupID
        var target: BackendID
        var targetGroup: GroupID
        var route: Route
        var users: UserMode
        /// The target group is a portal's (`Portals`): `targetGroup` is then the source's id, and the
        /// target's own is the one the conversation map names.
        var portal = false

        /// The first-sight mark, and the lane of comparisons, name the target group — for a portal, the
        /// source group it stands for.
        var key: GroupID { portal ? GroupID("portal:\(source):\(group)") : targetGroup }
        var name: String { GroupSync.checkpointName(target: target, group: key) }
        var action: RelayAction { .group(source: group, target: portal ? nil : targetGroup, users: users) }
    }

    /// Target groups whose first entry is known to be queued (the store's checkpoint says so), and the
    /// groups with events since the last round (in the order first seen).
    final class Seen: Sendable {
        private struct State {
            var names: Set<String> = []
            var active: [Subject] = []
            var activeNames: Set<String> = []
        }

        private let state = Mutex(State())
        func contains(_ name: String) -> Bool { state.withLock { $0.names.contains(name) } }
        func insert(_ added: [String]) { state.withLock { $0.names.formUnion(added) } }

        func noteActive(_ subjects: [Subject]) {
            state.withLock { state in
                for subject in subjects where state.activeNames.insert(subject.name).inserted { state.active.append(subject) }
            }
        }

        func takeActive(limit: Int) -> [Subject] {
            state.withLock { state in
                let taken = Array(state.active.prefix(limit))
                state.active.removeFirst(taken.count)
                for subject in taken { state.activeNames.remove(subject.name) }
                return taken
            }
        }
    }
}

/// `groups:` in bridge.yaml.
public struct GroupSettings: Sendable, Equatable {
    public static let defaultRefreshMinutes = 60.0
    /// How often groups with events since the last round are compared again (`refresh`; nil
    /// when 0: only at first sight).
    public var refreshMs: Int64? = Int64(defaultRefreshMinutes * 60_000)

    public init(refreshMs: Int64? = Int64(defaultRefreshMinutes * 60_000)) {
        self.refreshMs = refreshMs
    }

    package static func decode(_ section: ConfigSection) -> GroupSettings {
        GroupSettings(refreshMs: ProfileSettings.decodeRefresh(section, default: GroupSettings().refreshMs))
    }
}

extension RelayEngine {
    /// Adds the `.group` entry a new message's leg needs first, when its target group was never set up: a
    /// group conversation on both sides, source and target with group directories, a target that keeps
    /// the id asked for. Marked queued in the same transaction; returns the mark's name (for `groupsSeen`).
    nonisolated func firstSightGroup(_ event: IMEvent, leg: RouteLeg, lane: LaneKey, _ tx: StoreTransaction, at now: Int64,
                                     to draft: inout OutboxDraft) throws -> String? {
        guard case .message(let message) = event.kind, let subject = groupSubject(event, leg: leg) else { return nil }
        let name = subject.name
        guard !people.groupsSeen.contains(name), try tx.checkpoint(name) == nil else { return nil }
        try tx.setCheckpoint(name, "", at: now)
        var payload = OutboxPayload(action: subject.action, route: leg.route, eventTimeMs: now, sourceConversation: event.conversation)
        // The first sender: the member a group its source does not describe is set up with.
        payload.sourceSender = message.sender
        try draft.add(payload, lane: lane, source: event.backend, eventID: event.eventID)
        return name
    }

    /// A portal whose source group was itself set up under its own id for the target's group of that id
    /// (a wildcard route the other way into a target that keeps ids: `wk:group:g1` relayed into
    /// `rc:group:g1` marks `group:rc:g1`) is that group: linked, not created again, so the conversation
    /// stays one on both sides (and a store of an earlier version, which kept only the mark, keeps it).
    nonisolated func adoptRelayedGroup(source: BackendID, group: GroupID, target: BackendID, at now: Int64, _ tx: StoreTransaction) throws -> Bool {
        guard try tx.checkpoint(GroupSync.checkpointName(target: source, group: group)) != nil,
              routes.legs(from: target, conversation: .group(group))
                .contains(where: { $0.target == source && $0.targetConversation == .group(group) }) else { return false }
        try PortalMap.link(group, on: source, to: group, on: target, at: now, tx)
        return true
    }

    /// The target group an event's leg reaches, when groups are set up for it: a group conversation on
    /// both sides, source and target with group directories, a target that keeps the id asked for.
    nonisolated func groupSubject(_ event: IMEvent, leg: RouteLeg) -> GroupSync.Subject? {
        guard event.conversation.kind == .group, leg.targetConversation.kind == .group,
              let target = backends[leg.target], target is any GroupDirectory else { return nil }
        let portal = isPortal(event, leg: leg)
        // A named group on a target that assigns ids is the operator's: relayed into as it is.
        guard portal || !target.capabilities.groupCreationAssignsID else { return nil }
        return GroupSync.Subject(source: event.backend, group: GroupID(event.conversation.id), target: leg.target,
                                 targetGroup: GroupID(leg.targetConversation.id), route: leg.route, users: leg.users, portal: portal)
    }

    /// Queues a `.group` entry for each group with events since the last round (at most
    /// `GroupSync.maxPerRound`), each in its target group's own lane; returns how many.
    @discardableResult
    public nonisolated func refreshGroups() async throws -> Int {
        let subjects = people.groupsSeen.takeActive(limit: GroupSync.maxPerRound)
        guard !subjects.isEmpty else { return 0 }
        let now = clock.nowMs()
        var draft = OutboxDraft()
        do {
            for subject in subjects { try addGroupEntry(subject, eventID: EventID("group-refresh:\(now)"), at: now, to: &draft) }
            try await queue(draft, at: now)
        } catch {
            people.groupsSeen.noteActive(subjects)
            throw error
        }
        return draft.count
    }

    /// Adds a comparison of `subject`'s target group, in its own lane (`GroupSync.lane`).
    nonisolated func addGroupEntry(_ subject: GroupSync.Subject, eventID: EventID, at now: Int64, to draft: inout OutboxDraft) throws {
        let payload = OutboxPayload(action: subject.action, route: subject.route, eventTimeMs: now, sourceConversation: .group(subject.group))
        try draft.add(payload, lane: GroupSync.lane(target: subject.target, group: subject.key), source: subject.source, eventID: eventID)
    }

    /// Every `groupSettings.refreshMs`, `refreshGroups`; returns when the task is cancelled.
    func groupLoop() async {
        guard let interval = people.groupSettings.refreshMs else { return }
        while !Task.isCancelled {
            try? await Task.sleep(nanoseconds: UInt64(interval) * 1_000_000)
            if Task.isCancelled { return }
            do {
                try await refreshGroups()
            } catch {
                logStoreError("group refresh", error)
            }
        }
    }

    /// Runs a `.group` entry: reads the source group and brings the target group up to it,
    /// members as the leg names them on the target, the leg's puppets of users who left removed. Members that are the bridge's own puppets on the
    /// source (the other direction's) are left out: the users they stand for are on the target already.
    /// With no target id (`named` nil), the group the conversation map names; where it names none, the
    /// group is created — in a portal's lane, by a migration, or on a target that keeps ids — and
    /// recorded (a comparison in its own lane never creates: the portal's lane does, ahead of the first message).
    /// A group the source does not describe is set up by live relay with the entry's sender (first
    /// sight), else left as it is. True when the target was called.
    nonisolated func syncGroup(_ group: GroupID, from source: BackendID, to named: GroupID?, users: UserMode, payload: OutboxPayload,
                               entry: OutboxEntry, delivery: Delivery, mayWrite: @Sendable () throws -> Void) async throws -> Bool {
        let live = payload.migration == nil
        let target = delivery.target.id
        let (profile, described, fromSenders) = try await sourceProfile(group, from: source, payload: payload)
        let portal = PortalMap.key(source: source, conversation: .group(group), target: target)
        let mapped = named == nil ? try await store.reading { try PortalMap.group(portal, $0) } : nil
        var id = named ?? mapped
        let leg = RouteLeg(route: payload.route, target: target, targetConversation: .group(id ?? group), users: users)
        let desired = Delivery.targetGroup(profile, user: leg.targetUser)
        guard !desired.members.isEmpty else {
            try await noteOutcome(.groupUndescribed, of: payload)
            return false
        }
        let assigns = delivery.target.capabilities.groupCreationAssignsID
        if id == nil && !assigns { id = group }
        let inPortalLane = PortalMap.source(of: entry.lane) != nil
        // A comparison of a portal not set up yet: its lane sets it up, ahead of its first message.
        if id == nil && live && !inPortalLane { return false }
        try mayWrite()
        let calls = PacedCalls(live ? nil : delivery.migrationPacing)
        // A target that assigns ids may have a group of the source's own id (made by hand under that id, or
        // relayed into by a version before portals): that one is taken, not a new one made.
        // (An id the target cannot have, such as a non-numeric NIM tid, is refused by the read: none.)
        if id == nil, let directory = delivery.target as? any GroupDirectory,
           (try? await calls.run({ try await directory.group(group) })) != nil { id = group }
        if id == nil { id = try await earlierPortal(desired, key: portal, delivery: delivery, calls: calls) }
        var create: (@Sendable (GroupProfile) async throws -> GroupID)?
        if id == nil {
            create = { [self] made in try await createPortal(made, key: portal, delivery: delivery, calls: calls) }
        }
        // Vendors that need users to exist before they join a group (NIM) get the puppets first.
        for member in desired.members { try await delivery.provision(member) }
        // Members are removed only where the source listed them (a group set up from its senders lists nobody who left).
        let removable = live && !fromSenders ? GroupSync.puppets(of: users) : nil
        let outcome = try await delivery.bringGroup(desired, id: id, calls: calls, create: create, removable: removable,
                                                    mayCreate: !(live && mapped != nil))
        if named == nil && mapped != outcome.id {
            let now = clock.nowMs()
            try await store.writing { try PortalMap.link(group, on: source, to: outcome.id, on: target, at: now, $0) }
            people.portals.remember(portal, outcome.id)
        }
        people.portals.noteMembers(desired.members, of: outcome.id, on: target)
        if !described && live { noteUndescribed(group, from: source, as: outcome.id, on: target, fromSenders: fromSenders) }
        try await noteOutcome(AccountOutcome(outcome), of: payload)
        return true
    }

    /// The group as the source gives it, without the bridge's own identities: the source's description;
    /// for a channel only the message service knows (WuKongIM without a business-server record) its
    /// subscribers; failing both, live, the message's sender (`fromSenders`: later senders join too).
    nonisolated func sourceProfile(_ group: GroupID, from source: BackendID, payload: OutboxPayload) async throws
        -> (profile: GroupProfile, described: Bool, fromSenders: Bool) {
        let live = payload.migration == nil
        let described = try await sourceGroup(group, on: source)
        var profile = described ?? GroupProfile(id: group)
        if described == nil { profile.members = live ? try await sourceSubscribers(group, on: source) : [] }
        profile.members = profile.members.filter { !routes.isBridgeIdentity($0, on: source) }
        if let owner = profile.owner, routes.isBridgeIdentity(owner, on: source) { profile.owner = nil }
        let fromSenders = live && profile.members.isEmpty
        if fromSenders, let sender = payload.sourceSender, !routes.isBridgeIdentity(sender, on: source) { profile.members = [sender] }
        return (profile, described != nil, fromSenders)
    }

    /// A live target group the source does not describe gets later senders too, and the operator one warning.
    nonisolated func noteUndescribed(_ group: GroupID, from source: BackendID, as id: GroupID, on target: BackendID, fromSenders: Bool) {
        people.portals.markFromSenders(id, on: target)
        guard people.portals.firstWarning("\(source)|\(group)|\(target)") else { return }
        let members = fromSenders ? "the senders seen so far" : "the channel's subscribers, and later senders"
        logs.relay.warning("the source does not describe this group: its target group gets \(members), each before its first message",
                           metadata: ["source": "\(source)", "group": "\(group)", "target": "\(target)", "target_group": "\(id)"])
    }

    /// The group an earlier creation for the conversation map's `key` left on the target without its id
    /// being recorded (its mark is still set): found among the owner's groups (`Delivery.earlierGroup`).
    nonisolated func earlierPortal(_ desired: GroupProfile, key: String, delivery: Delivery, calls: PacedCalls) async throws -> GroupID? {
        let target = delivery.target.id
        let pending = try await store.reading { try $0.checkpoint(PortalMap.pendingKey(key)) }.map { !$0.isEmpty } ?? false
        guard pending else { return nil }
        let taken = try await store.reading { try PortalMap.mapped(on: target, $0, legacy: [PortalMap.legacyPrefix]) }
        return try await delivery.earlierGroup(desired, taken: taken, calls: calls)
    }

    /// Creates the target group of the conversation map's `key`. The creation is marked before it is asked
    /// for: an answer lost to a crash or a timeout leaves the mark, and the next attempt looks for that
    /// group first (`earlierPortal`, `PortalMap`).
    nonisolated func createPortal(_ made: GroupProfile, key: String, delivery: Delivery, calls: PacedCalls) async throws -> GroupID {
        let target = delivery.target.id
        let now = clock.nowMs()
        try await store.writing { try $0.setCheckpoint(PortalMap.pendingKey(key), String(now), at: now) }
        guard let directory = delivery.target as? any GroupDirectory else {
            throw IMError(.unsupported, "\(target) has no group directory", isRetryable: false)
        }
        return try await calls.run { try await directory.createGroup(made) }
    }

    /// The source's description of `group`; nil when it has no group directory, cannot describe groups
    /// or does not know it.
    nonisolated func sourceGroup(_ group: GroupID, on source: BackendID) async throws -> GroupProfile? {
        guard let directory = backends[source] as? any GroupDirectory else { return nil }
        do {
            return try await directory.group(group)
        } catch let error as IMError where error.code == .unsupported {
            return nil
        }
    }

    /// The subscribers of `group`'s channel on the source, where its vendor lists them
    /// (`GroupSubscriberListing`); none where it cannot.
    nonisolated func sourceSubscribers(_ group: GroupID, on source: BackendID) async throws -> [UserID] {
        guard let listing = backends[source] as? any GroupSubscriberListing else { return [] }
        do {
            return try await listing.subscribers(of: group)
        } catch let error as IMError where error.code == .unsupported || error.code == .notFound {
            return []
        }
    }

    /// Writes what an account entry did where its migration mark asks (`MigrationMark.outcome`).
    nonisolated func noteOutcome(_ outcome: AccountOutcome, of payload: OutboxPayload) async throws {
        guard let name = payload.migration?.outcome else { return }
        let now = clock.nowMs()
        try await store.writing { try $0.setCheckpoint(name, outcome.text, at: now) }
    }
}
