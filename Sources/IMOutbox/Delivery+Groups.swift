import IMCore

/// Calls to a target, wrapped: migration paces and retries each one (`Migrator.onTarget`); live relay
/// makes them directly (its lane retries the whole entry).
public protocol TargetCalls: Sendable {
    func run<T: Sendable>(_ body: @Sendable () async throws -> T) async throws -> T
}

/// Each call made once, as it is.
public struct DirectCalls: TargetCalls {
    public init() {}
    public func run<T: Sendable>(_ body: @Sendable () async throws -> T) async throws -> T { try await body() }
}

/// Each call paced by a migration's pacing (`MigrationPacing.call`, the target's global limits) when
/// there is one: the account entries a migration queues (`RelayAction.user`, `.group`).
public struct PacedCalls: TargetCalls {
    let pacing: MigrationPacing?
    public init(_ pacing: MigrationPacing?) { self.pacing = pacing }
    public func run<T: Sendable>(_ body: @Sendable () async throws -> T) async throws -> T {
        await pacing?.call()
        return try await body()
    }
}

/// Groups on a target: the one place a group is created there or brought up to date, for live relay's
/// first sight of a group (`RelayAction.group`) and migration's group phase (`Migrator.migrateGroup`).
extension Delivery {
    /// What `bringGroup` did.
    public enum GroupOutcome: Sendable, Equatable {
        case created(GroupID)
        case updated(GroupID, membersAdded: Int)
        case unchanged(GroupID)

        public var id: GroupID {
            switch self {
            case .created(let id), .updated(let id, _), .unchanged(let id): id
            }
        }
    }

    /// A source group as it should be on the target: each member through `user` (once), the owner —
    /// else the first member — through `user` and first.
    public static func targetGroup(_ source: GroupProfile, user: (UserID) -> UserID) -> GroupProfile {
        var desired = source
        var members: [UserID] = []
        for member in source.members.map(user) where !members.contains(member) { members.append(member) }
        desired.owner = (source.owner ?? source.members.first).map(user)
        if let owner = desired.owner, !members.contains(owner) { members.insert(owner, at: 0) }
        desired.members = members
        return desired
    }

    /// Brings `desired` onto the target. When `id` names a group the target has: a name, avatar or
    /// announcement that differs is set and missing members are added (`updateGroup`, which never removes
    /// one); members that `removable` claims (live relay: the route's own puppets) and `desired` does not
    /// list are removed (`GroupMemberRemoving`; a target without it keeps them) — `.updated` — or nothing
    /// differs — `.unchanged`. Migration passes no `removable`: it never removes anyone. Otherwise the group is created with `id`
    /// (else `desired.id`) through `create` when given (migration's, which looks for a creation whose
    /// answer was lost), else `createGroup` — `.created` with the id the target gave; unless `mayCreate`
    /// is false (a group the conversation map names that the target cannot describe, such as a WuKongIM
    /// channel with no business-server group: relayed into as it is) — then `.unchanged`. `calls` wraps each
    /// target call; `dryRun` reads and decides but writes nothing.
    public func bringGroup(_ desired: GroupProfile, id: GroupID?, calls: some TargetCalls = DirectCalls(), dryRun: Bool = false,
                           create: (@Sendable (GroupProfile) async throws -> GroupID)? = nil,
                           removable: (@Sendable (UserID) -> Bool)? = nil, mayCreate: Bool = true) async throws -> GroupOutcome {
        guard let directory = target as? any GroupDirectory else {
            throw IMError(.unsupported, "\(target.id) has no group directory", isRetryable: false)
        }
        var desired = desired
        if let id { desired.id = id }
        if let id, let existing = try await calls.run({ try await directory.group(id) }) {
            let missing = desired.members.filter { !existing.members.contains($0) }
            let changed = [(desired.name, existing.name), (desired.avatar, existing.avatar), (desired.announcement, existing.announcement)]
                .contains { wanted, has in wanted != nil && wanted != has }
            let leaving = removable.map { claims in existing.members.filter { claims($0) && !desired.members.contains($0) } } ?? []
            let remover = directory as? any GroupMemberRemoving
            guard !missing.isEmpty || changed || (!leaving.isEmpty && remover != nil) else { return .unchanged(id) }
            let update = desired
            if !dryRun {
                if !missing.isEmpty || changed { try await calls.run { try await directory.updateGroup(update) } }
                if let remover, !leaving.isEmpty { try await calls.run { try await remover.removeMembers(leaving, from: id) } }
            }
            return .updated(id, membersAdded: missing.count)
        }
        guard mayCreate else { return .unchanged(desired.id) }
        if dryRun { return .created(desired.id) }
        let made = desired
        if let create { return .created(try await create(made)) }
        return .created(try await calls.run { try await directory.createGroup(made) })
    }
}
