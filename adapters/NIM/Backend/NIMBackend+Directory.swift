import Foundation
import IMCore

/// Users and teams through NIM's v1 account and team APIs (docs/adapters/nim.md, "Users and teams").
///
/// - Users: `name` ⇄ `name`, `avatar` ⇄ `icon`; `sign`, `email`, `birth`, `mobile`, `gender` and `ex` are
///   kept in `extra` under those names and written back from there (an `ex` that is not a string goes as
///   its JSON text; other `extra` keys have no NIM field and are not sent). `users` reads `getUinfos`
///   200 accids at a time and answers with the ids as asked (NIM stores accids lower-cased).
/// - Teams (advanced teams): `name` ⇄ `tname`, `avatar` ⇄ `icon`, `announcement` ⇄ `announcement`,
///   `owner` ⇄ `owner`, members = owner, managers, then members as `/team/query.action` lists them; the
///   writable team fields `intro`, `custom`, `joinmode`, `beinvitemode`, `invitemode`, `uptinfomode`,
///   `upcustommode` and `maxusers` (sent as `teamMemberLimit`) live in `extra`. NIM assigns the `tid`:
///   `createGroup` answers with it. Members are added with `magree=0` (no invitation to accept).
/// - Before creating or adding, every account involved is looked up: a missing one is `not_found`
///   and nothing is created (NIM itself would create the team and leave the member out).
/// - NIM has no call that lists every account or every team: `allUsers` and `allGroups` throw
///   `unsupported`; `groups(of:)` is `/team/joinTeams.action`.
/// - `removeMembers` is `/team/kick.action` as the owner, 200 at a time, for the listed members other than
///   the owner (NIM does not kick a team's owner); `dissolveGroup` is `/team/remove.action` as the owner
///   (a team that does not exist is left alone).
extension NIMBackend: UserDirectory, GroupMemberRemoving, GroupDissolving {
    /// The profile fields besides name and icon, under NIM's names.
    public static let userExtraFields = ["sign", "email", "birth", "mobile", "gender", "ex"]
    /// The team fields besides name, icon, announcement, owner and members, under NIM's names.
    public static let teamExtraFields = ["intro", "custom", "joinmode", "beinvitemode", "invitemode", "uptinfomode",
                                         "upcustommode", "maxusers"]
    /// The invitation text `team/create` and `team/add` require (`msg`); with `magree=0` nobody sees it.
    static let teamInvitation = "imbridge"
    /// `team/create` takes the owner plus at most 199 members; the rest go through `team/add`.
    static let membersAtCreation = 199

    // MARK: UserDirectory

    public func users(_ ids: [UserID]) async throws -> [UserProfile] {
        var seen = Set<String>()
        let accids = ids.map { $0.rawValue.lowercased() }.filter { seen.insert($0).inserted }
        guard !accids.isEmpty else { return [] }
        var found: [String: JSONValue] = [:]
        for info in try await client.userInfos(accids) {
            if let accid = NIMLenient.string(info["accid"])?.lowercased() { found[accid] = info }
        }
        return ids.compactMap { id in found[id.rawValue.lowercased()].map { Self.userProfile(id, $0) } }
    }

    public func saveUser(_ profile: UserProfile) async throws {
        let fields = Self.userFields(profile)
        let created = try await client.createUser(accid: profile.id.rawValue, fields: fields)
        if !created, !fields.isEmpty { try await client.updateUserInfo(accid: profile.id.rawValue, fields: fields) }
        _ = state.withLock { $0.knownUsers.insert(profile.id.rawValue.lowercased()) }
    }

    public func allUsers() async throws -> [UserID] {
        throw IMError(.unsupported, "NIM's server API cannot list an app's accounts: getUinfos reads only accids already known "
            + "(take the users from teams, conversations or a list)")
    }

