import Foundation
import IMCore
import IMHTTP
import IMSandbox
import SandboxTestSupport
import Testing
@testable import WuKong
import WuKongSandbox

/// `WuKongBackend` as `UserDirectory` and `GroupDirectory` against the WuKong sandbox over loopback:
/// profiles and groups at the business server's routes, members mirrored as WuKongIM subscribers.
@Suite(.serialized) struct WuKongDirectoryTests {
    static func withBackend(managerToken: String? = nil, statePath: String? = nil,
                            _ body: (WuKongSandboxHelper, WuKongBackend) async throws -> Void) async throws {
        let rig = try await WuKongSandboxHelper.start(.init(managerToken: managerToken, statePath: statePath))
        let backend = WuKongBackend(id: "wk", settings: .at(rig.baseURL, managerToken: managerToken, timeout: .seconds(5)))
        do {
            try await body(rig, backend)
        } catch {
            await rig.stop()
            throw error
        }
        await rig.stop()
    }

    @Test func savedUsersReadBackWithNameAvatarRouteAndExtraAndUnknownOnesAreLeftOut() async throws {
        try await Self.withBackend { rig, backend in
            try await backend.saveUser(UserProfile(id: "alice", name: "Alice", avatar: "https://example.com/a.png",
                                                   extra: ["sex": .int(1), "short_no": .string("a001"), "nickname_color": .string("red")]))
            try await backend.ensureUser(UserProfile(id: "bob"))
            let read = try await backend.users(["bob", "nobody", "alice"])
            #expect(read.map(\.id) == ["bob", "alice"], "order asked, unknown left out")
            let alice = read[1]
            #expect(alice.name == "Alice" && alice.extra["sex"]?.int64Value == 1 && alice.extra["short_no"]?.stringValue == "a001")
            #expect(alice.extra["nickname_color"] == nil, "a field the self-update does not take is not written")
            #expect(alice.avatar == nil, "no avatar was uploaded (uploads are not written)")
            #expect(read[0].name == nil && read[0].extra["username"]?.stringValue == "bob")

            try await backend.saveUser(UserProfile(id: "alice", name: "Alice Liddell"))
            let updated = try #require(try await backend.users(["alice"]).first)
            #expect(updated.name == "Alice Liddell" && updated.extra["sex"]?.int64Value == 1, "fields not sent stay")

            let avatar = try await rig.get(WKDirectoryPaths.userAvatar("alice"))
            #expect(avatar.status == 200 && avatar.headers.first { $0.name.lowercased() == "content-type" }?.value == "image/png", "the avatar route needs no session")
        }
    }

    /// A user's app uploads an avatar (multipart `file`): the profile then names the avatar route, which
    /// answers the uploaded image (docs/adapters/wukong.md, "Profiles in live relay").
    @Test func anUploadedAvatarIsReadBackAsTheProfilesAvatar() async throws {
        try await Self.withBackend { rig, backend in
            try await backend.saveUser(UserProfile(id: "alice", name: "Alice"))
            let session = try await backend.session("alice")
            let image: [UInt8] = [0xFF, 0xD8, 0xFF, 0xE0] + Array("alice".utf8)
            func upload(_ uid: String, field: String = "file") async throws -> SandboxRig.Reply {
                let boundary = "b0undary"
                var body = Array("--\(boundary)\r\nContent-Disposition: form-data; name=\"\(field)\"; filename=\"a.jpg\"\r\n\r\n".utf8)
                body += image + Array("\r\n--\(boundary)--\r\n".utf8)
                return try await rig.send("POST", "/v1/users/\(uid)/avatar", body: body,
                                          headers: [("token", session), ("Content-Type", "multipart/form-data; boundary=\(boundary)")])
            }
            #expect(try await backend.users(["alice"]).first?.avatar == nil)
            let unsigned = try await rig.send("POST", "/v1/users/alice/avatar", body: image)
            #expect(unsigned.status == 401)
            let noFile = try await upload("alice", field: "picture")
            #expect(noFile.status == 400 && noFile.json["msg"] == "请上传文件！")
            let unknown = try await upload("nobody")
            #expect(unknown.status == 400 && unknown.json["msg"] == "用户不存在！")
            #expect(try await backend.users(["alice"]).first?.avatar == nil, "refused uploads change nothing")

            #expect(try await upload("alice").status == 200)
            let alice = try #require(try await backend.users(["alice"]).first)
            #expect(alice.avatar == rig.baseURL + WKDirectoryPaths.userAvatar("alice") && alice.name == "Alice")
            let served = try await rig.get(WKDirectoryPaths.userAvatar("alice"))
            let raw = try await HTTPClientWrapper().send(OutboundRequest(method: "GET", url: rig.baseURL + WKDirectoryPaths.userAvatar("alice")))
            #expect(Array(raw.body) == image && served.headers.first { $0.name.lowercased() == "content-type" }?.value == "image/jpeg")
        }
    }

