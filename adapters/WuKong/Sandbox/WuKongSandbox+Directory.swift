import Foundation
import IMCore
import IMHTTP
import IMSandbox
import WuKong

/// What the business server keeps about users and groups (docs/adapters/wukong.md §6), saved beside
/// the WuKongIM state as its own snapshot (`WuKongSandbox.directoryStateName`).
struct WuKongDirectoryState: Codable {
    struct Member: Codable {
        var uid: String
        var role: Int64
        var createdAt: String
    }

    struct Group: Codable {
        var name: String
        var notice: String
        var invite: Int64 = 0
        var createdAt: String
        var updatedAt: String
        var version: Int64
        var members: [Member]
        /// TangSengDaoDao's group status 2 (disbanded, `DELETE …/disband`); nil: normal.
        var status: Int64?
    }

    /// uid → the fields set with `PUT /v1/user/current` (and `is_upload_avatar` once an avatar is uploaded).
    var users: [String: [String: JSONValue]] = [:]
    var groups: [String: Group] = [:]
    /// uid → the image uploaded with `POST /v1/users/{uid}/avatar`.
    var avatars: [String: Data]? = [:]
}

/// The business server's user and group routes as TangSengDaoDao serves them: a user exists once
/// WuKongIM knows the uid (`/user/token`) or it updated itself; a group is created by the caller
/// (`group_no` assigned here, the caller its creator, role 1) and is a WuKongIM group channel whose
/// subscribers follow its members. Refusals are HTTP 400 `{"msg","status":400}`: an unknown user or
/// group `用户不存在！` / `群不存在！`, a field the route does not take, a non-manager changing a group.
/// The avatar routes need no session and answer a user's uploaded image, else a placeholder PNG; a user's
/// avatar is uploaded with `POST /v1/users/{uid}/avatar` (multipart, field `file`), which sets
/// `is_upload_avatar` 1 (group avatar uploads are not served).
extension WuKongSandbox {
    static let directoryStateName = "wukong-directory"

    /// The directory's routes; `handleBusiness` asks here first.
    static let directoryRoutes = [
        "GET /v1/users/{uid}", "PUT /v1/user/current", "GET /v1/users/{uid}/avatar", "POST /v1/users/{uid}/avatar",
        "POST /v1/group/create", "GET /v1/groups/{group_no}/detail", "PUT /v1/groups/{group_no}",
        "GET /v1/groups/{group_no}/members", "POST /v1/groups/{group_no}/members", "GET /v1/groups/{group_no}/avatar",
        "DELETE /v1/groups/{group_no}/members", "POST /v1/groups/{group_no}/members_delete", "POST /v1/groups/{group_no}/exit",
        "DELETE /v1/groups/{group_no}/disband",
    ]

    /// A 1×1 transparent PNG: the avatar of everyone and every group.
    static let placeholderAvatar = Data(base64Encoded:
        "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==") ?? Data()

    /// The avatar routes, answered without a session; nil for any other request.
    func avatarResponse(_ request: HTTPRequestData, path: String) -> HTTPResponseData? {
        let parts = path.split(separator: "/")
        guard request.method == "GET", parts.count == 4, parts[0] == "v1", parts[1] == "users" || parts[1] == "groups",
              parts[3] == "avatar" else { return nil }
        let uploaded = parts[1] == "users" ? directory.withLock { $0.avatars?[String(parts[2])] } : nil
        return HTTPResponseData(status: 200, headers: [("Content-Type", uploaded.map(Self.imageType) ?? "image/png")],
                                body: Array(uploaded ?? Self.placeholderAvatar))
    }

