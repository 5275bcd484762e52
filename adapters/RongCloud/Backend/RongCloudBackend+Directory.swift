import IMCore
import IMHTTP

/// Users and groups through the classic Server API (docs/adapters/rongcloud.md §7).
///
/// - Users: `/user/info.json` reads name (`userName`), avatar (`userPortrait`) and `createTime` (kept in
///   `extra`, read-only); `saveUser` registers an unknown user with `/user/getToken.json` and refreshes a
///   known one with `/user/refresh.json`. The classic API has no free-form user field, so `extra` is not
///   written (the separately enabled profile hosting, `/user/profile/set.json`, is not used).
/// - Groups: a RongCloud group is an id, a name and its members (`/group/create.json`, `/group/join.json`,
///   `/group/quit.json`, `/group/refresh.json`, `/group/user/query.json`); it has no owner, avatar or announcement outside
///   profile hosting (`/entrust/group/*`), which this backend does not use. The name is read from a
///   member's `/user/group/query.json` (the only read that carries it). A group without members does not
///   exist.
/// - RongCloud cannot enumerate users or groups: `allUsers` and `allGroups` throw `unsupported`.
extension RongCloudBackend: UserDirectory, GroupMemberRemoving, GroupDissolving {
    // MARK: UserDirectory

    public func users(_ ids: [UserID]) async throws -> [UserProfile] {
        var profiles: [UserProfile] = []
        for id in ids {
            if let profile = try await user(id) { profiles.append(profile) }
        }
        return profiles
    }

    /// Registers an unknown user (`ensureUser`) or refreshes a known one with `/user/refresh.json`, both with
    /// the profile as RongCloud takes it (`RongCloudCodec.fitted`: a name cut to 64 characters, a portrait over
    /// 1024 bytes left out, so the stored one stays). A refresh that would change nothing is not sent: a cut
    /// name always differs from its source's, and would otherwise be written again every profile round.
    public func saveUser(_ profile: UserProfile) async throws {
        try RongCloudCodec.checkId(profile.id.rawValue, "userId")
        guard let existing = try await user(profile.id) else {
            try await ensureUser(profile)
            return
        }
        let fitted = RongCloudCodec.fitted(profile)
        let name = fitted.name.flatMap { $0 == existing.name ? nil : $0 }
        let avatar = fitted.avatar.flatMap { $0 == existing.avatar ? nil : $0 }
        guard name != nil || avatar != nil else { return }
        var form = FormBody()
        form.append("userId", profile.id.rawValue)
        form.append("name", name)
        form.append("portraitUri", avatar)
        try await client.post(RCPaths.userRefresh, form: form)
    }

    public func allUsers() async throws -> [UserID] {
        throw IMError(.unsupported, "RongCloud's Server API cannot list an app's users; give the users to migrate, or take them from groups")
    }

    /// One user's profile, nil when RongCloud does not know the user.
    func user(_ id: UserID) async throws -> UserProfile? {
        let info: RCUserInfoResponse
        do {
            info = try await client.post(RCPaths.userInfo, form: FormBody(items: [("userId", id.rawValue)]), as: RCUserInfoResponse.self)
        } catch let error as IMError where error.code == .notFound {
            return nil
        }
        var extra: [String: JSONValue] = [:]
        if let created = info.createTime, !created.isEmpty { extra["createTime"] = .string(created) }
        return UserProfile(id: id, name: info.userName.flatMap { $0.isEmpty ? nil : $0 },
                           avatar: info.userPortrait.flatMap { $0.isEmpty ? nil : $0 }, extra: extra)
    }

    // MARK: GroupDirectory

    public func group(_ id: GroupID) async throws -> GroupProfile? {
        let members = try await members(of: id)
        guard let first = members.first else { return nil }
        let name = try await userGroups(first).first { $0.id == id.rawValue }?.name
        return GroupProfile(id: id, name: name.flatMap { $0.isEmpty ? nil : $0 }, members: members)
    }

    /// `/group/create.json` with the first 1000 members (the owner first when given), then
    /// `/group/join.json` for the rest, 1000 at a time. RongCloud lets the caller choose the id.
    public func createGroup(_ profile: GroupProfile) async throws -> GroupID {
        let members = Self.memberList(profile)
        guard !members.isEmpty else {
            throw IMError(.invalidArgument, "RongCloud creates a group with its members: group \(profile.id) names none")
        }
        guard members.count <= RCGroupLimits.membersPerGroup else {
            throw IMError(.limitExceeded, "a RongCloud group has at most \(RCGroupLimits.membersPerGroup) members; \(profile.id) has \(members.count)")
        }
        let name = profile.name ?? profile.id.rawValue
        let chunks = stride(from: 0, to: members.count, by: RCGroupLimits.usersPerCall).map {
            Array(members[$0..<min($0 + RCGroupLimits.usersPerCall, members.count)])
        }
        for (index, chunk) in chunks.enumerated() {
            var form = FormBody()
            for member in chunk { form.append("userId", member.rawValue) }
            form.append("groupId", profile.id.rawValue)
            form.append("groupName", name)
            try await client.post(index == 0 ? RCPaths.groupCreate : RCPaths.groupJoin, form: form)
        }
        return profile.id
    }

