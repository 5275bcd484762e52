import Foundation
import IMCore
import IMHTTP
import IMSandbox
import Testing
@testable import RongCloud
import RongCloudSandbox
import SandboxTestSupport

/// `RongCloudBackend` as `UserDirectory` and `GroupDirectory` against the RongCloud sandbox over loopback.
@Suite(.serialized) struct RongCloudDirectoryTests {
    /// A sandbox and a backend signed with its key.
    static func withBackend(statePath: String? = nil,
                            _ body: (RongCloudSandboxHelper, RongCloudBackend) async throws -> Void) async throws {
        try await RongCloudSandboxHelper.with(.init(statePath: statePath)) { rig in
            var settings = RongCloudSettings(appKey: RongCloudSandboxHelper.appKey, appSecret: RongCloudSandboxHelper.secret, apiURLs: [rig.rig.baseURL])
            settings.timeout = .seconds(5)
            let backend = RongCloudBackend(id: "rc", settings: settings)
            try await body(rig, backend)
        }
    }

    @Test func savedUsersReadBackWithNameAvatarAndCreateTimeAndUnknownOnesAreLeftOut() async throws {
        try await Self.withBackend { _, backend in
            try await backend.saveUser(UserProfile(id: "alice", name: "Alice", avatar: "https://example.com/a.png"))
            try await backend.saveUser(UserProfile(id: "bob", name: "Bob"))
            let read = try await backend.users(["bob", "nobody", "alice"])
            #expect(read.map(\.id) == ["bob", "alice"], "order asked, unknown left out")
            #expect(read[1].name == "Alice" && read[1].avatar == "https://example.com/a.png")
            #expect(read[0].name == "Bob" && read[0].avatar == nil)
            let created = read[1].extra["createTime"]?.stringValue ?? ""
            #expect(created.wholeMatch(of: /\d{4}-\d\d-\d\d \d\d:\d\d:\d\d/) != nil, "createTime kept in extra: \(created)")

            try await backend.saveUser(UserProfile(id: "alice", name: "Alice Liddell"))
            let updated = try await backend.users(["alice"])
            #expect(updated.first?.name == "Alice Liddell")
            #expect(updated.first?.avatar == "https://example.com/a.png", "a missing avatar leaves the stored one")
            #expect(updated.first?.extra["createTime"]?.stringValue == created, "an update is not a new registration")
        }
    }

    @Test func groupCreatedWithOwnerAndMembersReadsBackAndUpdatesOnlyAdd() async throws {
        try await Self.withBackend { rig, backend in
            let id = try await backend.createGroup(GroupProfile(id: "g1", name: "Tea", avatar: "https://example.com/g.png", owner: "alice",
                                                                members: ["bob", "carol", "alice"], announcement: "hello"))
            #expect(id == "g1", "RongCloud lets the caller choose the id")
            let read = try #require(try await backend.group("g1"))
            #expect(read.members == ["alice", "bob", "carol"], "owner first, then the members, no repeat")
            #expect(read.name == "Tea")
            #expect(read.avatar == nil && read.owner == nil && read.announcement == nil, "the classic group API keeps none of these")
            #expect(try await backend.group("nope") == nil)

            try await backend.updateGroup(GroupProfile(id: "g1", name: "Coffee", members: ["dave", "bob"]))
            let updated = try #require(try await backend.group("g1"))
            #expect(updated.name == "Coffee")
            #expect(updated.members == ["alice", "bob", "carol", "dave"], "dave added, nobody removed")
            #expect(rig.vendor.store.groups.first?.members == updated.members.map(\.rawValue))

            try await backend.updateGroup(GroupProfile(id: "g1", members: []))
            #expect(try await backend.group("g1")?.name == "Coffee", "no name given: the name stays")

            let missing = await #expect(throws: IMError.self) { try await backend.updateGroup(GroupProfile(id: "nope", name: "x", members: ["a"])) }
            #expect(missing?.code == .notFound)
            let empty = await #expect(throws: IMError.self) { _ = try await backend.createGroup(GroupProfile(id: "g2", name: "x")) }
            #expect(empty?.code == .invalidArgument)
        }
    }

