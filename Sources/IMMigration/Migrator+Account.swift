import Foundation
import IMCore
import IMStore
import IMRelay
import IMOutbox

/// The account part of a migration: users, then groups, before the history (docs/migration.md).
///
/// - **Users** keep their ids (or become `prefix + id` with a puppet prefix). A user missing on the
///   target is created with the source's profile; an existing one whose name, avatar or shared extra
///   fields differ is updated; otherwise it is left alone (`skipped`). Senders met in the history that
///   were not migrated up front are migrated before their first copy.
/// - **Groups** are created on the target with name, avatar, announcement, owner and members; the id the
///   target gives (NIM `tid`, JMessage `gid`; the same id elsewhere) is kept in the store
///   (`migrate-group:<source>:<group>-><target>`), so a rerun finds the group, adds the members it lacks
///   and updates what changed, and the history goes into that group. A creation whose answer was lost
///   (crash, timeout) is recognised on the rerun among the owner's groups by name before anything is
///   created again.
extension Migrator {
    static func groupMapName(_ plan: MigrationPlan, _ group: GroupID) -> String {
        "migrate-group:\(plan.source):\(group.rawValue)->\(plan.target)"
    }

    /// Migrates the users and groups the plan needs; returns the conversation pairs with each group
    /// that was not renamed explicitly pointed at its group on the target. A group that could not be
    /// created on a target that gives ids of its own has nowhere for its history: that conversation is
    /// left to the rerun (`blocked`).
    func migrateAccount(_ plan: MigrationPlan, _ pairs: [(ConversationRef, ConversationRef)]) async throws
        -> [(ConversationRef, ConversationRef)] {
        var groups: [GroupID] = []
        var explicit: [GroupID: GroupID] = [:]
        for (from, to) in pairs where from.kind == .group {
            let group = GroupID(from.id)
            if !groups.contains(group) { groups.append(group) }
            if to != from && to.kind == .group { explicit[group] = GroupID(to.id) }
        }
        for group in plan.extraGroups where !groups.contains(group) { groups.append(group) }

        var profiles: [GroupID: GroupProfile] = [:]
        if !groups.isEmpty {
            if let directory = source as? any GroupDirectory {
                for group in groups {
                    do {
                        if let profile = try await withRetry({ try await directory.group(group) }) { profiles[group] = profile }
                    } catch let error as IMError where error.code == .unsupported {
                        note("\(source.capabilities.vendor) cannot describe its groups (\(error.message)): groups are not created")
                        break
                    }
                }
            } else {
                note("\(source.capabilities.vendor) has no group directory: groups are not created, their history goes to the same ids")
            }
        }

        var users: [UserID] = []
        var seen = Set<UserID>()
        func add(_ user: UserID) { if seen.insert(user).inserted { users.append(user) } }
        plan.extraUsers.forEach(add)
        for (from, _) in pairs where from.kind == .direct { from.participants.forEach(add) }
        for group in groups { if let profile = profiles[group] { profile.owner.map(add); profile.members.forEach(add) } }
        if case .puppet = plan.users {
            try await readAhead(users, plan)
            for user in users { await bringUser(user, plan) }
        } else {
            note("users are not migrated in relay mode: every message is sent by the relay account")
        }

        var targets: [GroupID: GroupID] = [:]
        let assigns = target.capabilities.groupCreationAssignsID
        for group in groups {
            if let target = await migrateGroup(group, profiles[group], explicit: explicit[group], plan) {
                targets[group] = target
            } else if assigns && explicit[group] == nil && !plan.dryRun && profiles[group] != nil {
                blocked.insert(.group(group))
            }
        }
        return pairs.map { from, to in
            guard from.kind == .group, to == from, let target = targets[GroupID(from.id)] else { return (from, to) }
            return (from, .group(target))
        }
    }

    func note(_ text: String) {
        if !account.notes.contains(text) { account.notes.append(text) }
    }

