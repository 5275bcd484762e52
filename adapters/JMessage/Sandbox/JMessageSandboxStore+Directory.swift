import JMessage
import Foundation
import IMCore
import IMHTTP
import IMSandbox

/// User profiles and groups beyond creation (docs/adapters/jmessage.md §5): `PUT /v1/users/{username}`,
/// the user and group listings, `GET`/`PUT /v1/groups/{gid}` and `GET /v1/users/{username}/groups/`,
/// with the vendor's field rules (899003 when broken): nickname ≤ 64 bytes without line breaks;
/// signature, region, address ≤ 250 bytes; birthday `yyyy-MM-dd` (answered as `yyyy-MM-dd HH:mm:ss`);
/// gender 0/1/2; extras a JSON object ≤ 512 bytes; group name ≤ 64 bytes, desc ≤ 250 bytes, flag 1/2,
/// at most 500 members (899012).
extension JMessageSandboxStore {
    static let maxMemberCount = 500

    // MARK: user profiles

    /// The refusal for a broken profile field of a registration or update, or nil.
    static func profileRefusal(_ item: JSONValue) -> JMErrorEnvelope.Body? {
        func bad(_ why: String) -> JMErrorEnvelope.Body { .init(code: JMessageErrors.invalidParameter.code, message: why) }
        if let value = item["nickname"], value != .null {
            guard let text = value.stringValue, text.utf8.count <= 64, !text.contains("\n"), !text.contains("\r") else {
                return bad("nickname: at most 64 bytes, no line breaks")
            }
        }
        for key in ["signature", "region", "address", "avatar"] {
            if let value = item[key], value != .null, !(value.stringValue.map { $0.utf8.count <= 250 || key == "avatar" } ?? false) {
                return bad("\(key): a string of at most 250 bytes")
            }
        }
        if let value = item["birthday"], value != .null {
            guard let text = value.stringValue, text.wholeMatch(of: /\d{4}-\d{2}-\d{2}/) != nil else { return bad("birthday: yyyy-MM-dd") }
        }
        if let value = item["gender"], value != .null, !(value.int64Value.map { (0...2).contains($0) } ?? false) {
            return bad("gender: 0, 1 or 2")
        }
        if let value = item["extras"], value != .null {
            guard case .object = value, value.jsonData().count <= 512 else { return bad("extras: a JSON object of at most 512 bytes") }
        }
        return nil
    }

    /// The refusal of an `avatar` that is not a `media_id` this app's upload gave (JMessage documents the
    /// field as one; what it answers for anything else is unconfirmed, so the strict reading: 899003,
    /// docs/adapters/jmessage.md, "Media ids"). An empty string clears the avatar.
    func avatarRefusal(_ value: JSONValue?) -> JMErrorEnvelope.Body? {
        guard let id = value?.stringValue, !id.isEmpty, media[id] == nil else { return nil }
        return .init(code: JMessageErrors.invalidParameter.code, message: "avatar: \(id) is not a media_id of this app's uploads")
    }

    /// Applies the profile fields present in `item` (validated by `profileRefusal`).
    static func applyProfile(_ item: JSONValue, to user: inout User) {
        func text(_ key: String) -> String?? { item[key].map { $0 == .null ? nil : $0.stringValue } }
        if let nickname = text("nickname") { user.nickname = nickname }
        if let avatar = text("avatar") { user.avatar = avatar }
        if let birthday = text("birthday") { user.birthday = birthday.map { $0 + " 00:00:00" } }
        if let signature = text("signature") { user.signature = signature }
        if let region = text("region") { user.region = region }
        if let address = text("address") { user.address = address }
        if let gender = item["gender"] { user.gender = gender.int64Value.map { Int($0) } }
        if let extras = item["extras"] { user.extras = extras == .null ? nil : extras }
    }