    @Test func membersAreRemovedWithQuitAndAGroupWithoutMembersIsGone() async throws {
        try await Self.withBackend { rig, backend in
            _ = try await backend.createGroup(GroupProfile(id: "g1", name: "Tea", members: ["alice", "bob", "carol"]))
            try await backend.removeMembers(["bob", "nobody", "bob"], from: "g1")
            #expect(try await backend.group("g1")?.members == ["alice", "carol"], "bob quit; a non-member is skipped")
            #expect(try await backend.groups(of: "bob") == [])
            try await backend.removeMembers([], from: "g1")
            #expect(try await backend.group("g1")?.members == ["alice", "carol"], "nothing to remove: no call, nothing changes")
            try await backend.removeMembers(["alice", "carol"], from: "g1")
            #expect(try await backend.group("g1") == nil, "a RongCloud group without members does not exist")
            #expect(rig.vendor.store.groups.isEmpty)
            // The sandbox answers the vendor's shape: repeated or comma-joined ids, the same limits as join.
            _ = try await rig.call("POST", RCPaths.groupCreate, .formText("userId=a,b,c&groupId=g2&groupName=G"))
            let quit = try await rig.call("POST", RCPaths.groupQuit, .formText("userId=a,b&groupId=g2"))
            #expect(quit.status == 200 && quit.json["code"]?.int64Value == 200)
            #expect(rig.vendor.store.groups.first?.members == ["c"])
            let noUser = try await rig.call("POST", RCPaths.groupQuit, .formText("groupId=g2"))
            #expect(noUser.status == 400 && noUser.json["code"]?.int64Value == 1002)
            let many = (0...1000).map { "userId=u\($0)" }.joined(separator: "&")
            #expect(try await rig.call("POST", RCPaths.groupQuit, .formText(many + "&groupId=g2")).json["code"]?.int64Value == 1502)
        }
    }

    @Test func groupsOfAUserAndTheListsRongCloudCannotGive() async throws {
        try await Self.withBackend { _, backend in
            _ = try await backend.createGroup(GroupProfile(id: "g2", name: "Two", members: ["alice", "bob"]))
            _ = try await backend.createGroup(GroupProfile(id: "g1", name: "One", members: ["alice"]))
            #expect(try await backend.groups(of: "alice") == ["g1", "g2"])
            #expect(try await backend.groups(of: "bob") == ["g2"])
            #expect(try await backend.groups(of: "nobody") == [])
            let users = await #expect(throws: IMError.self) { _ = try await backend.allUsers() }
            #expect(users?.code == .unsupported && users?.message.contains("RongCloud") == true)
            let groups = await #expect(throws: IMError.self) { _ = try await backend.allGroups() }
            #expect(groups?.code == .unsupported)
        }
    }