    /// Reads source and target profiles in batches of 100, so that a large account costs few calls.
    func readAhead(_ users: [UserID], _ plan: MigrationPlan) async throws {
        var start = 0
        while start < users.count {
            let batch = Array(users[start..<min(start + 100, users.count)])
            start += 100
            if let directory = source as? any UserDirectory {
                do {
                    let found = try await withRetry { try await directory.users(batch) }
                    for user in batch { sourceProfiles[user] = .some(found.first { $0.id == user }) }
                } catch let error as IMError where error.code == .unsupported {
                    note("\(source.capabilities.vendor) cannot read user profiles: users are created with their ids as names")
                }
            }
            if let directory = target as? any UserDirectory {
                let ids = batch.map(plan.targetUser)
                do {
                    let found = try await onTarget { try await directory.users(ids) }
                    for id in ids { targetProfiles[id] = .some(found.first { $0.id == id }) }
                } catch let error as IMError where error.code == .unsupported {}
            }
        }
    }

    /// Migrates `user`'s profile once per run; lanes that meet the same sender wait for the first.
    func bringUser(_ user: UserID, _ plan: MigrationPlan) async {
        guard case .puppet = plan.users else { return }
        if let work = userWork[user] { return await work.value }
        let work = Task { await self.migrateUser(user, plan) }
        userWork[user] = work
        await work.value
    }

    func migrateUser(_ user: UserID, _ plan: MigrationPlan) async {
        let targetID = plan.targetUser(user)
        do {
            var profile: UserProfile?
            if let known = sourceProfiles[user] {
                profile = known
            } else if let directory = source as? any UserDirectory {
                do {
                    profile = try await withRetry { try await directory.users([user]).first }
                } catch let error as IMError where error.code == .unsupported {
                    note("\(source.capabilities.vendor) cannot read user profiles: users are created with their ids as names")
                }
            }
            var wanted = profile ?? UserProfile(id: user, name: user.rawValue)
            wanted.id = targetID
            let desired = wanted
            let directory = target as? any UserDirectory
            var existing: UserProfile?? = nil
            if let directory { existing = try await existingUser(targetID, on: directory) }
            switch (directory, existing) {
            case (let directory?, .some(.some(let existing))):
                if let profile, profile.differs(from: existing) {
                    if !plan.dryRun { try await onTarget { try await directory.saveUser(desired) } }
                    account.usersUpdated += 1
                } else {
                    account.usersSkipped += 1
                }
            case (let directory?, .some(.none)):
                if !plan.dryRun { try await onTarget { try await directory.saveUser(desired) } }
                account.usersCreated += 1
            case (let directory?, .none):
                // The target cannot say whether the user exists: written (created or brought up to date) unseen.
                if !plan.dryRun { try await onTarget { try await directory.saveUser(desired) } }
                account.usersProvisioned += 1
            case (nil, _):
                if let provisioning = target as? any UserProvisioning, target.capabilities.support(.userProvisioning).isNative {
                    if !plan.dryRun { try await onTarget { try await provisioning.ensureUser(desired) } }
                    account.usersProvisioned += 1
                } else {
                    account.usersSkipped += 1
                }
            }
            if !plan.dryRun { engine?.deliveries[target.id]?.markProvisioned(targetID) }
        } catch {
            account.failures.append("user \(user): \(error)")
            failedUsers.insert(user)
        }
    }

    /// The target's profile of `id`: `.some(nil)` when the user is not there, nil when the target cannot
    /// say (its server API reads no profiles).
    func existingUser(_ id: UserID, on directory: any UserDirectory) async throws -> UserProfile?? {
        if let known = targetProfiles[id] { return .some(known) }
        do {
            let found = try await onTarget { try await directory.users([id]).first }
            targetProfiles[id] = .some(found)
            return .some(found)
        } catch let error as IMError where error.code == .unsupported {
            return nil
        }
    }