    @Test func groupCreatedWithOwnerAndMembersReadsBackAndUpdatesOnlyAdd() async throws {
        try await Self.withBackend { rig, backend in
            let id = try await backend.createGroup(GroupProfile(id: "ignored", name: "Tea", owner: "alice",
                                                                members: ["bob", "carol", "alice"], announcement: "hello"))
            #expect(id.rawValue.count == 32 && id != "ignored", "the business server gives the group_no")
            let read = try #require(try await backend.group(id))
            #expect(read.owner == "alice" && read.members == ["alice", "bob", "carol"])
            #expect(read.name == "Tea" && read.announcement == "hello")
            #expect(read.avatar == rig.baseURL + WKDirectoryPaths.groupAvatar(id.rawValue))
            #expect(read.extra["member_count"]?.int64Value == 3 && read.extra["created_at"] != nil)
            #expect(try await backend.group("nope") == nil)

            // WuKongIM sees the members as subscribers: a message from carol reaches the group channel.
            let sent = try await backend.send(OutgoingMessage(conversation: .group(id), sender: "carol", content: .text("hi")))
            #expect(!sent.id.rawValue.isEmpty)

            try await backend.updateGroup(GroupProfile(id: id, name: "Coffee", members: ["dave", "bob"], announcement: "new notice"))
            let updated = try #require(try await backend.group(id))
            #expect(updated.name == "Coffee" && updated.announcement == "new notice")
            #expect(updated.members == ["alice", "bob", "carol", "dave"], "dave added, nobody removed")
            #expect(updated.owner == "alice")

            try await backend.updateGroup(GroupProfile(id: id, members: []))
            #expect(try await backend.group(id)?.name == "Coffee", "no name given: the name stays")

            let missing = await #expect(throws: IMError.self) { try await backend.updateGroup(GroupProfile(id: "nope", name: "x")) }
            #expect(missing?.code == .notFound)
            let empty = await #expect(throws: IMError.self) { _ = try await backend.createGroup(GroupProfile(id: "g", name: "x")) }
            #expect(empty?.code == .invalidArgument)
        }
    }

    @Test func groupMembersArePagedAndTheSubscribersFollow() async throws {
        try await Self.withBackend { rig, backend in
            let members = (0..<250).map { UserID("u\($0)") }
            let id = try await backend.createGroup(GroupProfile(id: "x", name: "Big", owner: "owner", members: members))
            #expect(try await backend.group(id)?.members == ["owner"] + members, "three pages of 100 read in order")
            let page = try await rig.send("GET", WKDirectoryPaths.groupMembers(id.rawValue) + "?page=3&limit=100",
                                          headers: [("token", try await backend.session("owner"))])
            #expect(page.json.arrayValue?.count == 51)
        }
    }

