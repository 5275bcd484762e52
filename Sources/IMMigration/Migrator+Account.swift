import Foundation
import IMCore
import IMStore
import IMRelay
import IMOutbox

/// The account part of a migration: users, then groups, before the history (docs/migration.md).
///
/// Both go through the outbox like the history: each user is a `.user` entry in its puppet's profile
/// lane, each group a `.group` entry in the group's own lane, run by the migration's engine (or by a
/// bridge on the same store that holds the lane) with the relay's retries, fences, dead letters and the
/// target's pacing. The executor writes what each entry did in a checkpoint the report reads
/// (`AccountOutcome`); the migration itself calls no target (a dry run reads through `Delivery`, and
/// writes nothing).
///
/// - **Users** keep their ids (or become `prefix + id` with a puppet prefix). A user missing on the
///   target is created with the source's profile; an existing one whose name, avatar or shared extra
///   fields differ is updated; otherwise it is left alone (`skipped`). Senders met in the history that
///   were not migrated up front are migrated before their first copy.
/// - **Groups** are created on the target with name, avatar, announcement, owner and members; the id the
///   target gives (NIM `tid`, JMessage `gid`; the same id elsewhere) is kept in the conversation map
///   (`PortalMap`) that live relay reads too, so a rerun finds the group, adds the members it lacks and
///   updates what changed, and the history goes into that group. A creation whose answer was lost
///   (crash, timeout) is recognised on the rerun among the owner's groups by name before anything is
///   created again.
extension Migrator {
    /// Migration's own group map of earlier versions; read once into the conversation map.
    static func groupMapName(_ plan: MigrationPlan, _ group: GroupID) -> String {
        "\(PortalMap.legacyPrefix)\(plan.source):\(group.rawValue)->\(plan.target)"
    }

    /// The prefix of the account entries' outcome checkpoints and their migration mark.
    static func accountRun(_ plan: MigrationPlan) -> String { "migrate-account:\(plan.source)->\(plan.target)" }

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
        let profiles = try await readGroups(groups)

        var users: [UserID] = []
        var seen = Set<UserID>()
        func add(_ user: UserID) { if seen.insert(user).inserted { users.append(user) } }
        plan.extraUsers.forEach(add)
        for (from, _) in pairs where from.kind == .direct { from.participants.forEach(add) }
        for group in groups { if let profile = profiles[group] { profile.owner.map(add); profile.members.forEach(add) } }
        if case .puppet = plan.users {
            try await readAhead(users)
            if plan.dryRun {
                for user in users { await previewUser(user, plan) }
            } else {
                await bringUsers(users, plan)
            }
        } else {
            note("users are not migrated in relay mode: every message is sent by the relay account")
        }

