import JMessage
import Foundation
import IMCore
import IMHTTP
import IMSandbox

/// The sandbox's in-memory state and the REST v1 rules (users, admins, groups, send, retract).
///
/// Rules kept: usernames/passwords 4–128 bytes, usernames start with a letter or digit and use
/// letters, digits and `_ . - @`; only a registered admin may send (`from_type` must be `admin`,
/// else 899016); unknown sender/target 899002, unknown group 899006, a sender (the admin) outside
/// the group 803005; `msg_body` ≤ 4096 bytes of
/// JSON (899003); per-type required body fields; `msg_id` increases monotonically; retract only by
/// `from_id`, once, within 3 minutes (855001–855004).
public actor JMessageSandboxStore {
    struct User: Codable {
        var username: String
        var nickname: String?
        var isAdmin: Bool
        var ctime: Int64
        /// The other profile fields (`JMessageSandboxStore+Directory.swift`); nil = never set.
        var avatar: String?
        var birthday: String?
        var gender: Int?
        var signature: String?
        var region: String?
        var address: String?
        var extras: JSONValue?
        var mtime: Int64?
    }
    struct Group: Codable {
        var gid: Int64
        var name: String
        var owner: String
        var members: [String]
        var avatar: String?
        var desc: String?
        /// 1 private (the default), 2 public.
        var flag: Int?
        var ctime: Int64?
        var mtime: Int64?
    }
    struct Media: Codable {
        var type: String
        var contentType: String
        var fileName: String
        var bytes: Data
    }
    /// What `--state FILE` keeps (cursors are not kept: they live 120 s).
    struct Snapshot: Codable {
        var users: [String: User]
        var groups: [Int64: Group]
        var messages: [JMHistoryMessage]
        var retracted: Set<Int64>
        var media: [String: Media]
        var nextMsgID: Int64
        var nextGid: Int64
        var counter: Int
    }
    static let snapshotName = "jmessage"
    struct Cursor {
        var ids: [Int64]
        var offset: Int
        var count: Int
        var createdAt: Int64
    }

    static let messageTypes: Set<String> = ["text", "image", "voice", "custom", "file", "location", "video"]
    static let retractWindowMs: Int64 = 180_000
    public static let cursorTTLMs: Int64 = 120_000

    let appKey: String
    let clock: SandboxClock
    let push: CallbackDeliverer<JMHistoryMessage>?
    let stateFile: SandboxStateFile?
    var users: [String: User] = [:]
    var groups: [Int64: Group] = [:]
    var messages: [JMHistoryMessage] = []
    var retracted: Set<Int64> = []
    var media: [String: Media] = [:]
    var cursors: [String: Cursor] = [:]
    var nextMsgID: Int64 = 43_143_728_109
    var nextGid: Int64 = 10_055_201
    var counter = 0

    /// With a `stateFile`, the state is loaded from it and saved after every request that changes it.
    init(appKey: String, clock: SandboxClock, push: CallbackDeliverer<JMHistoryMessage>?, stateFile: SandboxStateFile? = nil) throws {
        self.appKey = appKey
        self.clock = clock
        self.push = push
        self.stateFile = stateFile
        if let snapshot = try stateFile?.load(Snapshot.self, name: Self.snapshotName) {
            users = snapshot.users
            groups = snapshot.groups
            messages = snapshot.messages
            retracted = snapshot.retracted
            media = snapshot.media
            nextMsgID = snapshot.nextMsgID
            nextGid = snapshot.nextGid
            counter = snapshot.counter
        }
    }

    /// Saves the state after a successful change; a failed save turns the answer into 500 899000.
    func persist(_ response: HTTPResponseData) -> HTTPResponseData {
        guard let stateFile, (200..<300).contains(response.status) else { return response }
        do {
            try stateFile.save(Snapshot(users: users, groups: groups, messages: messages, retracted: retracted, media: media,
                                        nextMsgID: nextMsgID, nextGid: nextGid, counter: counter), name: Self.snapshotName)
            return response
        } catch {
            return JMessageSandbox.error(JMessageErrors.serverError, status: 500, "sandbox state could not be saved: \(error)")
        }
    }

    func reset() {
        users = [:]
        groups = [:]
        messages = []
        retracted = []
        media = [:]
        cursors = [:]
        _ = persist(HTTPResponseData(status: 204))
    }

    /// Waits until every routing push so far was delivered (tests).
    public func waitForPushes(timeoutMs: Int64 = 5000) async -> Bool {
        await push?.waitUntilIdle(timeoutMs: timeoutMs) ?? true
    }

    // MARK: users and groups

    static func validName(_ name: String) -> Bool {
        let bytes = name.utf8.count
        guard (4...128).contains(bytes), let first = name.unicodeScalars.first, first.isASCII,
              CharacterSet.alphanumerics.contains(first) else { return false }
        return name.unicodeScalars.allSatisfy { $0.isASCII && (CharacterSet.alphanumerics.contains($0) || "_.-@".unicodeScalars.contains($0)) }
    }

    func register(_ item: JSONValue, admin: Bool) -> JMErrorEnvelope.Body? {
        guard let username = item["username"]?.stringValue, Self.validName(username),
              let password = item["password"]?.stringValue, (4...128).contains(password.utf8.count) else {
            return .init(code: JMessageErrors.invalidParameter.code, message: "username or password invalid")
        }
        if let refusal = Self.profileRefusal(item) ?? avatarRefusal(item["avatar"]) { return refusal }
        guard users[username] == nil else { return .init(code: JMessageErrors.userExists.code, message: "user exist") }
        var user = User(username: username, nickname: nil, isAdmin: admin, ctime: clock.nowMs())
        Self.applyProfile(item, to: &user)
        users[username] = user
        return nil
    }

    /// `POST /v1/admins/`: the vendor documents one JSON object; a one-item JSON array holding that object
    /// is accepted too, because the `jmessage` 2.0.0 Python client sends one (docs/adapters/jmessage.md,
    /// "Request-shape tolerances"). Any other array is 899003.
    func registerAdmin(_ request: HTTPRequestData) -> HTTPResponseData {
        var parsed = try? JSONValue.parse(Data(request.body))
        if let items = parsed?.arrayValue {
            guard items.count == 1 else { return JMessageSandbox.error(JMessageErrors.invalidParameter, "admins: one admin per request") }
            parsed = items[0]
        }
        guard let body = parsed, body.objectValue != nil else {
            return JMessageSandbox.error(JMessageErrors.invalidParameter, "body is not a JSON object")
        }
        if let error = register(body, admin: true) { return JMessageSandbox.error(error) }
        return HTTPResponseData(status: 201)
    }

    func registerUsers(_ request: HTTPRequestData) -> HTTPResponseData {
        guard let items = (try? JSONValue.parse(Data(request.body)))?.arrayValue else {
            return JMessageSandbox.error(JMessageErrors.invalidParameter, "body is not a JSON array")
        }
        guard items.count <= 500 else { return JMessageSandbox.error(JMessageErrors.registerListTooLong, "register list larger than 500") }
        let results = items.map { item in
            JMUserRegistrationResult(username: item["username"]?.stringValue ?? "", error: register(item, admin: false))
        }
        return .json(results, status: 201)
    }

    func user(_ username: String) -> HTTPResponseData {
        guard let user = users[username] else { return JMessageSandbox.error(JMessageErrors.userNotFound, "user not exist") }
        return .json(user.json)
    }

    func userList() -> [JSONValue] {
        users.values.sorted { $0.username < $1.username }.map { user -> JSONValue in
            JSONValue.object(["username": .string(user.username), "nickname": user.nickname.map { JSONValue.string($0) } ?? .null,
                              "admin": .bool(user.isAdmin)])
        }
    }

    func createGroup(_ request: HTTPRequestData) -> HTTPResponseData {
        guard let body = try? JSONDecoder().decode(JMGroupCreate.self, from: Data(request.body)) else {
            return JMessageSandbox.error(JMessageErrors.invalidParameter, "owner_username and name are required")
        }
        let members = body.membersUsername ?? []
        if let refusal = Self.groupRefusal(name: body.name, desc: body.desc, flag: body.flag) { return refusal }
        if let refusal = avatarRefusal(body.avatar.map(JSONValue.string)) { return JMessageSandbox.error(refusal) }
        guard users[body.ownerUsername] != nil, members.allSatisfy({ users[$0] != nil }) else {
            return JMessageSandbox.error(JMessageErrors.userNotFound, "user not exist")
        }
        var distinct: [String] = []
        for member in members where member != body.ownerUsername && !distinct.contains(member) { distinct.append(member) }
        guard distinct.count + 1 <= Self.maxMemberCount else { return JMessageSandbox.error(JMessageErrors.groupFull, "not enough room in group") }
        let gid = nextGid
        nextGid += 1
        let now = clock.nowMs()
        groups[gid] = Group(gid: gid, name: body.name, owner: body.ownerUsername, members: [body.ownerUsername] + distinct,
                            avatar: body.avatar, desc: body.desc, flag: body.flag, ctime: now, mtime: now)
        return .json(JMGroupCreated(gid: gid, ownerUsername: body.ownerUsername, name: body.name, membersUsername: members,
                                      desc: body.desc ?? "", maxMemberCount: 500), status: 201)
    }

    func updateMembers(_ gidText: String, _ request: HTTPRequestData) -> HTTPResponseData {
        guard let gid = Int64(gidText), var group = groups[gid] else { return JMessageSandbox.error(JMessageErrors.groupNotFound, "group not exist") }
        let body = try? JSONValue.parse(Data(request.body))
        let add = body?["add"]?.arrayValue?.compactMap(\.stringValue) ?? []
        let remove = body?["remove"]?.arrayValue?.compactMap(\.stringValue) ?? []
        guard !(add.isEmpty && remove.isEmpty) else { return JMessageSandbox.error(JMessageErrors.invalidParameter, "add or remove is required") }
        guard add.allSatisfy({ users[$0] != nil }) else { return JMessageSandbox.error(JMessageErrors.userNotFound, "user not exist") }
        guard remove.allSatisfy(group.members.contains) else { return JMessageSandbox.error(JMessageErrors.notMember, "user not in group") }
        if add.contains(where: group.members.contains) { return JMessageSandbox.error(JMessageErrors.alreadyMember, "member already in group") }
        let after = group.members.filter { !remove.contains($0) } + add
        guard after.count <= Self.maxMemberCount else { return JMessageSandbox.error(JMessageErrors.groupFull, "not enough room in group") }
        group.members = after
        group.mtime = clock.nowMs()
        groups[gid] = group
        return HTTPResponseData(status: 204)
    }

    /// `POST /_sandbox/groups` (test-only control, `SandboxGroupSeed`): the group of that gid gets exactly
    /// this owner and these members (registered or not); later gids are assigned above it.
    func seed(_ seed: SandboxGroupSeed) throws(SandboxGroupSeed.SeedError) {
        guard let gid = Int64(seed.id), gid > 0 else { throw .badRequest("a JMessage gid is a positive number, not '\(seed.id)'") }
        let now = clock.nowMs()
        var group = groups[gid] ?? Group(gid: gid, name: seed.name ?? seed.id, owner: seed.owner, members: [], ctime: now, mtime: now)
        group.owner = seed.owner
        group.members = seed.everyone
        if let name = seed.name { group.name = name }
        group.mtime = now
        groups[gid] = group
        nextGid = max(nextGid, gid + 1)
        _ = persist(HTTPResponseData(status: 204))
    }

    func members(_ gidText: String) -> HTTPResponseData {
        guard let gid = Int64(gidText), let group = groups[gid] else { return JMessageSandbox.error(JMessageErrors.groupNotFound, "group not exist") }
        let list = group.members.map { name -> JSONValue in
            var object = users[name]?.memberFields ?? [:]
            object["username"] = .string(name)
            object["nickname"] = .string(users[name]?.nickname ?? "")
            object["flag"] = .int(name == group.owner ? 1 : 0)
            return JSONValue.object(object)
        }
        return .json(JSONValue.array(list))
    }
}