    /// Renames with `/group/refresh.json` when a name is given and joins the members RongCloud does not
    /// list yet; never removes anyone. Avatar, owner and announcement have no place in the classic API.
    public func updateGroup(_ profile: GroupProfile) async throws {
        let current = try await members(of: profile.id)
        guard !current.isEmpty else { throw IMError(.notFound, "RongCloud group \(profile.id) has no members (it does not exist)") }
        if let name = profile.name {
            try await client.post(RCPaths.groupRefresh, form: FormBody(items: [("groupId", profile.id.rawValue), ("groupName", name)]))
        }
        let known = Set(current)
        let missing = Self.memberList(profile).filter { !known.contains($0) }
        guard known.count + missing.count <= RCGroupLimits.membersPerGroup else {
            throw IMError(.limitExceeded, "a RongCloud group has at most \(RCGroupLimits.membersPerGroup) members; \(profile.id) would have \(known.count + missing.count)")
        }
        for start in stride(from: 0, to: missing.count, by: RCGroupLimits.usersPerCall) {
            var form = FormBody()
            for member in missing[start..<min(start + RCGroupLimits.usersPerCall, missing.count)] { form.append("userId", member.rawValue) }
            form.append("groupId", profile.id.rawValue)
            try await client.post(RCPaths.groupJoin, form: form)
        }
    }

    /// `/group/quit.json` for those of `members` the group lists, 1000 at a time (docs/adapters/rongcloud.md,
    /// "Groups in live relay"). A group whose last member quits no longer exists.
    public func removeMembers(_ members: [UserID], from group: GroupID) async throws {
        let current = Set(try await self.members(of: group))
        var seen = Set<UserID>()
        let leaving = members.filter { current.contains($0) && seen.insert($0).inserted }
        for start in stride(from: 0, to: leaving.count, by: RCGroupLimits.usersPerCall) {
            var form = FormBody()
            for member in leaving[start..<min(start + RCGroupLimits.usersPerCall, leaving.count)] { form.append("userId", member.rawValue) }
            form.append("groupId", group.rawValue)
            try await client.post(RCPaths.groupQuit, form: form)
        }
    }

    /// `/group/dismiss.json` with the group and a member as the operator (`userId`, required): afterwards
    /// the group has no members. A group without members does not exist: nothing to dismiss.
    public func dissolveGroup(_ group: GroupID) async throws {
        guard let operatorID = try await members(of: group).first else { return }
        try await client.post(RCPaths.groupDismiss, form: FormBody(items: [("userId", operatorID.rawValue), ("groupId", group.rawValue)]))
    }

    public func allGroups() async throws -> [GroupID] {
        throw IMError(.unsupported, "RongCloud's Server API cannot list an app's groups, only a user's (/user/group/query.json); use groups(of:)")
    }

    public func groups(of user: UserID) async throws -> [GroupID] {
        try await userGroups(user).map { GroupID($0.id) }
    }

    // MARK: helpers

    /// `/group/user/query.json`: the member ids, empty for a group RongCloud does not know.
    func members(of group: GroupID) async throws -> [UserID] {
        let response = try await client.post(RCPaths.groupMembers, form: FormBody(items: [("groupId", group.rawValue)]),
                                             as: RCGroupMembersResponse.self)
        return response.users.map { UserID($0.id) }
    }

    /// Every page of `/user/group/query.json` (1000 a page, until a short page).
    func userGroups(_ user: UserID) async throws -> [RCUserGroupsResponse.Group] {
        var groups: [RCUserGroupsResponse.Group] = []
        var page = 1
        while true {
            let form = FormBody(items: [("userId", user.rawValue), ("page", String(page)), ("size", String(RCGroupLimits.maxPageSize))])
            let response = try await client.post(RCPaths.userGroups, form: form, as: RCUserGroupsResponse.self)
            groups += response.groups
            guard response.groups.count == RCGroupLimits.maxPageSize else { return groups }
            page += 1
        }
    }

    /// The owner first (when given), then the members, without repeats.
    static func memberList(_ profile: GroupProfile) -> [UserID] {
        var seen = Set<UserID>()
        return ([profile.owner].compactMap { $0 } + profile.members).filter { seen.insert($0).inserted }
    }
}
