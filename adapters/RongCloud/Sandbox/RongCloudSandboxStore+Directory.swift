import IMCore
import IMHTTP
import IMSandbox
import RongCloud

/// The classic group endpoints (docs/adapters/rongcloud.md §6–§7). A group is an id, a name and its
/// members in join order; it exists while it has members. Every call takes repeated or comma-joined
/// `userId`s (≤ 1000 per call, ≤ 3000 members per group → 1502); ids are ≤ 64 characters of
/// `A-Z a-z 0-9 + = - _` (1002 otherwise).
extension RongCloudSandboxStore {
    struct Group: Codable, Hashable {
        var name: String
        var members: [String]
    }

    /// `groupName` at most 128 characters (the sandbox's choice; the vendor's limit is not documented).
    static let maxGroupNameLength = 128

    /// Answers one of `RCPaths.groupPaths`.
    public func directory(_ path: String, _ form: FormBody) throws(RongCloudSandboxError) -> HTTPResponseData {
        switch path {
        case RCPaths.groupCreate, RCPaths.groupJoin:
            try join(form, create: path == RCPaths.groupCreate)
            return .json(RCErrorEnvelope(code: 200, errorMessage: nil))
        case RCPaths.groupQuit:
            try quit(form)
            return .json(RCErrorEnvelope(code: 200, errorMessage: nil))
        case RCPaths.groupRefresh:
            let groupId = try Self.id(form, "groupId")
            let name = try Self.groupName(form, required: true) ?? ""
            try mutate { (state: inout State) throws(RongCloudSandboxError) in
                guard state.groups[groupId] != nil else { throw .parameter("\(RongCloudRefusal.groupNotFound): \(groupId)") }
                state.groups[groupId]?.name = name
            }
            return .json(RCErrorEnvelope(code: 200, errorMessage: nil))
        case RCPaths.groupMembers:
            let groupId = try Self.id(form, "groupId")
            let members = state.withLock { $0.groups[groupId]?.members ?? [] }
            return .json(RCGroupMembersResponse(users: members.map(RCGroupMembersResponse.Member.init(id:))))
        case RCPaths.userGroups:
            return .json(try userGroups(form))
        case RCPaths.groupDismiss:
            // `userId` (the operator) and `groupId`, both required: the group and all its members are gone
            // (a group publish still takes the id, as it takes any group without members: Conversations).
            let groupId = try Self.id(form, "groupId")
            _ = try Self.id(form, "userId")
            try mutate { (state: inout State) throws(RongCloudSandboxError) in state.groups[groupId] = nil }
            return .json(RCErrorEnvelope(code: 200, errorMessage: nil))
        default:
            throw RongCloudSandboxError(404, "no API at \(path)")
        }
    }

    /// `/group/create.json` (`groupName` required) and `/group/join.json` (`groupName` optional; when
    /// given it renames the group). Both create the group when it does not exist and add the members
    /// it does not have yet, in the order given.
    private func join(_ form: FormBody, create: Bool) throws(RongCloudSandboxError) {
        let groupId = try Self.id(form, "groupId")
        let users = Self.splitRecipients(form.values("userId"))
        guard !users.isEmpty else { throw .parameter("userId is required") }
        guard users.count <= RCGroupLimits.usersPerCall else {
            throw RongCloudSandboxError(RongCloudErrors.quantityExceeded, "userId may name at most \(RCGroupLimits.usersPerCall)")
        }
        for user in users { try Self.checkId(user, "userId") }
        let name = try Self.groupName(form, required: create)
        try mutate { (state: inout State) throws(RongCloudSandboxError) in
            var group = state.groups[groupId] ?? Group(name: name ?? "", members: [])
            var present = Set(group.members)
            let added = users.filter { present.insert($0).inserted }
            guard group.members.count + added.count <= RCGroupLimits.membersPerGroup else {
                throw RongCloudSandboxError(RongCloudErrors.quantityExceeded,
                                            "a group has at most \(RCGroupLimits.membersPerGroup) members")
            }
            group.members += added
            if let name { group.name = name }
            state.groups[groupId] = group
        }
    }

