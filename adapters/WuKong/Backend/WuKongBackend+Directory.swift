import Foundation
import IMCore

/// Users and groups (docs/adapters/wukong.md §6). WuKongIM stores channels, subscribers and tokens but
/// no profile: names, avatars, notices and group ownership belong to the business server, so these
/// calls go to its TangSengDaoDao-shaped routes (`WKDirectoryPaths`), which keep the WuKongIM channel
/// in step themselves (a created group is a channel of type 2 with its members as subscribers).
///
/// - Users: `GET /v1/users/{uid}` → `name`; `avatar` is the business server's avatar route
///   (`/v1/users/{uid}/avatar`) when `is_upload_avatar` is 1; every other field stays in `extra`.
///   `saveUser` registers the uid with WuKongIM (`/user/token`, as every session does) and sends
///   `name` and the `extra` fields the self-update takes (`PUT /v1/user/current`, as the user).
///   An avatar is an image upload at the business server; it is not written.
/// - Groups: the business server gives the id (`group_no`); `group` reads `/detail` (`name`, `notice` →
///   announcement, the rest → `extra`) and `/members` (role 1 → owner); `avatar` is the group's avatar
///   route. Updates act as the creator: one `PUT /v1/groups/{no}` per changed field, then
///   `POST …/members` with the missing members.
/// - Neither WuKongIM nor the business server's user API can enumerate users or groups: `allUsers` and
///   `allGroups` throw `unsupported`. A user's groups are read from the user's conversations
///   (`groups(of:)`, WuKongBackend+GroupSearch.swift).
extension WuKongBackend: UserDirectory, GroupMemberRemoving, GroupDissolving {
    // MARK: UserDirectory

    public func users(_ ids: [UserID]) async throws -> [UserProfile] {
        let session = try await session(UserID(settings.serviceUID))
        var profiles: [UserProfile] = []
        for id in ids {
            guard let object = try await businessObject("GET", WKDirectoryPaths.user(id.rawValue), session: session) else { continue }
            var extra = object
            for key in ["uid", "name", "is_upload_avatar"] { extra[key] = nil }
            let name = object["name"]?.stringValue.flatMap { $0.isEmpty ? nil : $0 }
            let avatar = object["is_upload_avatar"]?.int64Value == 1
                ? client.businessURL + WKDirectoryPaths.userAvatar(id.rawValue) : nil
            profiles.append(UserProfile(id: id, name: name, avatar: avatar, extra: extra))
        }
        return profiles
    }

    public func saveUser(_ profile: UserProfile) async throws {
        let session = try await session(profile.id)
        var fields = profile.extra.filter { WKDirectoryPaths.userFields.contains($0.key) }
        if let name = profile.name { fields["name"] = .string(name) }
        guard !fields.isEmpty else { return }
        _ = try await client.business("PUT", WKDirectoryPaths.currentUser, session: session, json: try WuKongJSON.encode(fields))
    }

    public func allUsers() async throws -> [UserID] {
        throw IMError(.unsupported, "WuKongIM's server API cannot list users, and the business server's user routes read one user at a time; give the users to migrate")
    }

    // MARK: GroupDirectory

    public func group(_ id: GroupID) async throws -> GroupProfile? {
        let session = try await session(UserID(settings.serviceUID))
        guard let detail = try await businessObject("GET", WKDirectoryPaths.groupDetail(id.rawValue), session: session) else { return nil }
        let members = try await memberRows(of: id, session: session)
        var extra = detail
        for key in ["group_no", "name", "notice"] { extra[key] = nil }
        return GroupProfile(id: id, name: detail["name"]?.stringValue.flatMap { $0.isEmpty ? nil : $0 },
                            avatar: client.businessURL + WKDirectoryPaths.groupAvatar(id.rawValue),
                            owner: members.first { $0.role == WKDirectoryPaths.creatorRole }.map { UserID($0.uid) },
                            members: members.map { UserID($0.uid) },
                            announcement: detail["notice"]?.stringValue.flatMap { $0.isEmpty ? nil : $0 }, extra: extra)
    }

    /// `POST /v1/group/create` as the owner (the first member when no owner is given); the business
    /// server answers the group with its `group_no`. A notice is set afterwards.
    public func createGroup(_ profile: GroupProfile) async throws -> GroupID {
        guard let owner = profile.owner ?? profile.members.first else {
            throw IMError(.invalidArgument, "a WuKong group is created by its owner: group \(profile.id) names no owner and no member")
        }
        var members = profile.members.filter { $0 != owner }.map(\.rawValue)
        // The business server refuses a group with no members besides its creator (群成员不能为空, docs/adapters/wukong.md):
        // a group of one (a portal set up from its first sender) gets the bridge's service account too.
        if members.isEmpty && owner.rawValue != settings.serviceUID { members = [settings.serviceUID] }
        let session = try await session(owner)
        for member in members { _ = try await self.session(UserID(member)) }
        let data = try await client.business("POST", WKDirectoryPaths.groupCreate, session: session,
                                             json: try WuKongJSON.encode(WKGroupCreateRequest(name: profile.name ?? "", members: members)))
        guard let number = (try? JSONValue.parse(data))?["group_no"]?.stringValue, !number.isEmpty else {
            throw IMError(.malformedPayload, "WuKong \(WKDirectoryPaths.groupCreate) answered without group_no",
                          vendorMessage: String(decoding: data.prefix(300), as: UTF8.self))
        }
        let id = GroupID(number)
        if let notice = profile.announcement, !notice.isEmpty {
            try await setGroupField("notice", notice, of: id, session: session)
        }
        return id
    }