    /// The directory routes for the session's `uid`; nil when the request is for another route.
    func handleDirectory(_ request: HTTPRequestData, path: String, uid: String) -> HTTPResponseData? {
        let parts = path.split(separator: "/").map { $0.removingPercentEncoding ?? String($0) }
        do {
            switch (request.method, parts.count, parts) {
            case ("GET", 3, let p) where p[1] == "users": return try userInfo(p[2])
            case ("POST", 4, let p) where p[1] == "users" && p[3] == "avatar": return try uploadAvatar(request, uid: p[2])
            case ("PUT", 3, let p) where p[1] == "user" && p[2] == "current": return try updateCurrentUser(request, uid: uid)
            case ("POST", 3, let p) where p[1] == "group" && p[2] == "create": return try createGroup(request, uid: uid)
            case ("GET", 4, let p) where p[1] == "groups" && p[3] == "detail": return try groupDetail(p[2])
            case ("PUT", 3, let p) where p[1] == "groups": return try updateGroup(request, groupNo: p[2], uid: uid)
            case ("GET", 4, let p) where p[1] == "groups" && p[3] == "members": return try groupMembers(request, groupNo: p[2])
            case ("POST", 4, let p) where p[1] == "groups" && p[3] == "members": return try addMembers(request, groupNo: p[2], uid: uid)
            case ("DELETE", 4, let p) where p[1] == "groups" && p[3] == "members",
                 ("POST", 4, let p) where p[1] == "groups" && p[3] == "members_delete":
                return try removeMembers(request, groupNo: p[2], uid: uid)
            case ("POST", 4, let p) where p[1] == "groups" && p[3] == "exit": return try exitGroup(groupNo: p[2], uid: uid)
            case ("DELETE", 4, let p) where p[1] == "groups" && p[3] == "disband": return try disband(groupNo: p[2], uid: uid)
            default: return nil
            }
        } catch SandboxRefusal.badRequest(let message) {
            return Self.failure(message)
        } catch {
            return Self.failure("\(error)")
        }
    }

    // MARK: users

    private func userInfo(_ target: String) throws -> HTTPResponseData {
        let known = state.withLock { $0.devices[target] != nil }
        guard let fields = directory.withLock({ $0.users[target] }) ?? (known ? [:] : nil) else {
            throw SandboxRefusal.badRequest("用户不存在！")
        }
        var object: [String: JSONValue] = ["uid": .string(target), "name": .string(""), "username": .string(target), "sex": .int(0),
                                           "short_no": .string(""), "category": .string(""), "robot": .int(0), "is_upload_avatar": .int(0)]
        object.merge(fields) { _, set in set }
        return .json(JSONValue.object(object))
    }

    private func updateCurrentUser(_ request: HTTPRequestData, uid: String) throws -> HTTPResponseData {
        guard let fields = (try? JSONValue.parse(Data(request.body)))?.objectValue else { throw SandboxRefusal.badRequest("数据格式有误！") }
        for (key, value) in fields {
            guard WKDirectoryPaths.userFields.contains(key) else { throw SandboxRefusal.badRequest("不支持的字段[\(key)]！") }
            if key == "name" || key == "short_no" {
                guard let text = value.stringValue, value.objectValue == nil, value.arrayValue == nil else {
                    throw SandboxRefusal.badRequest("\(key)格式有误！")
                }
                if key == "name", text.isEmpty || text.count > 100 { throw SandboxRefusal.badRequest("名字不能为空且不能超过100个字符！") }
            } else if value.int64Value == nil {
                throw SandboxRefusal.badRequest("\(key)格式有误！")
            }
        }
        directory.withLock { $0.users[uid, default: [:]].merge(fields) { _, new in new } }
        return Self.ok()
    }

    /// `POST /v1/users/{uid}/avatar`: the image in the multipart field `file` becomes the user's avatar.
    private func uploadAvatar(_ request: HTTPRequestData, uid target: String) throws -> HTTPResponseData {
        let known = state.withLock { $0.devices[target] != nil } || directory.withLock { $0.users[target] != nil }
        guard known else { throw SandboxRefusal.badRequest("用户不存在！") }
        guard let image = Self.multipartFile(request), !image.isEmpty else { throw SandboxRefusal.badRequest("请上传文件！") }
        directory.withLock { directory in
            directory.users[target, default: [:]]["is_upload_avatar"] = .int(1)
            directory.avatars = (directory.avatars ?? [:]).merging([target: image]) { _, new in new }
        }
        return Self.ok()
    }