    /// `POST /_sandbox/groups` (test-only control, `SandboxGroupSeed`): the group of that id gets exactly
    /// this owner and these members (RongCloud keeps no owner: the owner is its first member).
    func seed(_ seed: SandboxGroupSeed) throws(RongCloudSandboxError) {
        try Self.checkId(seed.id, "groupId")
        for user in seed.everyone { try Self.checkId(user, "userId") }
        try mutate { (state: inout State) throws(RongCloudSandboxError) in
            state.groups[seed.id] = Group(name: seed.name ?? state.groups[seed.id]?.name ?? seed.id, members: seed.everyone)
        }
    }

    /// `/group/quit.json`: `userId` (repeated or comma-joined, ≤ 1000) and `groupId`. Users that are not
    /// members are skipped; a group left without members no longer exists (it has no members to list).
    private func quit(_ form: FormBody) throws(RongCloudSandboxError) {
        let groupId = try Self.id(form, "groupId")
        let users = Self.splitRecipients(form.values("userId"))
        guard !users.isEmpty else { throw .parameter("userId is required") }
        guard users.count <= RCGroupLimits.usersPerCall else {
            throw RongCloudSandboxError(RongCloudErrors.quantityExceeded, "userId may name at most \(RCGroupLimits.usersPerCall)")
        }
        for user in users { try Self.checkId(user, "userId") }
        let leaving = Set(users)
        try mutate { (state: inout State) throws(RongCloudSandboxError) in
            guard var group = state.groups[groupId] else { return }
            group.members.removeAll { leaving.contains($0) }
            state.groups[groupId] = group.members.isEmpty ? nil : group
        }
    }

    /// `/user/group/query.json`: the user's groups ordered by id; `page` (from 1) and `size` (default 50,
    /// at most 1000); without `page` the first 5000.
    private func userGroups(_ form: FormBody) throws(RongCloudSandboxError) -> RCUserGroupsResponse {
        let userId = try Self.id(form, "userId")
        let page = try Self.positive(form, "page")
        let size = try Self.positive(form, "size") ?? RCGroupLimits.defaultPageSize
        guard size <= RCGroupLimits.maxPageSize else { throw .parameter("size must be at most \(RCGroupLimits.maxPageSize)") }
        let all = state.withLock { state in
            state.groups.filter { $0.value.members.contains(userId) }.sorted { $0.key < $1.key }
                .map { RCUserGroupsResponse.Group(id: $0.key, name: $0.value.name) }
        }
        guard let page else { return RCUserGroupsResponse(groups: Array(all.prefix(5000))) }
        return RCUserGroupsResponse(groups: Array(all.dropFirst((page - 1) * size).prefix(size)))
    }

    private static func id(_ form: FormBody, _ field: String) throws(RongCloudSandboxError) -> String {
        let value = try required(form, field)
        try checkId(value, field)
        return value
    }

    private static func checkId(_ value: String, _ field: String) throws(RongCloudSandboxError) {
        guard !value.isEmpty, value.utf8.count <= 64,
              value.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || "+=-_".contains($0)) }) else {
            throw .parameter("\(field) must be 1 to 64 characters of A-Z a-z 0-9 + = - _")
        }
    }

    private static func groupName(_ form: FormBody, required: Bool) throws(RongCloudSandboxError) -> String? {
        guard let name = form["groupName"], !name.isEmpty else {
            if required { throw .parameter("groupName is required") }
            return nil
        }
        guard name.count <= maxGroupNameLength else { throw .parameter("groupName must be at most \(maxGroupNameLength) characters") }
        return name
    }

    private static func positive(_ form: FormBody, _ field: String) throws(RongCloudSandboxError) -> Int? {
        guard let text = form[field], !text.isEmpty else { return nil }
        guard let value = Int(text), value > 0 else { throw .parameter("\(field) must be a positive integer") }
        return value
    }

    /// Groups as `/_sandbox/users`-style introspection: id, name, members.
    public var groups: [(id: String, name: String, members: [String])] {
        state.withLock { $0.groups.map { (id: $0.key, name: $0.value.name, members: $0.value.members) }.sorted { $0.id < $1.id } }
    }
}