    /// Name and notice set (one call each, as the creator), missing members added; nobody is removed.
    public func updateGroup(_ profile: GroupProfile) async throws {
        guard let current = try await group(profile.id) else {
            throw IMError(.notFound, "WuKong group \(profile.id) does not exist at the business server")
        }
        let actor = current.owner ?? UserID(settings.serviceUID)
        let session = try await session(actor)
        if let name = profile.name, name != current.name { try await setGroupField("name", name, of: profile.id, session: session) }
        if let notice = profile.announcement, notice != current.announcement {
            try await setGroupField("notice", notice, of: profile.id, session: session)
        }
        let known = Set(current.members)
        var seen = Set<UserID>()
        let missing = ([profile.owner].compactMap { $0 } + profile.members).filter { !known.contains($0) && seen.insert($0).inserted }
        guard !missing.isEmpty else { return }
        for member in missing { _ = try await self.session(member) }
        _ = try await client.business("POST", WKDirectoryPaths.groupMembers(profile.id.rawValue), session: session,
                                      json: try WuKongJSON.encode(WKGroupMembersRequest(members: missing.map(\.rawValue))))
    }

    /// `DELETE /v1/groups/{no}/members {"members":[…]}` as the creator, for those of `members` the group
    /// lists (docs/adapters/wukong.md, "Groups in live relay"); they stop being the channel's subscribers.
    public func removeMembers(_ members: [UserID], from group: GroupID) async throws {
        guard let current = try await self.group(group) else { return }
        var seen = Set<UserID>()
        let leaving = members.filter { current.members.contains($0) && $0 != current.owner && seen.insert($0).inserted }
        guard !leaving.isEmpty else { return }
        let session = try await session(current.owner ?? UserID(settings.serviceUID))
        _ = try await client.business("DELETE", WKDirectoryPaths.groupMembers(group.rawValue), session: session,
                                      json: try WuKongJSON.encode(WKGroupMembersRequest(members: leaving.map(\.rawValue))))
    }

    /// `DELETE /v1/groups/{no}/disband` as the creator: the business server marks the group disbanded and
    /// deletes its WuKongIM channel (TangSengDaoDao `modules/group`; docs/adapters/wukong.md, "Groups in
    /// live relay"). A group the business server does not have is left alone.
    public func dissolveGroup(_ group: GroupID) async throws {
        guard let current = try await self.group(group) else { return }
        let session = try await session(current.owner ?? UserID(settings.serviceUID))
        _ = try await client.business("DELETE", WKDirectoryPaths.groupDisband(group.rawValue), session: session)
    }

    public func allGroups() async throws -> [GroupID] {
        throw IMError(.unsupported, "WuKongIM cannot list channels, and the business server lists only a user's saved groups; give the groups to migrate")
    }

    // MARK: helpers

    /// A business-server JSON object, nil when the server says the user or group does not exist.
    func businessObject(_ method: String, _ path: String, session: String) async throws -> [String: JSONValue]? {
        let data: Data
        do {
            data = try await client.business(method, path, session: session)
        } catch let error as IMError where WKDirectoryPaths.isMissing(error) {
            return nil
        }
        guard let object = (try? JSONValue.parse(data))?.objectValue else {
            throw IMError(.malformedPayload, "WuKong \(path) answered something that is not a JSON object",
                          vendorMessage: String(decoding: data.prefix(300), as: UTF8.self))
        }
        return object
    }

    /// Every member row (`uid`, `role`), page by page until a short page.
    func memberRows(of group: GroupID, session: String) async throws -> [(uid: String, role: Int64)] {
        var rows: [(uid: String, role: Int64)] = []
        var page = 1
        while true {
            let data = try await client.business("GET", WKDirectoryPaths.groupMembers(group.rawValue), session: session,
                                                 query: [("page", String(page)), ("limit", String(WKDirectoryPaths.membersPageSize))])
            guard let array = (try? JSONValue.parse(data))?.arrayValue else {
                throw IMError(.malformedPayload, "WuKong group members of \(group) are not a JSON array",
                              vendorMessage: String(decoding: data.prefix(300), as: UTF8.self))
            }
            rows += array.compactMap { row in
                guard row["is_deleted"]?.int64Value ?? 0 == 0, let uid = row["uid"]?.stringValue else { return nil }
                return (uid, row["role"]?.int64Value ?? 0)
            }
            guard array.count == WKDirectoryPaths.membersPageSize else { return rows }
            page += 1
        }
    }

    func setGroupField(_ field: String, _ value: String, of group: GroupID, session: String) async throws {
        _ = try await client.business("PUT", WKDirectoryPaths.group(group.rawValue), session: session,
                                      json: try WuKongJSON.encode([field: value]))
    }
}

/// A group channel that only WuKongIM knows (no business-server record) still has subscribers: read with
/// the cluster API's `GET /cluster/channels/{id}/2/subscribers` (WuKongIM v2.2.5 `pkg/cluster`;
/// docs/adapters/wukong.md, "Groups in live relay").
extension WuKongBackend: GroupSubscriberListing {
    public func subscribers(of group: GroupID) async throws -> [UserID] {
        try await client.channelSubscribers(channelID: group.rawValue, type: WKChannelType.group).map { UserID($0) }
    }
}

