import Foundation
import IMAdapterKit
import IMCore
import IMHTTP
import IMSandbox
import JMessage
import JMessageSandbox
import SandboxTestSupport
import Testing

/// Users and groups (`UserDirectory`, `GroupDirectory`) through the JMessage adapter against the sandbox
/// over loopback, and the sandbox's user and group routes seen raw.
@Suite(.serialized) struct JMessageDirectoryTests {
    /// Runs `body` with a fresh sandbox (optionally keeping state in `statePath`) and a backend on it
    /// (admin registered, no polling), and stops both afterwards.
    static func with(statePath: String? = nil, _ body: (JMessageSandboxHelper, JMessageBackend) async throws -> Void) async throws {
        let sandbox = try await JMessageSandboxHelper.start(.init(statePath: statePath))
        let backend = JMessageBackend(id: "jm", settings: sandbox.backendSettings, clock: sandbox.clock)
        do {
            try await backend.start(pollIntervalMs: nil)
            try await body(sandbox, backend)
        } catch {
            await backend.stop()
            await sandbox.stop()
            throw error
        }
        await backend.stop()
        await sandbox.stop()
    }

    /// A media_id of the sandbox's own upload (`POST /v1/resource?type=image`, raw).
    static func uploadedImage(_ sandbox: JMessageSandboxHelper) async throws -> String {
        let form = Multipart.encode(fieldName: "image", fileName: "a.png", contentType: "image/png", data: Array("png".utf8))
        let response = try await sandbox.call("POST", "/v1/resource?type=image", .bytes(form.body, contentType: form.contentType))
        return try #require(try sandbox.json(response)["media_id"]?.stringValue)
    }

    static func expectError(_ code: IMError.Code, _ body: () async throws -> Void, sourceLocation: SourceLocation = #_sourceLocation) async {
        do {
            try await body()
            Issue.record("no error, expected \(code)", sourceLocation: sourceLocation)
        } catch let error as IMError {
            #expect(error.code == code, "\(error)", sourceLocation: sourceLocation)
        } catch {
            Issue.record("\(error)", sourceLocation: sourceLocation)
        }
    }