    /// The content of the multipart part named `file`, nil when there is none.
    static func multipartFile(_ request: HTTPRequestData) -> Data? {
        guard let type = request.header("Content-Type"), type.lowercased().hasPrefix("multipart/form-data"),
              let range = type.range(of: "boundary=") else { return nil }
        let boundary = String(type[range.upperBound...]).trimmingCharacters(in: CharacterSet(charactersIn: "\" "))
        let body = Data(request.body)
        let delimiter = Data("--\(boundary)".utf8)
        var parts: [Data] = []
        var start = body.startIndex
        while let found = body.range(of: delimiter, in: start..<body.endIndex) {
            if found.lowerBound > start { parts.append(body[start..<found.lowerBound]) }
            start = found.upperBound
        }
        for part in parts {
            guard let split = part.range(of: Data("\r\n\r\n".utf8)) else { continue }
            let head = String(decoding: part[part.startIndex..<split.lowerBound], as: UTF8.self)
            guard head.range(of: "name=\"file\"") != nil else { continue }
            var content = part[split.upperBound...]
            if content.suffix(2) == Data("\r\n".utf8) { content = content.dropLast(2) }
            return Data(content)
        }
        return nil
    }

    /// The image type of an uploaded avatar, from its first bytes.
    static func imageType(_ image: Data) -> String {
        if image.starts(with: [0xFF, 0xD8]) { return "image/jpeg" }
        if image.starts(with: Array("GIF8".utf8)) { return "image/gif" }
        return "image/png"
    }

    // MARK: groups

    private func now() -> String {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(secondsFromGMT: 8 * 3600)
        formatter.dateFormat = "yyyy-MM-dd HH:mm:ss"
        return formatter.string(from: Date(timeIntervalSince1970: Double(clock.nowMs()) / 1000))
    }

    private static func detail(_ groupNo: String, _ group: WuKongDirectoryState.Group) -> JSONValue {
        .object(["group_no": .string(groupNo), "name": .string(group.name), "notice": .string(group.notice), "forbidden": .int(0),
                 "invite": .int(group.invite), "created_at": .string(group.createdAt), "updated_at": .string(group.updatedAt),
                 "member_count": .int(Int64(group.members.count)), "version": .int(group.version)])
    }

    private func createGroup(_ request: HTTPRequestData, uid: String) throws -> HTTPResponseData {
        let body = try Self.decode(WKGroupCreateRequest.self, request)
        guard !body.members.isEmpty else { throw SandboxRefusal.badRequest("群成员不能为空！") }
        let groupNo = UUID().uuidString.replacingOccurrences(of: "-", with: "").lowercased()
        let time = now()
        var seen = Set<String>()
        let uids = ([uid] + body.members).filter { !$0.isEmpty && seen.insert($0).inserted }
        let group = WuKongDirectoryState.Group(
            name: body.name, notice: "", createdAt: time, updatedAt: time, version: 1,
            members: uids.map { WuKongDirectoryState.Member(uid: $0, role: $0 == uid ? WKDirectoryPaths.creatorRole : 0, createdAt: time) })
        directory.withLock { $0.groups[groupNo] = group }
        subscribe(uids, to: groupNo)
        announceCreation(of: groupNo, creator: uid, members: uids, version: group.version)
        return .json(Self.detail(groupNo, group))
    }

    private func groupDetail(_ groupNo: String) throws -> HTTPResponseData {
        guard let group = directory.withLock({ $0.groups[groupNo] }) else { throw SandboxRefusal.badRequest("群不存在！") }
        return .json(Self.detail(groupNo, group))
    }

    private func updateGroup(_ request: HTTPRequestData, groupNo: String, uid: String) throws -> HTTPResponseData {
        guard let fields = (try? JSONValue.parse(Data(request.body)))?.objectValue else { throw SandboxRefusal.badRequest("数据格式有误！") }
        for key in fields.keys where !WKDirectoryPaths.groupFields.contains(key) { throw SandboxRefusal.badRequest("不支持的属性[\(key)]！") }
        let time = now()
        try directory.withLock { directory in
            guard var group = directory.groups[groupNo] else { throw SandboxRefusal.badRequest("群不存在！") }
            let role = group.members.first { $0.uid == uid }?.role
            guard role == WKDirectoryPaths.creatorRole || role == WKDirectoryPaths.managerRole else {
                throw SandboxRefusal.badRequest("只有管理者才能修改群资料！")
            }
            if let name = fields["name"] {
                guard let text = name.stringValue, !text.isEmpty else { throw SandboxRefusal.badRequest("群名不能为空！") }
                group.name = text
            }
            if let notice = fields["notice"] {
                guard let text = notice.stringValue else { throw SandboxRefusal.badRequest("群公告格式有误！") }
                group.notice = text
            }
            if let invite = fields["invite"] {
                guard let value = invite.int64Value else { throw SandboxRefusal.badRequest("invite格式有误！") }
                group.invite = value
            }
            group.updatedAt = time
            group.version += 1
            directory.groups[groupNo] = group
        }
        return Self.ok()
    }

