import IMCore

/// Users and groups of a memory world (`UserDirectory`, `GroupDirectory`), so that a whole-account
/// migration can be tested in memory first.
///
/// Rules:
/// - `MemoryBackend` refuses, with `unsupported`, the calls the preset's adapter refuses
///   (`Capabilities.directory`: `allUsers`, `removeMembers`, `groups(of:)`), as the adapter does; the
///   world itself serves them all (`world.allUsers()`, `world.removeMembers(_:from:)`,
///   `world.groups(of:)`): it stands for the vendor's whole state, which a test sets up, changes and
///   reads through it (docs/testing-kit.md, "People, groups, deletion"); RongCloud groups keep their owner;
/// - every user and group can be listed (`allUsers`, `allGroups`); a group also exists once it has
///   members (`addMembers`), with no name;
/// - worlds whose capabilities say `groupCreationAssignsID` (the WuKong, NIM and JMessage presets) give
///   new groups ids of their own (`"100001"`, …), as those vendors do (WuKong's `group_no`, NIM `tid`,
///   JMessage `gid`); the others keep the id asked for, and refuse to create a group that exists
///   (`conflict`);
/// - `updateGroup` sets name, avatar, announcement and extra fields and adds missing members (never
///   removes one); `removeMembers` takes members out (ids that are not members are skipped); members
///   are listed sorted, the owner included;
/// - `dissolveGroup` takes the group and its members away (an unknown group is skipped); a message into
///   it afterwards is refused as `GroupSendRefusals.dissolvedGroup` says, and a `groupDissolved` event is
///   published where the vendor reports dissolutions (`Capabilities.reportsDissolution`);
/// - joins (`addMembers`, `updateGroup`) and removals publish a `membersChanged` event where the vendor
///   reports membership changes to the app server (`Capabilities.reportsMembershipChanges`: the NIM preset).
extension MemoryWorld {
    /// Whether this world's vendor assigns group ids itself.
    var assignsGroupIDs: Bool { capabilities.groupCreationAssignsID }

    func users(_ ids: [UserID]) -> [UserProfile] {
        state.withLock { state in ids.compactMap { state.users[$0] } }
    }

    func saveUser(_ profile: UserProfile) {
        state.withLock { $0.users[profile.id] = profile }
    }

    /// Every user of the world, whatever the preset's adapter can list (a test's view of the vendor).
    public func allUsers() -> [UserID] {
        state.withLock { $0.users.keys.sorted { $0 < $1 } }
    }

    func group(_ id: GroupID) -> GroupProfile? {
        state.withLock { $0.groupProfile(id) }
    }

    func createGroup(_ profile: GroupProfile) throws -> GroupID {
        try state.withLock { state in
            var stored = profile
            if assignsGroupIDs {
                stored.id = GroupID(String(100_001 + state.groups.count + state.dissolvedGroups.count))
            } else if state.groupProfile(profile.id) != nil {
                throw IMError(.conflict, "group \(profile.id) exists")
            }
            Self.put(stored, in: &state)
            return stored.id
        }
    }

    /// Puts a group under its own id, as a group that already exists on the vendor (a test's fixture:
    /// no id is assigned, whatever `groupCreationAssignsID` says, and no event is published); replaces
    /// the profile of a group of that id and adds its members.
    public func seedGroup(_ profile: GroupProfile) {
        state.withLock { Self.put(profile, in: &$0) }
    }

    static func put(_ profile: GroupProfile, in state: inout State) {
        var stored = profile
        stored.members = []
        state.groups[profile.id] = stored
        var members = Set(profile.members)
        if let owner = profile.owner { members.insert(owner) }
        state.groupMembers[profile.id, default: []].formUnion(members)
    }

    func updateGroup(_ profile: GroupProfile) throws {
        let now = clock.nowMs()
        try state.withLock { state in
            guard var stored = state.groupProfile(profile.id) else { throw IMError(.notFound, "no group \(profile.id)") }
            stored.name = profile.name ?? stored.name
            stored.avatar = profile.avatar ?? stored.avatar
            stored.announcement = profile.announcement ?? stored.announcement
            stored.owner = stored.owner ?? profile.owner
            stored.extra.merge(profile.extra) { _, new in new }
            stored.members = []
            state.groups[profile.id] = stored
            let joined = state.join(profile.members, to: profile.id)
            publishMembership(profile.id, joined: joined, left: [], by: nil, at: now, in: &state)
        }
    }

