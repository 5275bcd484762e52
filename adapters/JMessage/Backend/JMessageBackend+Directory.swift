import Foundation
import IMCore

/// Users and groups through JMessage REST v1 (docs/adapters/jmessage.md, "Users and groups").
///
/// - Users: `name` ⇄ `nickname`, `avatar` ⇄ `avatar` (a `media_id` there: a URL is uploaded first and
///   a `media_id` reads as a URL, `JMessageBackend+Hosting.swift`);
///   `birthday`, `gender`, `signature`, `region`, `address` and `extras` (a JSON object) are kept in
///   `extra` under those names and written back from there; other `extra` keys have no JMessage field and
///   are not sent. A `birthday` read back as `yyyy-MM-dd HH:mm:ss` is written as its `yyyy-MM-dd` part.
///   Users of another app (`name#appKey`) are left out of `users` and cannot be saved from here.
/// - Groups: `name` ⇄ `name`, `avatar` ⇄ `avatar`, `owner` = the member with `flag` 1, members in the
///   order `GET /v1/groups/{gid}/members/` lists them; `desc`, `flag` (create only) and
///   `MaxMemberCount` (read only) live in `extra`. JMessage REST has no group announcement: an
///   `announcement` is not carried. JMessage assigns the `gid`: `createGroup` answers with it.
///   `createGroup` makes the admin a member too (every group message is sent as the admin, and a group
///   message's sender must be in the group: docs/adapters/jmessage.md, "Conversations"); `group(id)`
///   leaves the admin out of `members` unless it owns the group.
/// - `allUsers` and `allGroups` page the admin listings (`count` 500); `groups(of:)` is
///   `GET /v1/users/{username}/groups/` (an unknown user is in no group).
extension JMessageBackend: UserDirectory, GroupMemberRemoving, GroupDissolving {
    /// The profile fields besides nickname and avatar, under JMessage's names.
    public static let userExtraFields = ["birthday", "gender", "signature", "region", "address", "extras"]
    /// The group fields besides name, avatar, owner and members, under JMessage's names.
    public static let groupExtraFields = ["desc", "flag", "MaxMemberCount"]

    // MARK: UserDirectory

    public func users(_ ids: [UserID]) async throws -> [UserProfile] {
        var found: [UserProfile] = []
        for id in ids {
            let (username, appKey) = codec.identity.vendorUser(id)
            guard appKey == nil, let json = try await client.user(username) else { continue }
            var profile = Self.userProfile(id, json)
            profile.avatar = try await readableAvatar(profile.avatar)
            found.append(profile)
        }
        return found
    }

    public func saveUser(_ profile: UserProfile) async throws {
        let username = try ownUsername(profile.id)
        var profile = profile
        profile.avatar = try await hostedAvatar(profile.avatar)
        let fields = try Self.userFields(profile)
        var registration = fields
        registration["username"] = .string(username)
        registration["password"] = .string(puppetPassword)
        let created = try await client.registerUser(registration)
        if !created, !fields.isEmpty { try await client.updateUser(username, fields: fields) }
    }

    public func allUsers() async throws -> [UserID] {
        var users: [UserID] = []
        while true {
            let page = try await client.userPage(start: users.count)
            users += page.usernames.map { UserID($0) }
            if page.usernames.isEmpty || users.count >= page.total { return users }
        }
    }

    static func userProfile(_ id: UserID, _ json: JSONValue) -> UserProfile {
        var extra: [String: JSONValue] = [:]
        for key in userExtraFields { if let value = json[key], value != .null { extra[key] = value } }
        return UserProfile(id: id, name: json["nickname"]?.stringValue, avatar: json["avatar"]?.stringValue, extra: extra)
    }

    /// The JSON fields of a registration or `PUT /v1/users/{username}`.
    static func userFields(_ profile: UserProfile) throws -> [String: JSONValue] {
        var fields: [String: JSONValue] = [:]
        if let name = profile.name { fields["nickname"] = .string(name) }
        if let avatar = profile.avatar { fields["avatar"] = .string(avatar) }
        for key in userExtraFields {
            guard let value = profile.extra[key], value != .null else { continue }
            switch key {
            case "birthday":
                fields[key] = value.stringValue.map { JSONValue.string(String($0.prefix(10))) } ?? value
            case "gender":
                fields[key] = value.int64Value.map(JSONValue.int) ?? value
            case "extras":
                if case .object = value {
                    fields[key] = value
                } else if let text = value.stringValue, let object = try? JSONValue.parse(text), case .object = object {
                    fields[key] = object
                } else {
                    throw IMError(.invalidArgument, "JMessage `extras` must be a JSON object; \(profile.id) has \(value.jsonString())")
                }
            default:
                fields[key] = value
            }
        }
        return fields
    }

    func ownUsername(_ user: UserID) throws -> String {
        let (username, appKey) = codec.identity.vendorUser(user)
        guard appKey == nil else {
            throw IMError(.invalidArgument, "\(user) belongs to app \(appKey!); only users of \(codec.identity.appKey) can be written")
        }
        return username
    }