    static func userProfile(_ id: UserID, _ info: JSONValue) -> UserProfile {
        var extra: [String: JSONValue] = [:]
        for key in userExtraFields { if let value = info[key], value != .null { extra[key] = value } }
        return UserProfile(id: id, name: NIMLenient.string(info["name"]), avatar: NIMLenient.string(info["icon"]), extra: extra)
    }

    static func userFields(_ profile: UserProfile) -> [(String, String)] {
        var fields: [(String, String)] = []
        if let name = profile.name { fields.append(("name", name)) }
        if let avatar = profile.avatar { fields.append(("icon", avatar)) }
        for key in userExtraFields { if let value = profile.extra[key].flatMap(formValue) { fields.append((key, value)) } }
        return fields
    }

    /// A form value from a neutral value: text as is, numbers and booleans as text, objects and arrays as
    /// their JSON text; null is not sent.
    static func formValue(_ value: JSONValue) -> String? {
        switch value {
        case .null: nil
        case .object, .array: value.jsonString()
        default: value.stringValue
        }
    }

    // MARK: GroupDirectory

    public func group(_ id: GroupID) async throws -> GroupProfile? {
        guard Int64(id.rawValue) != nil else { return nil }  // NIM tids are numbers
        let infos: [JSONValue]
        do {
            infos = try await client.queryTeams([id.rawValue], withMembers: true)
        } catch let error as IMError where error.code == .notFound {
            return nil
        }
        return infos.first { NIMLenient.string($0["tid"]) == id.rawValue }.map(Self.groupProfile)
    }

    public func createGroup(_ profile: GroupProfile) async throws -> GroupID {
        guard let owner = profile.owner else {
            throw IMError(.invalidArgument, "NIM needs an owner to create a team; group \(profile.id) has none")
        }
        let members = Self.distinct(profile.members.filter { $0.rawValue.lowercased() != owner.rawValue.lowercased() })
        try await requireAccounts([owner] + members)
        var fields: [(String, String)] = [
            ("tname", profile.name.flatMap { $0.isEmpty ? nil : $0 } ?? profile.id.rawValue), ("owner", owner.rawValue),
            ("members", NIMClient.jsonList(members.prefix(Self.membersAtCreation).map(\.rawValue))),
            ("msg", Self.teamInvitation), ("magree", "0"),
            ("joinmode", profile.extra["joinmode"].flatMap(Self.formValue) ?? "0"),
        ]
        if let avatar = profile.avatar { fields.append(("icon", avatar)) }
        if let announcement = profile.announcement { fields.append(("announcement", announcement)) }
        fields += Self.teamExtraForm(profile.extra, skipping: ["joinmode"])
        let created = try await client.createTeam(fields)
        var failed = created.failed
        for chunk in Array(members.dropFirst(Self.membersAtCreation)).nimChunks(of: 200) {
            failed += try await client.addTeamMembers(tid: created.tid, owner: owner.rawValue, members: chunk.map(\.rawValue),
                                                      msg: Self.teamInvitation)
        }
        guard failed.isEmpty else {
            throw IMError(.notFound, "NIM created team \(created.tid) but did not add \(failed.joined(separator: ", "))",
                          details: ["group": created.tid])
        }
        return GroupID(created.tid)
    }

    public func updateGroup(_ profile: GroupProfile) async throws {
        guard let current = try await group(profile.id), let owner = current.owner else {
            throw IMError(.notFound, "NIM team \(profile.id) does not exist")
        }
        var fields: [(String, String)] = []
        if let name = profile.name, !name.isEmpty { fields.append(("tname", name)) }
        if let avatar = profile.avatar { fields.append(("icon", avatar)) }
        if let announcement = profile.announcement { fields.append(("announcement", announcement)) }
        fields += Self.teamExtraForm(profile.extra, skipping: [])
        if !fields.isEmpty { try await client.updateTeam([("tid", profile.id.rawValue), ("owner", owner.rawValue)] + fields) }
        let present = Set(current.members.map { $0.rawValue.lowercased() })
        let missing = Self.distinct(profile.members.filter { !present.contains($0.rawValue.lowercased()) })
        guard !missing.isEmpty else { return }
        try await requireAccounts(missing)
        var failed: [String] = []
        for chunk in missing.nimChunks(of: 200) {
            failed += try await client.addTeamMembers(tid: profile.id.rawValue, owner: owner.rawValue, members: chunk.map(\.rawValue),
                                                      msg: Self.teamInvitation)
        }
        guard failed.isEmpty else {
            throw IMError(.notFound, "NIM did not add \(failed.joined(separator: ", ")) to team \(profile.id)")
        }
    }