    /// `page` from 1 (default 1), `limit` 1–1000 (default 100), in join order.
    private func groupMembers(_ request: HTTPRequestData, groupNo: String) throws -> HTTPResponseData {
        guard let group = directory.withLock({ $0.groups[groupNo] }) else { throw SandboxRefusal.badRequest("群不存在！") }
        let page = max(1, request.queryValue("page").flatMap { Int($0) } ?? 1)
        let limit = min(max(1, request.queryValue("limit").flatMap { Int($0) } ?? 100), 1000)
        let names = directory.withLock { directory in group.members.map { directory.users[$0.uid]?["name"]?.stringValue ?? "" } }
        let rows: [JSONValue] = zip(group.members, names).dropFirst((page - 1) * limit).prefix(limit).map { member, name in
            .object(["uid": .string(member.uid), "group_no": .string(groupNo), "name": .string(name), "remark": .string(""),
                     "role": .int(member.role), "version": .int(group.version), "is_deleted": .int(0), "status": .int(1),
                     "robot": .int(0), "created_at": .string(member.createdAt), "updated_at": .string(member.createdAt)])
        }
        return .json(JSONValue.array(rows))
    }

    /// Any member may add members; those already in are skipped.
    private func addMembers(_ request: HTTPRequestData, groupNo: String, uid: String) throws -> HTTPResponseData {
        let body = try Self.decode(WKGroupMembersRequest.self, request)
        guard !body.members.isEmpty else { throw SandboxRefusal.badRequest("成员不能为空！") }
        let time = now()
        let added = try directory.withLock { directory -> [String] in
            guard var group = directory.groups[groupNo] else { throw SandboxRefusal.badRequest("群不存在！") }
            guard group.members.contains(where: { $0.uid == uid }) else { throw SandboxRefusal.badRequest("您不在群内，不能添加成员！") }
            var present = Set(group.members.map(\.uid))
            let added = body.members.filter { !$0.isEmpty && present.insert($0).inserted }
            group.members += added.map { WuKongDirectoryState.Member(uid: $0, role: 0, createdAt: time) }
            group.version += 1
            directory.groups[groupNo] = group
            return added
        }
        subscribe(added, to: groupNo)
        return Self.ok()
    }

    /// `DELETE …/members` (or `POST …/members_delete`) with `{"members":[uid]}`: the creator or a manager
    /// removes members (not itself; a manager removes neither a manager nor the creator); members not in
    /// the group are skipped, none in it is refused. They stop being subscribers of the group channel.
    private func removeMembers(_ request: HTTPRequestData, groupNo: String, uid: String) throws -> HTTPResponseData {
        let body = try Self.decode(WKGroupMembersRequest.self, request)
        guard !body.members.isEmpty else { throw SandboxRefusal.badRequest("成员不能为空！") }
        let removed = try directory.withLock { directory -> [String] in
            guard var group = directory.groups[groupNo] else { throw SandboxRefusal.badRequest("群不存在！") }
            guard let operatorRole = group.members.first(where: { $0.uid == uid })?.role else { throw SandboxRefusal.badRequest("操作者不再此群") }
            guard operatorRole == WKDirectoryPaths.creatorRole || operatorRole == WKDirectoryPaths.managerRole else {
                throw SandboxRefusal.badRequest("普通成员无法删除群成员")
            }
            guard !body.members.contains(uid) else { throw SandboxRefusal.badRequest("不能删除自己") }
            let leaving = group.members.filter { body.members.contains($0.uid) }
            guard !leaving.isEmpty else { throw SandboxRefusal.badRequest("被删除者不在此群内") }
            if operatorRole == WKDirectoryPaths.managerRole {
                if leaving.contains(where: { $0.role == WKDirectoryPaths.managerRole }) { throw SandboxRefusal.badRequest("管理员不能删除管理员") }
                if leaving.contains(where: { $0.role == WKDirectoryPaths.creatorRole }) { throw SandboxRefusal.badRequest("管理员不能删除群主") }
            }
            let uids = Set(leaving.map(\.uid))
            group.members.removeAll { uids.contains($0.uid) }
            group.version += 1
            directory.groups[groupNo] = group
            return Array(uids)
        }
        unsubscribe(removed, from: groupNo)
        return Self.ok()
    }