    /// The business server's member removal (creator or manager) and exit, as TangSengDaoDao serves them
    /// (docs/adapters/wukong.md, "Groups in live relay"): the group read afterwards lists neither.
    @Test func membersRemovedOrExitedAreNoLongerListed() async throws {
        try await Self.withBackend { rig, backend in
            let id = try await backend.createGroup(GroupProfile(id: "x", name: "G", owner: "alice", members: ["bob", "carol", "dave"]))
            func headers(_ uid: UserID) async throws -> [(name: String, value: String)] {
                [("token", try await backend.session(uid)), ("Content-Type", "application/json")]
            }
            let path = WKDirectoryPaths.groupMembers(id.rawValue)
            let byMember = try await rig.send("DELETE", path, body: Array(#"{"members":["carol"]}"#.utf8), headers: try await headers("bob"))
            #expect(byMember.status == 400 && byMember.json["msg"]?.stringValue == "普通成员无法删除群成员")
            let itself = try await rig.send("DELETE", path, body: Array(#"{"members":["alice"]}"#.utf8), headers: try await headers("alice"))
            #expect(itself.status == 400 && itself.json["msg"]?.stringValue == "不能删除自己")
            let stranger = try await rig.send("DELETE", path, body: Array(#"{"members":["zed"]}"#.utf8), headers: try await headers("alice"))
            #expect(stranger.status == 400 && stranger.json["msg"]?.stringValue == "被删除者不在此群内")
            let removed = try await rig.send("DELETE", path, body: Array(#"{"members":["carol"]}"#.utf8), headers: try await headers("alice"))
            #expect(removed.status == 200, "\(removed.text)")
            let exited = try await rig.send("POST", WKDirectoryPaths.group(id.rawValue) + "/exit", headers: try await headers("dave"))
            #expect(exited.status == 200, "\(exited.text)")
            let again = try await rig.send("POST", WKDirectoryPaths.group(id.rawValue) + "/exit", headers: try await headers("dave"))
            #expect(again.status == 400 && again.json["msg"]?.stringValue == "群成员不存在群内！")
            #expect(try await backend.group(id)?.members == ["alice", "bob"])
            // The creator leaves: the next oldest member becomes the creator (the owner read back).
            _ = try await rig.send("POST", WKDirectoryPaths.group(id.rawValue) + "/exit", headers: try await headers("alice"))
            let after = try await backend.group(id)
            #expect(after?.members == ["bob"] && after?.owner == "bob", "\(String(describing: after))")
        }
    }

    @Test func theListsWuKongCannotGive() async throws {
        try await Self.withBackend { _, backend in
            let users = await #expect(throws: IMError.self) { _ = try await backend.allUsers() }
            #expect(users?.code == .unsupported && users?.message.contains("WuKongIM") == true)
            let groups = await #expect(throws: IMError.self) { _ = try await backend.allGroups() }
            #expect(groups?.code == .unsupported)
        }
    }

    @Test func sandboxRefusesBadCallsAndForgedCredentials() async throws {
        try await Self.withBackend(managerToken: "mgr") { rig, backend in
            let forged = try await rig.get(WKDirectoryPaths.user("alice"), headers: [("token", "forged")])
            #expect(forged.status == 401)
            let wrong = WuKongBackend(settings: .at(rig.baseURL, managerToken: "wrong", timeout: .seconds(5)))
            let denied = await #expect(throws: IMError.self) { _ = try await wrong.users(["alice"]) }
            #expect(denied?.code == .authenticationFailed)

            let token = try await backend.session("alice")
            let headers = [("token", token), ("Content-Type", "application/json")]
            let badField = try await rig.send("PUT", WKDirectoryPaths.currentUser, body: Array(#"{"password":"x"}"#.utf8), headers: headers)
            #expect(badField.status == 400 && badField.json["msg"]?.stringValue?.contains("password") == true)
            let noMembers = try await rig.send("POST", WKDirectoryPaths.groupCreate, body: Array(#"{"name":"x","members":[]}"#.utf8), headers: headers)
            #expect(noMembers.status == 400)
            let id = try await backend.createGroup(GroupProfile(id: "x", name: "G", owner: "alice", members: ["bob"]))
            let bob = [("token", try await backend.session("bob")), ("Content-Type", "application/json")]
            let notManager = try await rig.send("PUT", WKDirectoryPaths.group(id.rawValue), body: Array(#"{"name":"mine"}"#.utf8), headers: bob)
            #expect(notManager.status == 400, "only the creator or a manager changes the group")
            let unknown = try await rig.get(WKDirectoryPaths.groupDetail("nope"), headers: headers)
            #expect(unknown.status == 400 && unknown.json["msg"]?.stringValue == "群不存在！")
        }
    }

    @Test func injectedFaultsSurfaceAsRetryableErrors() async throws {
        try await Self.withBackend { rig, backend in
            try await backend.saveUser(UserProfile(id: "alice", name: "Alice"))
            rig.rig.server.faults.add(FaultInjector.Rule(status: 429, count: 1, pathPrefix: "/v1/users"))
            let limited = await #expect(throws: IMError.self) { _ = try await backend.users(["alice"]) }
            #expect(limited?.code == .rateLimited && limited?.isRetryable == true)
            rig.rig.server.faults.add(FaultInjector.Rule(status: 503, count: 1, pathPrefix: "/v1/group"))
            let down = await #expect(throws: IMError.self) { _ = try await backend.createGroup(GroupProfile(id: "x", owner: "alice")) }
            #expect(down?.code == .unavailable && down?.isRetryable == true)
            #expect(try await backend.users(["alice"]).first?.name == "Alice", "the faults are spent")
        }
    }

    @Test func usersAndGroupsSurviveASandboxRestartWithItsStateFile() async throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("wk-dir-\(UUID().uuidString).sqlite").path
        defer { try? FileManager.default.removeItem(atPath: path) }
        var id = GroupID("")
        try await Self.withBackend(statePath: path) { _, backend in
            try await backend.saveUser(UserProfile(id: "alice", name: "Alice"))
            id = try await backend.createGroup(GroupProfile(id: "x", name: "Kept", owner: "alice", members: ["bob"]))
        }
        try await Self.withBackend(statePath: path) { _, backend in
            #expect(try await backend.users(["alice"]).first?.name == "Alice")
            let group = try #require(try await backend.group(id))
            #expect(group.name == "Kept" && group.members == ["alice", "bob"] && group.owner == "alice")
        }
    }
}