    public func removeMembers(_ members: [UserID], from group: GroupID) async throws {
        guard let current = try await self.group(group), let owner = current.owner else { return }
        let listed = Set(current.members.map { $0.rawValue.lowercased() })
        let leaving = Self.distinct(members.filter { listed.contains($0.rawValue.lowercased()) && $0.rawValue.lowercased() != owner.rawValue.lowercased() })
        for chunk in leaving.nimChunks(of: 200) {
            try await client.kickTeamMembers(tid: group.rawValue, owner: owner.rawValue, members: chunk.map(\.rawValue))
        }
    }

    public func dissolveGroup(_ group: GroupID) async throws {
        guard let current = try await self.group(group), let owner = current.owner else { return }
        try await client.removeTeam(tid: group.rawValue, owner: owner.rawValue)
    }

    public func allGroups() async throws -> [GroupID] {
        throw IMError(.unsupported, "NIM's server API cannot list an app's teams: /team/joinTeams.action lists one account's "
            + "teams only (use groups(of:) for each known user)")
    }

    public func groups(of user: UserID) async throws -> [GroupID] {
        try await client.joinedTeams(accid: user.rawValue).compactMap { NIMLenient.string($0["tid"]).map { GroupID($0) } }
    }

    static func groupProfile(_ info: JSONValue) -> GroupProfile {
        let owner = NIMLenient.string(info["owner"])
        func accids(_ key: String) -> [String] {
            (info[key]?.arrayValue ?? []).compactMap { NIMLenient.string($0) ?? NIMLenient.string($0["accid"]) }
        }
        let members = distinct(([owner].compactMap { $0 } + accids("admins") + accids("members")).map { UserID($0) })
        var extra: [String: JSONValue] = [:]
        for key in teamExtraFields { if let value = info[key], value != .null { extra[key] = value } }
        return GroupProfile(id: GroupID(NIMLenient.string(info["tid"]) ?? ""), name: NIMLenient.string(info["tname"]),
                            avatar: NIMLenient.string(info["icon"]), owner: owner.map { UserID($0) }, members: members,
                            announcement: NIMLenient.string(info["announcement"]), extra: extra)
    }

    /// The writable team fields of `extra` as form fields (`maxusers` goes as `teamMemberLimit`).
    static func teamExtraForm(_ extra: [String: JSONValue], skipping: Set<String>) -> [(String, String)] {
        teamExtraFields.filter { !skipping.contains($0) }.compactMap { key in
            extra[key].flatMap(formValue).map { (key == "maxusers" ? "teamMemberLimit" : key, $0) }
        }
    }

    /// Throws `not_found` naming the accounts of `users` that NIM does not have.
    func requireAccounts(_ users: [UserID]) async throws {
        let known = Set(try await client.userInfos(users.map(\.rawValue)).compactMap { NIMLenient.string($0["accid"])?.lowercased() })
        let missing = users.filter { !known.contains($0.rawValue.lowercased()) }
        guard missing.isEmpty else {
            throw IMError(.notFound, "NIM has no account \(missing.map(\.rawValue).joined(separator: ", ")); save the users first",
                          details: ["users": missing.map(\.rawValue).joined(separator: ",")])
        }
    }

    static func distinct(_ users: [UserID]) -> [UserID] {
        var seen = Set<String>()
        return users.filter { seen.insert($0.rawValue.lowercased()).inserted }
    }
}