    /// Creates or brings up to date one group on the target; returns its id there (nil when it could not
    /// be created: then its history goes where the plan says and the failure is in the report).
    func migrateGroup(_ group: GroupID, _ profile: GroupProfile?, explicit: GroupID?, _ plan: MigrationPlan) async -> GroupID? {
        let mapName = Self.groupMapName(plan, group)
        do {
            let mapped = try await store.reading { try $0.checkpoint(mapName) }.flatMap { $0.isEmpty ? nil : GroupID($0) }
            var targetID = explicit ?? mapped
            guard let directory = target as? any GroupDirectory else {
                note("\(target.capabilities.vendor) has no group directory: groups are not created on it")
                return targetID
            }
            guard let profile else {
                note("group \(group): \(source.capabilities.vendor) does not describe it (no profile, no members); its history goes to group:\(targetID?.rawValue ?? group.rawValue)")
                return targetID
            }
            let assigns = target.capabilities.groupCreationAssignsID
            if targetID == nil && !assigns { targetID = group }
            // A target that assigns ids may still have a group of this id (one a route relays into): that one.
            // (An id the target cannot have, such as a non-numeric NIM tid, is refused by the read: none.)
            if targetID == nil, assigns, let found = try? await onTarget({ try await directory.group(group) }), found != nil { targetID = group }
            let desired = Delivery.targetGroup(profile, user: plan.targetUser)
            if targetID == nil, !plan.dryRun, try await store.reading({ try $0.checkpoint(mapName + ":pending") }).map({ !$0.isEmpty }) == true {
                targetID = try await earlierGroup(desired, plan)
            }
            // `bringGroup` decides create or update (live relay's `.group` entries use it too); a creation goes
            // through `createGroup` here, which keeps the id the target gave.
            let store = self.store, clock = self.clock
            let outcome = try await delivery.bringGroup(desired, id: targetID, calls: MigratorCalls(migrator: self), dryRun: plan.dryRun) { made in
                try await store.writing { try $0.setCheckpoint(mapName + ":pending", String(clock.nowMs()), at: clock.nowMs()) }
                return try await self.createGroup(made, on: directory, plan)
            }
            switch outcome {
            case .unchanged(let id), .updated(let id, _):
                if case .updated(_, let added) = outcome {
                    account.groupsUpdated += 1
                    account.membersAdded += added
                } else {
                    account.groupsSkipped += 1
                }
                if !plan.dryRun && mapped != id { try record(id, for: mapName) }
                return id
            case .created(let id):
                account.groupsCreated += 1
                if plan.dryRun { return targetID }
                try record(id, for: mapName)
                return id
            }
        } catch {
            account.failures.append("group \(group): \(error)")
            return explicit
        }
    }

    /// Creates the group; a retryable failure (which may have created it) looks for the group among the
    /// owner's before trying again.
    func createGroup(_ profile: GroupProfile, on directory: any GroupDirectory, _ plan: MigrationPlan) async throws -> GroupID {
        var attempt = 0
        while true {
            do {
                await pacing.call()
                return try await directory.createGroup(profile)
            } catch {
                try await pause(after: error, attempt: &attempt)
                if target.capabilities.groupCreationAssignsID, let found = try await earlierGroup(profile, plan) {
                    return found
                }
            }
        }
    }

    /// A group an earlier attempt created without recording it: among the owner's groups on the target,
    /// one with the same name that no other source group of this migration is mapped to.
    func earlierGroup(_ profile: GroupProfile, _ plan: MigrationPlan) async throws -> GroupID? {
        guard let owner = profile.owner, let directory = target as? any GroupDirectory else { return nil }
        let candidates: [GroupID]
        do {
            candidates = try await onTarget { try await directory.groups(of: owner) }
        } catch let error as IMError where error.code == .unsupported {
            return nil
        }
        let names = (plan.extraGroups + plan.conversations.filter { $0.0.kind == .group }.map { GroupID($0.0.id) }).map { Self.groupMapName(plan, $0) }
        let taken = Set(try await store.reading { tx in try names.compactMap { try tx.checkpoint($0) } })
        for candidate in candidates where !taken.contains(candidate.rawValue) {
            if let found = try await onTarget({ try await directory.group(candidate) }), found.name == profile.name { return candidate }
        }
        return nil
    }

    /// The migration's account calls (paced, retried in place) as `Delivery.bringGroup` makes them.
    struct MigratorCalls: TargetCalls {
        let migrator: Migrator
        func run<T: Sendable>(_ body: @Sendable () async throws -> T) async throws -> T { try await migrator.onTarget(body) }
    }

    func record(_ id: GroupID, for mapName: String) throws {
        try store.transaction { tx in
            try tx.setCheckpoint(mapName, id.rawValue, at: clock.nowMs())
            try tx.setCheckpoint(mapName + ":pending", "", at: clock.nowMs())
        }
    }
}