    @Test func usersAreSavedReadBackAndUpdated() async throws {
        let media = try await MediaHost.start()
        defer { Task { await media.stop() } }
        let avatar = media.url("/a1.png")
        try await Self.with { sandbox, jm in
            try await jm.saveUser(UserProfile(id: "alice", name: "Alice", avatar: avatar,
                                              extra: ["birthday": "1990-01-24", "gender": 2, "signature": "hi", "extras": ["vip": true],
                                                      "sign": "a NIM field"]))
            try await jm.saveUser(UserProfile(id: "bobby"))
            let read = try await jm.users(["alice", "ghost", "bobby", "dave#OTHERAPP"])
            #expect(read.map(\.id) == ["alice", "bobby"], "unknown ids (and other apps' users) are left out, the order asked is kept")
            let alice = try #require(read.first)
            #expect(alice.name == "Alice" && alice.avatar == avatar, "an avatar uploaded from a URL reads as that URL")
            let stored = try sandbox.json(try await sandbox.call("GET", "/v1/users/alice"))["avatar"]?.stringValue
            #expect(stored?.hasPrefix("qiniu/image/") == true, "JMessage holds a media_id of its own upload: \(stored ?? "none")")
            #expect(alice.extra["birthday"] == "1990-01-24 00:00:00" && alice.extra["gender"]?.int64Value == 2)
            #expect(alice.extra["signature"] == "hi" && alice.extra["extras"] == ["vip": true])
            #expect(alice.extra["sign"] == nil, "a key JMessage has no field for is not sent")
            #expect(read.last == UserProfile(id: "bobby"))

            var change = alice
            change.name = "Alice Liddell"
            change.extra["region"] = "Oxford"
            change.extra["extras"] = #"{"vip":false}"#
            try await jm.saveUser(change)
            let updated = try #require(try await jm.users(["alice"]).first)
            #expect(updated.name == "Alice Liddell" && updated.extra["region"] == "Oxford" && updated.extra["extras"] == ["vip": false])
            #expect(updated.extra["birthday"] == "1990-01-24 00:00:00", "a birthday read back is written back as its date")
            try await jm.saveUser(UserProfile(id: "alice", extra: ["address": "Wonderland"]))
            let kept = try #require(try await jm.users(["alice"]).first)
            #expect(kept.name == "Alice Liddell" && kept.avatar == avatar && kept.extra["address"] == "Wonderland",
                    "fields not given are kept")

            try await jm.ensureUser(UserProfile(id: "alice", name: "Someone Else"))
            #expect(try await jm.users(["alice"]).first?.name == "Alice Liddell", "ensureUser leaves an existing user alone")
            #expect(media.requests == ["/a1.png"], "the URL was fetched once: \(media.requests)")
            // A picture its host does not have: the profile is written without it, the avatar kept.
            try await jm.saveUser(UserProfile(id: "alice", name: "Alice L.", avatar: media.url("/missing/new.png")))
            let unchanged = try #require(try await jm.users(["alice"]).first)
            #expect(unchanged.name == "Alice L." && unchanged.avatar == avatar, "\(unchanged)")
            try await jm.saveUser(UserProfile(id: "carol", name: "Carol", avatar: "https://host.invalid/c.png"))
            #expect(try await jm.users(["carol"]).first.map { $0.name == "Carol" && $0.avatar == nil } == true, "a host that cannot be reached")
            await Self.expectError(.invalidArgument) { try await jm.saveUser(UserProfile(id: "alice", extra: ["extras": "not an object"])) }
            await Self.expectError(.invalidArgument) { try await jm.saveUser(UserProfile(id: "alice", extra: ["gender": 7])) }
            await Self.expectError(.invalidArgument) { try await jm.saveUser(UserProfile(id: "dave#OTHERAPP")) }
        }
    }

    /// The uploads of URLs are noted in the store the backend is given (`notes`): a backend started
    /// afterwards on the same notes reads the avatar as its URL and uploads nothing again.
    @Test func anAvatarUploadedFromAURLReadsAsItAfterARestart() async throws {
        let media = try await MediaHost.start()
        defer { Task { await media.stop() } }
        let avatar = media.url("/kept.png")
        let notes = InMemoryCheckpointStorage()
        let sandbox = try await JMessageSandboxHelper.start()
        defer { Task { await sandbox.stop() } }
        let first = JMessageBackend(id: "jm", settings: sandbox.backendSettings, notes: notes, clock: sandbox.clock)
        try await first.start(pollIntervalMs: nil)
        try await first.saveUser(UserProfile(id: "alice", name: "Alice", avatar: avatar))
        let gid = try await first.createGroup(GroupProfile(id: "g", name: "G", avatar: avatar, owner: "alice"))
        await first.stop()
        #expect(media.requests == ["/kept.png"])

        let restarted = JMessageBackend(id: "jm", settings: sandbox.backendSettings, notes: notes, clock: sandbox.clock)
        try await restarted.start(pollIntervalMs: nil)
        #expect(try await restarted.users(["alice"]).first?.avatar == avatar)
        #expect(try await restarted.group(gid)?.avatar == avatar)
        try await restarted.saveUser(UserProfile(id: "bobby", avatar: avatar))
        #expect(media.requests == ["/kept.png"], "the noted upload is used again: \(media.requests)")
        let held = try sandbox.json(try await sandbox.call("GET", "/v1/users/bobby"))["avatar"]?.stringValue
        let aliceHeld = try sandbox.json(try await sandbox.call("GET", "/v1/users/alice"))["avatar"]?.stringValue
        #expect(held != nil && held == aliceHeld, "one media_id for one URL")

        let forgetful = JMessageBackend(id: "jm", settings: sandbox.backendSettings, clock: sandbox.clock)
        try await forgetful.start(pollIntervalMs: nil)
        let read = try #require(try await forgetful.users(["alice"]).first?.avatar)
        #expect(read.hasPrefix(sandbox.baseURL + "/_sandbox/media/"), "without the notes, the media_id reads as its download URL: \(read)")
        await restarted.stop()
        await forgetful.stop()
    }

    @Test func groupsAreCreatedReadAndUpdatedWithoutRemovingMembers() async throws {
        let media = try await MediaHost.start()
        defer { Task { await media.stop() } }
        let avatar = media.url("/g1.png")
        try await Self.with { _, jm in
            for user in ["alice", "bobby", "carol", "david"] { try await jm.saveUser(UserProfile(id: UserID(user), name: user.capitalized)) }
            let gid = try await jm.createGroup(GroupProfile(id: "ignored", name: "Book club", avatar: avatar, owner: "alice",
                                                            members: ["alice", "bobby", "carol"], announcement: "not carried",
                                                            extra: ["desc": "we read"]))
            #expect(Int64(gid.rawValue) != nil, "JMessage assigns a numeric gid")
            let group = try #require(try await jm.group(gid))
            #expect(group.id == gid && group.name == "Book club" && group.avatar == avatar)
            #expect(group.owner == "alice" && group.members == ["alice", "bobby", "carol"])
            #expect(group.announcement == nil && group.extra["desc"] == "we read" && group.extra["MaxMemberCount"]?.int64Value == 500)

            var change = group
            change.name = "Book club (2024)"
            change.members = ["bobby", "david"]
            change.extra["desc"] = "we still read"
            try await jm.updateGroup(change)
            let updated = try #require(try await jm.group(gid))
            #expect(updated.name == "Book club (2024)" && updated.extra["desc"] == "we still read" && updated.avatar == avatar)
            #expect(updated.members == ["alice", "bobby", "carol", "david"], "missing members are added, none removed")

            let second = try await jm.createGroup(GroupProfile(id: "g2", owner: "david", members: ["bobby"]))
            #expect(try await jm.group(second)?.name == "g2", "without a name the group is named after the id given")
            #expect(try await jm.groups(of: "david") == [gid, second])
            #expect(try await jm.groups(of: "carol") == [gid])
            #expect(try await jm.groups(of: "ghost") == [])
            #expect(try await jm.allGroups() == [gid, second])
            #expect(try await jm.group("99999999") == nil)
            #expect(try await jm.group("not-a-gid") == nil)
        }
    }

    @Test func badGroupInputIsRefusedAndCreatesNothing() async throws {
        try await Self.with { _, jm in
            try await jm.saveUser(UserProfile(id: "alice"))
            await Self.expectError(.invalidArgument) { _ = try await jm.createGroup(GroupProfile(id: "g", members: ["alice"])) }
            await Self.expectError(.notFound) { _ = try await jm.createGroup(GroupProfile(id: "g", owner: "alice", members: ["ghost"])) }
            let empty1 = try await jm.allGroups().isEmpty
            #expect(empty1, "a refused create leaves no group behind")
            await Self.expectError(.notFound) { try await jm.updateGroup(GroupProfile(id: "123456", name: "x")) }
            let gid = try await jm.createGroup(GroupProfile(id: "g", owner: "alice"))
            await Self.expectError(.notFound) { try await jm.updateGroup(GroupProfile(id: gid, members: ["ghost"])) }
            #expect(try await jm.group(gid)?.members == ["alice"])
            await Self.expectError(.invalidArgument) {
                try await jm.updateGroup(GroupProfile(id: gid, name: String(repeating: "名", count: 22)))
            }
        }
    }

    @Test func allUsersPagesTheListingWithoutAdmins() async throws {
        try await Self.with { sandbox, jm in
            for batch in 0..<2 {
                let users = (0..<300).map { "{\"username\":\"user\(batch)_\($0)\",\"password\":\"secret\"}" }.joined(separator: ",")
                let answer = try await sandbox.call("POST", "/v1/users/", .json("[\(users)]"))
                #expect(answer.status == 201)
            }
            let all = try await jm.allUsers()
            #expect(all.count == 600 && Set(all).count == 600, "two pages of 500 and 100")
            #expect(!all.contains("bridge_admin"), "admins are listed by /v1/admins, not here")
            #expect(all.first == "user0_0")
        }
    }

    @Test func forgedCredentialsAreRefused() async throws {
        try await Self.with { sandbox, jm in
            var settings = sandbox.backendSettings
            settings.masterSecret = "wrong-secret"
            let forged = JMessageBackend(id: "jm", settings: settings)
            await Self.expectError(.authenticationFailed) { try await forged.saveUser(UserProfile(id: "alice")) }
            await Self.expectError(.authenticationFailed) { _ = try await forged.allGroups() }
            let empty2 = try await jm.users(["alice"]).isEmpty
            #expect(empty2, "the forged call created nothing")
            let raw = try await sandbox.call("PUT", "/v1/users/bridge_admin", .json(#"{"nickname":"x"}"#), headers: [("Authorization", "Basic " + Data("\(appKey):wrong".utf8).base64EncodedString())])
            #expect(raw.status == 401 && sandbox.errorCode(raw) == 899008)
        }
    }

    @Test func injectedFaultsSurfaceAsRetryableErrors() async throws {
        try await Self.with { sandbox, jm in
            try await jm.saveUser(UserProfile(id: "alice"))
            let gid = try await jm.createGroup(GroupProfile(id: "g", owner: "alice"))
            sandbox.rig.server.faults.add(.init(status: 503, count: 1, pathPrefix: "/v1/groups"))
            do {
                _ = try await jm.group(gid)
                Issue.record("the 503 did not surface")
            } catch let error as IMError {
                #expect(error.isRetryable && error.code == .unavailable)
            }
            sandbox.rig.server.faults.add(.init(status: 429, count: 1, pathPrefix: "/v1/users"))
            do {
                _ = try await jm.users(["alice"])
                Issue.record("the 429 did not surface")
            } catch let error as IMError {
                #expect(error.isRetryable && error.code == .rateLimited && error.retryAfterMs == 1000)
            }
            #expect(try await jm.group(gid)?.owner == "alice", "after the faults the calls succeed again")
        }
    }

    /// The routes as the vendor documents them, raw (not through `JMessageClient`).
    @Test func sandboxServesUsersAndGroupsAsDocumented() async throws {
        try await Self.with { sandbox, _ in
            try await sandbox.seedUsers()
            #expect(try await sandbox.call("PUT", "/v1/users/alice", .json(#"{"gender":3}"#)).status == 400)
            #expect(try await sandbox.call("PUT", "/v1/users/alice", .json(#"{"nickname":"a\nb"}"#)).status == 400)
            #expect(try await sandbox.call("PUT", "/v1/users/alice", .json(#"{"birthday":"24.01.1990"}"#)).status == 400)
            let ghost = try await sandbox.call("PUT", "/v1/users/ghost", .json(#"{"nickname":"x"}"#))
            #expect(ghost.status == 403 && sandbox.errorCode(ghost) == 899002)
            let put = try await sandbox.call("PUT", "/v1/users/alice", .json(#"{"nickname":"Al","birthday":"1990-01-24","extras":{"k":1}}"#))
            #expect(put.status == 204)
            let alice = try sandbox.json(try await sandbox.call("GET", "/v1/users/alice"))
            #expect(alice["nickname"] == "Al" && alice["birthday"] == "1990-01-24 00:00:00" && alice["extras"] == ["k": 1])
            #expect(alice["ctime"] != nil && alice["mtime"] != nil && alice["signature"] == nil, "unset fields are omitted")
            #expect(try await sandbox.call("GET", "/v1/users/?start=0&count=501").status == 400)
            let listing = try sandbox.json(try await sandbox.call("GET", "/v1/users/?start=1&count=1"))
            #expect(listing["total"] == 3 && listing["start"] == 1 && listing["count"] == 1 && listing["users"]?.arrayValue?.count == 1)

            let foreign = try await sandbox.call("POST", "/v1/groups/", .json(#"{"owner_username":"alice","name":"g","avatar":"https://cdn.example/g.png"}"#))
            #expect(sandbox.errorCode(foreign) == 899003, "an avatar is a media_id of this app's uploads, not a URL")
            #expect(sandbox.errorCode(try await sandbox.call("PUT", "/v1/users/alice", .json(#"{"avatar":"qiniu/image/j/NEVERUPLOADED"}"#))) == 899003)
            let m1 = try await Self.uploadedImage(sandbox)
            let created = try await sandbox.call("POST", "/v1/groups/", .json(#"{"owner_username":"alice","name":"g","members_username":["bobby"],"avatar":"\#(m1)","flag":2}"#))
            let gid = try #require(try sandbox.json(created)["gid"]?.int64Value)
            let group = try sandbox.json(try await sandbox.call("GET", "/v1/groups/\(gid)"))
            #expect(group["name"] == "g" && group["avatar"] == .string(m1) && group["MaxMemberCount"] == 500 && group["appkey"] != nil)
            #expect(sandbox.errorCode(try await sandbox.call("PUT", "/v1/groups/\(gid)", .json(#"{"avatar":"m2"}"#))) == 899003)
            #expect(try await sandbox.call("PUT", "/v1/groups/\(gid)", .json(#"{"avatar":""}"#)).status == 204, "an empty avatar clears it")
            #expect(try await sandbox.call("PUT", "/v1/groups/\(gid)", .json(#"{"owner_username":"bobby"}"#)).status == 400)
            #expect(try await sandbox.call("PUT", "/v1/groups/\(gid)", .json(#"{"desc":"d"}"#)).status == 204)
            let missing = try await sandbox.call("GET", "/v1/groups/424242")
            #expect(missing.status == 403 && sandbox.errorCode(missing) == 899006)
            let mine = try sandbox.json(try await sandbox.call("GET", "/v1/users/bobby/groups/"))
            #expect(mine.arrayValue?.compactMap { $0["gid"]?.int64Value } == [gid] && mine.arrayValue?.first?["desc"] == "d")
            #expect(sandbox.errorCode(try await sandbox.call("GET", "/v1/users/ghost/groups/")) == 899002)
            let groups = try sandbox.json(try await sandbox.call("GET", "/v1/groups/?start=0&count=10"))
            #expect(groups["total"] == 1 && groups["groups"]?.arrayValue?.first?["gid"]?.int64Value == gid)
            let crowd = (0..<500).map { "\"member\($0)\"" }.joined(separator: ",")
            _ = try await sandbox.call("POST", "/v1/users/", .json("[" + (0..<500).map { "{\"username\":\"member\($0)\",\"password\":\"secret\"}" }
                .joined(separator: ",") + "]"))
            let full = try await sandbox.call("POST", "/v1/groups/", .json("{\"owner_username\":\"alice\",\"name\":\"big\",\"members_username\":[\(crowd)]}"))
            #expect(sandbox.errorCode(full) == 899012)
        }
    }

    @Test func usersAndGroupsSurviveASandboxRestartWithAStateFile() async throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("jm-directory-\(UUID().uuidString).json").path
        defer { try? FileManager.default.removeItem(atPath: path) }
        var gid: GroupID?
        var m1 = ""
        try await Self.with(statePath: path) { sandbox, jm in
            try await jm.saveUser(UserProfile(id: "alice", name: "Alice", extra: ["signature": "kept"]))
            try await jm.saveUser(UserProfile(id: "bobby"))
            m1 = try await Self.uploadedImage(sandbox)
            gid = try await jm.createGroup(GroupProfile(id: "g", name: "Kept", avatar: m1, owner: "alice", members: ["bobby"],
                                                        extra: ["desc": "d"]))
        }
        try await Self.with(statePath: path) { sandbox, jm in
            let alice = try #require(try await jm.users(["alice"]).first)
            #expect(alice.name == "Alice" && alice.extra["signature"] == "kept")
            let keptID = try #require(gid)
            let group = try #require(try await jm.group(keptID))
            #expect(group.name == "Kept" && group.members == ["alice", "bobby"] && group.extra["desc"] == "d")
            // A media_id this process did not upload reads as its download URL (the upload survived the restart).
            let url = try #require(group.avatar)
            #expect(url.hasPrefix(sandbox.baseURL + "/_sandbox/media/"), "\(url)")
            let next = try await jm.createGroup(GroupProfile(id: "g2", owner: "alice"))
            #expect(next != gid, "gids keep increasing across restarts")
        }
    }
}