    // MARK: GroupDirectory

    public func group(_ id: GroupID) async throws -> GroupProfile? {
        guard Int64(id.rawValue) != nil, let json = try await client.group(gid: id.rawValue) else { return nil }  // gids are numbers
        let members: [JSONValue]
        do {
            members = try await client.groupMembers(gid: id.rawValue)
        } catch let error as IMError where error.vendorCode == String(JMessageErrors.groupNotFound.code) {
            return nil
        }
        let owner = members.first { $0["flag"]?.int64Value == 1 }?["username"]?.stringValue ?? json["owner_username"]?.stringValue
        // The admin is the bridge's own sending account, not one of the group's people (unless it owns the group).
        let admin = client.settings.admin
        let people = members.compactMap { $0["username"]?.stringValue }.filter { $0 != admin || $0 == owner }
        var extra: [String: JSONValue] = [:]
        for key in Self.groupExtraFields { if let value = json[key], value != .null { extra[key] = value } }
        let avatar = try await readableAvatar(json["avatar"]?.stringValue.flatMap { $0.isEmpty ? nil : $0 })
        return GroupProfile(id: id, name: json["name"]?.stringValue, avatar: avatar,
                            owner: owner.map { UserID($0) }, members: people.map { UserID($0) },
                            announcement: nil, extra: extra)
    }

    public func createGroup(_ profile: GroupProfile) async throws -> GroupID {
        guard let owner = profile.owner else {
            throw IMError(.invalidArgument, "JMessage needs an owner to create a group; group \(profile.id) has none")
        }
        let ownerName = try ownUsername(owner)
        var seen: Set<String> = [ownerName]
        // The admin every send goes out as joins the group: a group message's sender must be a member.
        let members = try (profile.members.map(ownUsername) + [client.settings.admin]).filter { seen.insert($0).inserted }
        var body: [String: JSONValue] = [
            "owner_username": .string(ownerName), "name": .string(profile.name.flatMap { $0.isEmpty ? nil : $0 } ?? profile.id.rawValue),
            "members_username": .array(members.map(JSONValue.string)),
        ]
        if let avatar = try await hostedAvatar(profile.avatar) { body["avatar"] = .string(avatar) }
        if let desc = profile.extra["desc"], desc != .null { body["desc"] = desc }
        if let flag = profile.extra["flag"]?.int64Value { body["flag"] = .int(flag) }
        return GroupID(try await client.createGroup(body))
    }

    public func updateGroup(_ profile: GroupProfile) async throws {
        guard let current = try await group(profile.id) else { throw IMError(.notFound, "JMessage group \(profile.id) does not exist") }
        var fields: [String: JSONValue] = [:]
        if let name = profile.name, !name.isEmpty { fields["name"] = .string(name) }
        if let avatar = try await hostedAvatar(profile.avatar) { fields["avatar"] = .string(avatar) }
        if let desc = profile.extra["desc"], desc != .null { fields["desc"] = desc }
        if !fields.isEmpty { try await client.updateGroup(gid: profile.id.rawValue, fields: fields) }
        var seen = Set(current.members.map(\.rawValue) + [client.settings.admin])
        let missing = try profile.members.map(ownUsername).filter { seen.insert($0).inserted }
        if !missing.isEmpty { try await client.updateMembers(gid: profile.id.rawValue, add: missing) }
    }

    /// `POST /v1/groups/{gid}/members {"remove":[…]}` for those of `members` the group lists (never the
    /// owner, nor the admin every send goes out as).
    public func removeMembers(_ members: [UserID], from group: GroupID) async throws {
        guard let current = try await self.group(group) else { return }
        var seen = Set<String>()
        let leaving = try members.filter { current.members.contains($0) && $0 != current.owner }.map(ownUsername)
            .filter { $0 != client.settings.admin && seen.insert($0).inserted }
        guard !leaving.isEmpty else { return }
        try await client.updateMembers(gid: group.rawValue, remove: leaving)
    }

    /// `DELETE /v1/groups/{gid}`: the members get JMessage's dissolve event; a group that does not exist is
    /// left alone.
    public func dissolveGroup(_ group: GroupID) async throws {
        try await client.deleteGroup(gid: group.rawValue)
    }

    public func allGroups() async throws -> [GroupID] {
        var groups: [GroupID] = []
        while true {
            let page = try await client.groupPage(start: groups.count)
            groups += page.gids.map { GroupID($0) }
            if page.gids.isEmpty || groups.count >= page.total { return groups }
        }
    }

    public func groups(of user: UserID) async throws -> [GroupID] {
        let (username, appKey) = codec.identity.vendorUser(user)
        guard appKey == nil else { return [] }
        do {
            return try await client.groupsOfUser(username).map { GroupID($0) }
        } catch let error as IMError where error.vendorCode == String(JMessageErrors.userNotFound.code) {
            return []
        }
    }
}