    /// Takes members out of a group, as a member leaving on the vendor would (a test's fixture: served
    /// under every preset; `MemoryBackend.removeMembers` refuses where the adapter does).
    public func removeMembers(_ members: [UserID], from id: GroupID) throws {
        let now = clock.nowMs()
        try state.withLock { state in
            guard state.groupProfile(id) != nil else { throw IMError(.notFound, "no group \(id)") }
            var seen = Set<UserID>()
            let left = members.filter { state.groupMembers[id]?.contains($0) == true && seen.insert($0).inserted }
            state.groupMembers[id]?.subtract(left)
            // Published to the members who stay and to the server's view.
            publishMembership(id, joined: [], left: left, by: nil, at: now, in: &state)
        }
    }

    /// Dissolves the group: gone from the directory, its members with it; a `groupDissolved` event is
    /// published where the vendor reports dissolutions (`Capabilities.reportsDissolution`). An unknown
    /// group is skipped.
    func dissolveGroup(_ id: GroupID, by: UserID?) {
        let now = clock.nowMs()
        state.withLock { state in
            guard state.groupProfile(id) != nil else { return }
            state.groups[id] = nil
            state.groupMembers[id] = nil
            state.dissolvedGroups.insert(id)
            guard capabilities.reportsDissolution else { return }
            Self.publish("dissolved:\(id):\(state.nextEventNumber())", .groupDissolved(group: id, by: by, at: now), in: &state)
        }
    }

    /// Whether the vendor reports membership changes to the app server (`Capabilities.reportsMembershipChanges`).
    public var reportsMembershipChanges: Bool { capabilities.reportsMembershipChanges }

    /// Publishes a `membersChanged` event where the vendor reports such changes and something changed.
    func publishMembership(_ group: GroupID, joined: [UserID], left: [UserID], by: UserID?, at now: Int64, in state: inout State) {
        guard reportsMembershipChanges, !(joined.isEmpty && left.isEmpty) else { return }
        Self.publish("members:\(group):\(state.nextEventNumber())",
                     .membersChanged(group: group, joined: joined, left: left, by: by, at: now), in: &state)
    }

    func allGroups() -> [GroupID] {
        state.withLock { Set($0.groups.keys).union($0.groupMembers.keys).sorted { $0.rawValue < $1.rawValue } }
    }

    /// The groups a user is in, whatever the preset's adapter can list (a test's view of the vendor).
    public func groups(of user: UserID) -> [GroupID] {
        state.withLock { state in
            state.groupMembers.filter { $0.value.contains(user) }.keys.sorted { $0.rawValue < $1.rawValue }
        }
    }
}

extension MemoryWorld.State {
    func groupProfile(_ id: GroupID) -> GroupProfile? {
        guard groups[id] != nil || groupMembers[id] != nil else { return nil }
        var profile = groups[id] ?? GroupProfile(id: id)
        profile.members = (groupMembers[id] ?? []).sorted { $0 < $1 }
        return profile
    }
}

extension MemoryBackend: UserDirectory, GroupMemberRemoving, GroupDissolving {
    public func dissolveGroup(_ group: GroupID) async throws { try world.faults.run(.groups) { world.dissolveGroup(group, by: nil) } }

    public func users(_ ids: [UserID]) async throws -> [UserProfile] { try world.faults.run(.users) { world.users(ids) } }

    public func saveUser(_ profile: UserProfile) async throws { try world.faults.run(.users) { world.saveUser(profile) } }

    public func allUsers() async throws -> [UserID] {
        try refuseUnless(\.listsAllUsers, "allUsers")
        return try world.faults.run(.users) { world.allUsers() }
    }

    public func group(_ id: GroupID) async throws -> GroupProfile? { try world.faults.run(.groups) { world.group(id) } }

    public func createGroup(_ profile: GroupProfile) async throws -> GroupID { try world.faults.run(.groups) { try world.createGroup(profile) } }

    public func updateGroup(_ profile: GroupProfile) async throws { try world.faults.run(.groups) { try world.updateGroup(profile) } }

    public func removeMembers(_ members: [UserID], from group: GroupID) async throws {
        try refuseUnless(\.removesMembers, "removeMembers")
        try world.faults.run(.groups) { try world.removeMembers(members, from: group) }
    }

    public func allGroups() async throws -> [GroupID] { try world.faults.run(.groups) { world.allGroups() } }

    public func groups(of user: UserID) async throws -> [GroupID] {
        try refuseUnless(\.listsGroupsOfUser, "groups(of:)")
        return try world.faults.run(.groups) { world.groups(of: user) }
    }

    /// Refuses a directory call the preset's adapter does not serve, as the adapter does (`unsupported`).
    private func refuseUnless(_ call: KeyPath<DirectorySupport, Bool>, _ name: String) throws {
        guard world.capabilities.directory[keyPath: call] else {
            throw IMError(.unsupported, "\(name) is not served under this preset (Capabilities.directory)")
        }
    }
}