        var targets: [GroupID: GroupID] = [:]
        var queued: [(GroupID, RelayEngine.AccountItem)] = []
        let assigns = target.capabilities.groupCreationAssignsID
        for group in groups {
            let mapped = try await mappedGroup(group, plan)
            guard target is any GroupDirectory else {
                note("\(target.capabilities.vendor) has no group directory: groups are not created on it")
                targets[group] = explicit[group] ?? mapped
                continue
            }
            guard profiles[group] != nil else {
                let id = explicit[group] ?? mapped
                note("group \(group): \(source.capabilities.vendor) does not describe it (no profile, no members); its history goes to group:\(id?.rawValue ?? group.rawValue)")
                targets[group] = id
                continue
            }
            if plan.dryRun {
                targets[group] = await previewGroup(group, profiles[group]!, id: explicit[group] ?? mapped, plan)
                continue
            }
            let mark = MigrationMark(run: Self.accountRun(plan), outcome: "\(Self.accountRun(plan)):group:\(group.rawValue)")
            // A group the target gives an id of its own is set up in its portal's lane, one after the other
            // with live relay's first sight of it (one group however both meet it).
            let lane = explicit[group] == nil && target.capabilities.groupCreationAssignsID
                ? PortalMap.lane(target: plan.target, source: plan.source, group: group)
                : GroupSync.lane(target: plan.target, group: explicit[group] ?? group)
            queued.append((group, RelayEngine.AccountItem(action: .group(source: group, target: explicit[group], users: plan.users), lane: lane, mark: mark)))
        }
        for (group, outcome) in try await runAccount(queued.map(\.1), plan) {
            let group = queued[group].0
            switch outcome {
            case .success(.groupCreated(let id)):
                account.groupsCreated += 1
                targets[group] = id
            case .success(.groupUpdated(let id, let added)):
                account.groupsUpdated += 1
                account.membersAdded += added
                targets[group] = id
            case .success(.groupUnchanged(let id)):
                account.groupsSkipped += 1
                targets[group] = id
            case .success:
                note("group \(group): \(source.capabilities.vendor) does not describe it (no profile, no members)")
            case .failure(let reason):
                account.failures.append("group \(group): \(reason)")
            }
        }
        for group in groups where targets[group] == nil && assigns && explicit[group] == nil && !plan.dryRun && profiles[group] != nil {
            blocked.insert(.group(group))
        }
        return pairs.map { from, to in
            guard from.kind == .group, to == from, let target = targets[GroupID(from.id)] else { return (from, to) }
            return (from, .group(target))
        }
    }

    func note(_ text: String) {
        if !account.notes.contains(text) { account.notes.append(text) }
    }

    /// The source's description of each group (none for a source without a group directory).
    func readGroups(_ groups: [GroupID]) async throws -> [GroupID: GroupProfile] {
        var profiles: [GroupID: GroupProfile] = [:]
        guard !groups.isEmpty else { return profiles }
        guard let directory = source as? any GroupDirectory else {
            note("\(source.capabilities.vendor) has no group directory: groups are not created, their history goes to the same ids")
            return profiles
        }
        for group in groups {
            do {
                if let profile = try await withRetry({ try await directory.group(group) }) { profiles[group] = profile }
            } catch let error as IMError where error.code == .unsupported {
                note("\(source.capabilities.vendor) cannot describe its groups (\(error.message)): groups are not created")
                break
            }
        }
        return profiles
    }

    /// The target group the conversation map names for `group` (migration's map of earlier versions is
    /// read into it once).
    func mappedGroup(_ group: GroupID, _ plan: MigrationPlan) async throws -> GroupID? {
        let key = PortalMap.key(source: plan.source, conversation: .group(group), target: plan.target)
        let legacy = Self.groupMapName(plan, group)
        let (mapped, old) = try await store.reading { tx in (try PortalMap.group(key, tx), try PortalMap.group(legacy, tx)) }
        if let mapped { return mapped }
        guard let old else { return nil }
        let now = clock.nowMs()
        try await store.writing { try PortalMap.record(old, for: key, at: now, $0) }
        return old
    }

    /// Reads source profiles in batches of 100, so that a large account costs few calls.
    func readAhead(_ users: [UserID]) async throws {
        guard let directory = source as? any UserDirectory else { return }
        var start = 0
        while start < users.count {
            let batch = Array(users[start..<min(start + 100, users.count)])
            start += 100
            do {
                let found = try await withRetry { try await directory.users(batch) }
                for user in batch { sourceProfiles[user] = .some(found.first { $0.id == user }) }
            } catch let error as IMError where error.code == .unsupported {
                note("\(source.capabilities.vendor) cannot read user profiles: users are created with their ids as names")
                return
            }
        }
    }

    /// Migrates `user`'s profile once per run; lanes that meet the same sender wait for the first.
    func bringUser(_ user: UserID, _ plan: MigrationPlan) async {
        guard case .puppet = plan.users, !plan.dryRun else { return }
        await bringUsers([user], plan)
    }

    /// Queues a `.user` entry for each of `users` not migrated yet this run and waits for them; counts.
    func bringUsers(_ users: [UserID], _ plan: MigrationPlan) async {
        var waits: [Task<Void, Never>] = users.compactMap { userWork[$0] }
        let fresh = users.filter { userWork[$0] == nil }
        if !fresh.isEmpty {
            let work = Task { await self.migrateUsers(fresh, plan) }
            for user in fresh { userWork[user] = work }
            waits.append(work)
        }
        for wait in waits { await wait.value }
    }

    func migrateUsers(_ users: [UserID], _ plan: MigrationPlan) async {
        var items: [RelayEngine.AccountItem] = []
        for user in users {
            let (desired, known) = await desiredUser(user, plan)
            let mark = MigrationMark(run: Self.accountRun(plan), outcome: "\(Self.accountRun(plan)):user:\(user.rawValue)")
            items.append(RelayEngine.AccountItem(action: .user(profile: desired, known: known),
                                                 lane: ProfileCheckpoint.lane(target: plan.target, puppet: desired.id), mark: mark))
        }
        let outcomes: [(Int, Result<AccountOutcome, AccountFailure>)]
        do {
            outcomes = try await runAccount(items, plan)
        } catch {
            for user in users {
                account.failures.append("user \(user): \(error)")
                failedUsers.insert(user)
            }
            return
        }
        for (index, outcome) in outcomes {
            switch outcome {
            case .success(.userCreated): account.usersCreated += 1
            case .success(.userUpdated): account.usersUpdated += 1
            case .success(.userProvisioned): account.usersProvisioned += 1
            case .success: account.usersSkipped += 1
            case .failure(let reason):
                account.failures.append("user \(users[index]): \(reason)")
                failedUsers.insert(users[index])
            }
        }
    }

    /// The profile `user` should have on the target, and whether the source described it.
    func desiredUser(_ user: UserID, _ plan: MigrationPlan) async -> (UserProfile, Bool) {
        var profile: UserProfile?
        if let known = sourceProfiles[user] {
            profile = known
        } else if let directory = source as? any UserDirectory {
            do {
                profile = try await withRetry { try await directory.users([user]).first }
            } catch let error as IMError where error.code == .unsupported {
                note("\(source.capabilities.vendor) cannot read user profiles: users are created with their ids as names")
            } catch {}
            sourceProfiles[user] = .some(profile)
        }
        var desired = profile ?? UserProfile(id: user, name: user.rawValue)
        desired.id = plan.targetUser(user)
        return (desired, profile != nil)
    }

    /// Why an account entry did not do its work: its dead letter's reason.
    struct AccountFailure: Error { var reason: String }

    /// Queues `items`, lets the engine run their lanes and waits for each to end; returns, by index, what
    /// each did (its outcome checkpoint) or why it failed (its dead letter).
    func runAccount(_ items: [RelayEngine.AccountItem], _ plan: MigrationPlan) async throws -> [(Int, Result<AccountOutcome, AccountFailure>)] {
        guard !items.isEmpty, let engine else { return [] }
        let names = items.compactMap(\.mark.outcome)
        let now = clock.nowMs()
        try await store.writing { tx in for name in names { try tx.setCheckpoint(name, "", at: now) } }
        let route = Route(from: RouteEndpoint(backend: plan.source, kind: .group, id: "*"), to: RouteEndpoint(backend: plan.target, kind: .group, id: "*"),
                          direction: .forward, usersOnTarget: plan.users, media: plan.media)
        let ids = try await engine.queueAccount(items, route: route, source: plan.source)
        await engine.admit(lanes: Set(items.map(\.lane)))
        try await engine.waitUntilFinished(ids)
        let entries = Dictionary(try await store.reading { try $0.entries(ids: ids) }.map { ($0.id, $0) }, uniquingKeysWith: { a, _ in a })
        var results: [(Int, Result<AccountOutcome, AccountFailure>)] = []
        for (index, id) in ids.enumerated() {
            if let entry = entries[id], entry.state == .dead {
                results.append((index, .failure(AccountFailure(reason: entry.lastError ?? "dead letter"))))
                continue
            }
            let text = try await store.reading { [name = items[index].mark.outcome ?? ""] in try $0.checkpoint(name) } ?? ""
            results.append((index, AccountOutcome(text: text).map { .success($0) } ?? .failure(AccountFailure(reason: "no outcome recorded"))))
        }
        return results
    }
}