    /// `PUT /v1/users/{username}`: any of the profile fields → 204; unknown user 899002.
    func updateUser(_ username: String, _ request: HTTPRequestData) -> HTTPResponseData {
        guard var user = users[username] else { return JMessageSandbox.error(JMessageErrors.userNotFound, "user not exist") }
        guard let body = try? JSONValue.parse(Data(request.body)), case .object = body else {
            return JMessageSandbox.error(JMessageErrors.invalidParameter, "body is not a JSON object")
        }
        if let refusal = Self.profileRefusal(body) ?? avatarRefusal(body["avatar"]) { return JMessageSandbox.error(refusal) }
        Self.applyProfile(body, to: &user)
        user.mtime = clock.nowMs()
        users[username] = user
        return HTTPResponseData(status: 204)
    }

    /// `start` and `count` (≤ 500) of a listing; nil when they are missing or out of range (899003).
    static func window(_ request: HTTPRequestData) -> (start: Int, count: Int)? {
        guard let start = Int(request.queryValue("start") ?? ""), start >= 0,
              let count = Int(request.queryValue("count") ?? ""), (1...500).contains(count) else { return nil }
        return (start, count)
    }

    static let badWindow = "start ≥ 0 and count 1…500 are required"

    /// `GET /v1/users/?start=&count=`: the app's users (admins are listed by `/v1/admins`), oldest first.
    func listUsers(_ request: HTTPRequestData) -> HTTPResponseData {
        guard let window = Self.window(request) else { return JMessageSandbox.error(JMessageErrors.invalidParameter, Self.badWindow) }
        let all = users.values.filter { !$0.isAdmin }.sorted { ($0.ctime, $0.username) < ($1.ctime, $1.username) }
        let page = all.dropFirst(window.start).prefix(window.count)
        return .json(JSONValue.object(["total": .int(Int64(all.count)), "start": .int(Int64(window.start)),
                                       "count": .int(Int64(page.count)), "users": .array(page.map(\.listed))]))
    }

    // MARK: groups

    static func groupRefusal(name: String?, desc: String?, flag: Int?) -> HTTPResponseData? {
        if let name, name.utf8.count > 64 { return JMessageSandbox.error(JMessageErrors.invalidParameter, "name: at most 64 bytes") }
        if let desc, desc.utf8.count > 250 { return JMessageSandbox.error(JMessageErrors.invalidParameter, "desc: at most 250 bytes") }
        if let flag, ![1, 2].contains(flag) { return JMessageSandbox.error(JMessageErrors.invalidParameter, "flag: 1 or 2") }
        return nil
    }

    func groupJSON(_ group: Group) -> JSONValue {
        var object: [String: JSONValue] = [
            "gid": .int(group.gid), "name": .string(group.name), "desc": .string(group.desc ?? ""), "appkey": .string(appKey),
            "MaxMemberCount": .int(Int64(Self.maxMemberCount)),
            "ctime": .string(JMessageTime.format(ms: group.ctime ?? 0)), "mtime": .string(JMessageTime.format(ms: group.mtime ?? group.ctime ?? 0)),
        ]
        if let avatar = group.avatar { object["avatar"] = .string(avatar) }
        return .object(object)
    }

    /// `GET /v1/groups/{gid}`: `{gid,name,desc,appkey,MaxMemberCount,mtime,ctime}` (+ `avatar` when set).
    func group(_ gidText: String) -> HTTPResponseData {
        guard let gid = Int64(gidText), let group = groups[gid] else { return JMessageSandbox.error(JMessageErrors.groupNotFound, "group not exist") }
        return .json(groupJSON(group))
    }