    @Test func largeGroupsAreCreatedInChunksOfAThousand() async throws {
        try await Self.withBackend { _, backend in
            let members = (0..<2500).map { UserID("u\($0)") }
            _ = try await backend.createGroup(GroupProfile(id: "big", name: "Big", members: members))
            #expect(try await backend.group("big")?.members == members)
            let tooMany = await #expect(throws: IMError.self) {
                try await backend.updateGroup(GroupProfile(id: "big", members: (0..<600).map { UserID("v\($0)") }))
            }
            #expect(tooMany?.code == .limitExceeded, "3000 members at most, checked before any join")
            #expect(try await backend.group("big")?.members.count == 2500)
        }
    }

    @Test func sandboxRefusesBadGroupCallsAndForgedSignatures() async throws {
        try await RongCloudSandboxHelper.with { rig in
            let noName = try await rig.call("POST", RCPaths.groupCreate, .formText("userId=a&groupId=g1"))
            #expect(noName.status == 400 && noName.json["code"]?.int64Value == 1002)
            let badId = try await rig.call("POST", RCPaths.groupCreate, .formText("userId=a&groupId=g%2F1&groupName=x"))
            #expect(badId.json["code"]?.int64Value == 1002)
            let many = (0...1000).map { "userId=u\($0)" }.joined(separator: "&")
            let tooMany = try await rig.call("POST", RCPaths.groupJoin, .formText(many + "&groupId=g1"))
            #expect(tooMany.json["code"]?.int64Value == 1502)
            let refreshUnknown = try await rig.call("POST", RCPaths.groupRefresh, .formText("groupId=g9&groupName=x"))
            #expect(refreshUnknown.json["code"]?.int64Value == 1002 && refreshUnknown.text.contains("group not found"))
            let created = try await rig.call("POST", RCPaths.groupCreate, .formText("userId=a,b&userId=c&groupId=g1&groupName=G"))
            #expect(created.status == 200 && created.json["code"]?.int64Value == 200)
            let members = try await rig.call("POST", RCPaths.groupMembers, .formText("groupId=g1"))
            #expect(members.json["users"]?.arrayValue?.compactMap { $0["id"]?.stringValue } == ["a", "b", "c"])
            let page = try await rig.call("POST", RCPaths.userGroups, .formText("userId=b&page=1&size=10"))
            #expect(page.json["groups"]?.arrayValue?.first?["name"]?.stringValue == "G")
            let badSize = try await rig.call("POST", RCPaths.userGroups, .formText("userId=b&page=1&size=1001"))
            #expect(badSize.json["code"]?.int64Value == 1002)

            let forged = try await rig.call("POST", RCPaths.groupMembers, .formText("groupId=g1"), headers: RongCloudSandboxHelper.signedHeaders(secret: "forged"))
            #expect(forged.status == 401 && forged.json["code"]?.int64Value == 1004)
            let backend = RongCloudBackend(settings: .init(appKey: RongCloudSandboxHelper.appKey, appSecret: "forged", apiURLs: [rig.rig.baseURL]))
            let denied = await #expect(throws: IMError.self) { _ = try await backend.group("g1") }
            #expect(denied?.code == .authenticationFailed)
        }
    }

    @Test func injectedFaultsSurfaceAsRetryableErrors() async throws {
        try await Self.withBackend { rig, backend in
            rig.rig.server.faults.add(FaultInjector.Rule(status: 429, vendorCode: 1008, count: 1, pathPrefix: "/group"))
            let limited = await #expect(throws: IMError.self) { _ = try await backend.group("g1") }
            #expect(limited?.code == .rateLimited && limited?.isRetryable == true)
            rig.rig.server.faults.add(FaultInjector.Rule(status: 503, count: 1, pathPrefix: "/user/info"))
            let down = await #expect(throws: IMError.self) { _ = try await backend.users(["alice"]) }
            #expect(down?.code == .unavailable && down?.isRetryable == true)
            let after = try await backend.users(["alice"])
            #expect(after.isEmpty, "the fault is spent; alice is unknown")
        }
    }

    @Test func groupsSurviveASandboxRestartWithItsStateFile() async throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("rc-dir-\(UUID().uuidString).sqlite").path
        defer { try? FileManager.default.removeItem(atPath: path) }
        try await Self.withBackend(statePath: path) { _, backend in
            _ = try await backend.createGroup(GroupProfile(id: "g1", name: "Kept", members: ["alice", "bob"]))
            try await backend.saveUser(UserProfile(id: "alice", name: "Alice"))
        }
        try await Self.withBackend(statePath: path) { _, backend in
            let group = try #require(try await backend.group("g1"))
            #expect(group.name == "Kept" && group.members == ["alice", "bob"])
            #expect(try await backend.users(["alice"]).first?.name == "Alice")
        }
    }
}