    /// `POST …/exit`: the session's user leaves; a leaving creator hands the group to the next oldest
    /// member. An unknown group is `群不存在`, a non-member `群成员不存在群内！`.
    private func exitGroup(groupNo: String, uid: String) throws -> HTTPResponseData {
        try directory.withLock { directory in
            guard var group = directory.groups[groupNo] else { throw SandboxRefusal.badRequest("群不存在") }
            guard let index = group.members.firstIndex(where: { $0.uid == uid }) else { throw SandboxRefusal.badRequest("群成员不存在群内！") }
            let leaving = group.members.remove(at: index)
            if leaving.role == WKDirectoryPaths.creatorRole, !group.members.isEmpty { group.members[0].role = WKDirectoryPaths.creatorRole }
            group.version += 1
            directory.groups[groupNo] = group
        }
        unsubscribe([uid], from: groupNo)
        return Self.ok()
    }

    /// `DELETE …/disband`: the creator only (`用户无权执行此操作`); an unknown or disbanded group answers OK.
    /// The group gets status 2 (its detail and members still read), and WuKongIM's channel is deleted as
    /// the business server asks (`/channel/delete`: disbanded, its messages gone), so a send into it is
    /// refused (`频道已解散！`).
    private func disband(groupNo: String, uid: String) throws -> HTTPResponseData {
        let done = try directory.withLock { directory -> Bool in
            guard var group = directory.groups[groupNo], group.status != 2 else { return true }
            guard group.members.contains(where: { $0.uid == uid && $0.role == WKDirectoryPaths.creatorRole }) else {
                throw SandboxRefusal.badRequest("用户无权执行此操作")
            }
            group.status = 2
            group.version += 1
            directory.groups[groupNo] = group
            return false
        }
        guard !done else { return Self.ok() }
        let key = WuKongSandboxState.ChannelKey(id: groupNo, type: WKChannelType.group)
        state.withLock { state in
            state.channels[key, default: .init()].disband = 1
            for message in state.messages[key] ?? [] { state.locations[message.messageID] = nil }
            state.messages[key] = nil
        }
        return Self.ok()
    }

    private func unsubscribe(_ uids: [String], from groupNo: String) {
        let key = WuKongSandboxState.ChannelKey(id: groupNo, type: WKChannelType.group)
        state.withLock { state in
            state.channels[key]?.subscribers.removeAll { uids.contains($0) }
            for uid in uids { state.readTo[uid]?[key] = nil }
        }
    }

    /// What the business server asks of WuKongIM: the group channel (type 2) gets these subscribers.
    /// `POST /_sandbox/groups` (test-only control, `SandboxGroupSeed`): a business-server group under the
    /// `group_no` the test chose, with exactly this owner (the creator, role 1) and these members, and a
    /// WuKongIM group channel whose subscribers are those members.
    public func seedGroup(_ seed: SandboxGroupSeed) async throws(SandboxGroupSeed.SeedError) {
        do { try Self.checkChannel(seed.id, WKChannelType.group) } catch { throw .badRequest("'\(seed.id)' is not a WuKong channel id") }
        let time = now()
        directory.withLock { directory in
            var group = directory.groups[seed.id]
                ?? WuKongDirectoryState.Group(name: seed.name ?? seed.id, notice: "", createdAt: time, updatedAt: time, version: 1, members: [])
            group.members = seed.everyone.map {
                WuKongDirectoryState.Member(uid: $0, role: $0 == seed.owner ? WKDirectoryPaths.creatorRole : 0, createdAt: time)
            }
            if let name = seed.name { group.name = name }
            group.updatedAt = time
            directory.groups[seed.id] = group
        }
        state.withLock { state in
            Self.addSubscribers(seed.everyone, reset: true, to: WuKongSandboxState.ChannelKey(id: seed.id, type: WKChannelType.group), in: &state)
        }
        persist()
    }

    private func subscribe(_ uids: [String], to groupNo: String) {
        state.withLock { state in
            Self.addSubscribers(uids, reset: false, to: WuKongSandboxState.ChannelKey(id: groupNo, type: WKChannelType.group), in: &state)
        }
    }
}