    /// `PUT /v1/groups/{gid}`: any of `name`, `desc`, `avatar` → 204.
    func updateGroup(_ gidText: String, _ request: HTTPRequestData) -> HTTPResponseData {
        guard let gid = Int64(gidText), var group = groups[gid] else { return JMessageSandbox.error(JMessageErrors.groupNotFound, "group not exist") }
        guard let body = try? JSONValue.parse(Data(request.body)), case .object(let fields) = body,
              fields.values.allSatisfy({ $0.stringValue != nil }) else {
            return JMessageSandbox.error(JMessageErrors.invalidParameter, "body must be a JSON object of name, desc, avatar strings")
        }
        guard !fields.isEmpty, Set(fields.keys).isSubset(of: ["name", "desc", "avatar"]) else {
            return JMessageSandbox.error(JMessageErrors.invalidParameter, "only name, desc and avatar can be updated")
        }
        if let refusal = Self.groupRefusal(name: fields["name"]?.stringValue, desc: fields["desc"]?.stringValue, flag: nil) {
            return refusal
        }
        if let refusal = avatarRefusal(fields["avatar"]) { return JMessageSandbox.error(refusal) }
        if let name = fields["name"]?.stringValue { group.name = name }
        if let desc = fields["desc"]?.stringValue { group.desc = desc }
        if let avatar = fields["avatar"]?.stringValue { group.avatar = avatar }
        group.mtime = clock.nowMs()
        groups[gid] = group
        return HTTPResponseData(status: 204)
    }

    /// `DELETE /v1/groups/{gid}` → 204: the group is gone (its gid is not given again); a message into it
    /// afterwards is 899006, as into any group that does not exist. An unknown gid is 899006.
    func deleteGroup(_ gidText: String) -> HTTPResponseData {
        guard let gid = Int64(gidText), groups[gid] != nil else { return JMessageSandbox.error(JMessageErrors.groupNotFound, "group not exist") }
        groups[gid] = nil
        return HTTPResponseData(status: 204)
    }

    /// `GET /v1/groups/?start=&count=`: the app's groups, by gid.
    func listGroups(_ request: HTTPRequestData) -> HTTPResponseData {
        guard let window = Self.window(request) else { return JMessageSandbox.error(JMessageErrors.invalidParameter, Self.badWindow) }
        let all = groups.values.sorted { $0.gid < $1.gid }
        let page = all.dropFirst(window.start).prefix(window.count)
        return .json(JSONValue.object(["total": .int(Int64(all.count)), "start": .int(Int64(window.start)),
                                       "count": .int(Int64(page.count)), "groups": .array(page.map { groupJSON($0) })]))
    }

    /// `GET /v1/users/{username}/groups/`: the groups the user is in (owner or member), by gid; 899002
    /// for an unknown user.
    func groupsOf(_ username: String) -> HTTPResponseData {
        guard users[username] != nil else { return JMessageSandbox.error(JMessageErrors.userNotFound, "user not exist") }
        return .json(JSONValue.array(groups.values.filter { $0.members.contains(username) }.sorted { $0.gid < $1.gid }.map { groupJSON($0) }))
    }
}

extension JMessageSandboxStore.User {
    /// `GET /v1/users/{username}`: username, mtime, ctime always; the other fields only when set.
    var json: JSONValue {
        var object = memberFields
        object["username"] = .string(username)
        if let nickname { object["nickname"] = .string(nickname) }
        object["ctime"] = .string(JMessageTime.format(ms: ctime))
        object["mtime"] = .string(JMessageTime.format(ms: mtime ?? ctime))
        return .object(object)
    }

    /// The profile fields besides username and nickname that are set (also listed per group member).
    var memberFields: [String: JSONValue] {
        var object: [String: JSONValue] = [:]
        for (key, value) in [("avatar", avatar), ("birthday", birthday), ("signature", signature), ("region", region), ("address", address)] {
            if let value { object[key] = .string(value) }
        }
        if let gender { object["gender"] = .int(Int64(gender)) }
        if let extras { object["extras"] = extras }
        return object
    }

    /// One entry of the user listing: `{username, nickname, mtime, ctime}`.
    var listed: JSONValue {
        var object: [String: JSONValue] = ["username": .string(username), "ctime": .string(JMessageTime.format(ms: ctime)),
                                           "mtime": .string(JMessageTime.format(ms: mtime ?? ctime))]
        if let nickname { object["nickname"] = .string(nickname) }
        return .object(object)
    }
}
