import Foundation
import IMCore
import IMHTTP
import IMSandbox
@testable import NIM
import NIMSandbox
import SandboxTestSupport
import Testing

/// Users and teams (`UserDirectory`, `GroupDirectory`) through the NIM adapter against the sandbox over
/// loopback, and the sandbox's team endpoints seen raw.
@Suite(.serialized) struct NIMDirectoryTests {
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
        try await WiredBackend.with { wired in
            let nim = wired.backend
            try await nim.saveUser(UserProfile(id: "alice", name: "Alice", avatar: "https://cdn.example/a.png",
                                               extra: ["sign": "hi", "gender": 2, "ex": ["vip": true], "signature": "not a NIM field"]))
            try await nim.saveUser(UserProfile(id: "bob"))
            let read = try await nim.users(["alice", "ghost", "bob"])
            #expect(read.map(\.id) == ["alice", "bob"], "unknown ids are left out, the order asked is kept")
            let alice = try #require(read.first)
            #expect(alice.name == "Alice" && alice.avatar == "https://cdn.example/a.png")
            #expect(alice.extra["sign"] == "hi" && alice.extra["gender"]?.int64Value == 2)
            #expect(alice.extra["ex"]?.stringValue.flatMap { try? JSONValue.parse($0) } == ["vip": true], "a non-string ex goes as its JSON text")
            #expect(alice.extra["signature"] == nil, "a key NIM has no field for is not sent")
            #expect(read.last == UserProfile(id: "bob"))

            try await nim.saveUser(UserProfile(id: "alice", name: "Alice Liddell", extra: ["sign": "bye", "email": "a@example.com"]))
            let updated = try #require(try await nim.users(["ALICE"]).first)
            #expect(updated.id == "ALICE", "the id comes back as asked")
            #expect(updated.name == "Alice Liddell" && updated.extra["sign"] == "bye" && updated.extra["email"] == "a@example.com")
            #expect(updated.avatar == "https://cdn.example/a.png" && updated.extra["gender"]?.int64Value == 2, "fields not given are kept")

            try await nim.ensureUser(UserProfile(id: "alice", name: "Someone Else"))
            #expect(try await nim.users(["alice"]).first?.name == "Alice Liddell", "ensureUser leaves an existing user alone")
            let empty1 = try await nim.users([]).isEmpty
            #expect(empty1)
        }
    }

    @Test func teamsAreCreatedReadAndUpdatedWithoutRemovingMembers() async throws {
        try await WiredBackend.with { wired in
            let nim = wired.backend
            for user in ["alice", "bob", "carol", "dave"] { try await nim.saveUser(UserProfile(id: UserID(user), name: user.capitalized)) }
            let tid = try await nim.createGroup(GroupProfile(id: "ignored", name: "Book club", avatar: "https://cdn.example/g.png",
                                                             owner: "alice", members: ["alice", "bob", "carol"],
                                                             announcement: "Chapter 3 on Friday", extra: ["intro": "we read"]))
            #expect(Int64(tid.rawValue) != nil, "NIM assigns a numeric tid")
            let group = try #require(try await nim.group(tid))
            #expect(group.id == tid && group.name == "Book club" && group.avatar == "https://cdn.example/g.png")
            #expect(group.owner == "alice" && group.members == ["alice", "bob", "carol"])
            #expect(group.announcement == "Chapter 3 on Friday" && group.extra["intro"] == "we read")
            #expect(group.extra["joinmode"]?.int64Value == 0 && group.extra["maxusers"]?.int64Value == 200)

            var change = group
            change.name = "Book club (2024)"
            change.members = ["bob", "dave"]
            change.announcement = nil
            try await nim.updateGroup(change)
            let updated = try #require(try await nim.group(tid))
            #expect(updated.name == "Book club (2024)" && updated.announcement == "Chapter 3 on Friday")
            #expect(updated.members == ["alice", "bob", "carol", "dave"], "missing members are added, none removed")

            let second = try await nim.createGroup(GroupProfile(id: "g2", owner: "dave", members: ["bob"]))
            #expect(try await nim.group(second)?.name == "g2", "without a name the team is named after the id given")
            #expect(try await nim.groups(of: "dave") == [tid, second])
            #expect(try await nim.groups(of: "carol") == [tid])
            #expect(try await nim.groups(of: "ghost") == [])
            #expect(try await nim.group("999999999") == nil)
            #expect(try await nim.group("not-a-tid") == nil)
        }
    }

    @Test func badTeamInputIsRefusedAndCreatesNothing() async throws {
        try await WiredBackend.with { wired in
            let nim = wired.backend
            try await nim.saveUser(UserProfile(id: "alice"))
            await Self.expectError(.invalidArgument) { _ = try await nim.createGroup(GroupProfile(id: "g", members: ["alice"])) }
            await Self.expectError(.notFound) {
                _ = try await nim.createGroup(GroupProfile(id: "g", owner: "alice", members: ["ghost"]))
            }
            let empty2 = try await nim.groups(of: "alice").isEmpty
            #expect(empty2, "a refused create leaves no team behind")
            await Self.expectError(.notFound) { try await nim.updateGroup(GroupProfile(id: "123456", name: "x")) }
            let tid = try await nim.createGroup(GroupProfile(id: "g", owner: "alice"))
            await Self.expectError(.notFound) { try await nim.updateGroup(GroupProfile(id: tid, members: ["ghost"])) }
            #expect(try await nim.group(tid)?.members == ["alice"])
            await Self.expectError(.invalidArgument) {
                try await nim.updateGroup(GroupProfile(id: tid, name: String(repeating: "n", count: 65)))
            }
        }
    }

    @Test func listingEveryUserOrTeamIsUnsupported() async throws {
        try await WiredBackend.with { wired in
            await Self.expectError(.unsupported) { _ = try await wired.backend.allUsers() }
            await Self.expectError(.unsupported) { _ = try await wired.backend.allGroups() }
        }
    }

    @Test func forgedSignaturesAreRefused() async throws {
        try await WiredBackend.with { wired in
            let forged = NIMBackend(settings: NIMSettings(apiURL: wired.sandbox.baseURL, appKey: "k", appSecret: "wrong"))
            await Self.expectError(.authenticationFailed) { try await forged.saveUser(UserProfile(id: "alice")) }
            await Self.expectError(.authenticationFailed) { _ = try await forged.groups(of: "alice") }
            let empty3 = try await wired.backend.users(["alice"]).isEmpty
            #expect(empty3, "the forged call created nothing")
        }
    }

    @Test func injectedFaultsSurfaceAsRetryableErrors() async throws {
        try await WiredBackend.with { wired in
            let nim = wired.backend
            try await nim.saveUser(UserProfile(id: "alice"))
            let tid = try await nim.createGroup(GroupProfile(id: "g", owner: "alice"))
            wired.sandbox.faults.add(.init(status: 503, count: 1, pathPrefix: "/nimserver/team/query"))
            do {
                _ = try await nim.group(tid)
                Issue.record("the 503 did not surface")
            } catch let error as IMError {
                #expect(error.isRetryable && error.code == .unavailable)
            }
            wired.sandbox.faults.add(.init(status: 429, count: 1, pathPrefix: "/nimserver/user/getUinfos"))
            do {
                _ = try await nim.users(["alice"])
                Issue.record("the 429 did not surface")
            } catch let error as IMError {
                #expect(error.isRetryable && error.code == .rateLimited && error.vendorCode == "416")
            }
            #expect(try await nim.group(tid)?.owner == "alice", "after the faults the calls succeed again")
        }
    }

    /// The team endpoints as the vendor documents them, raw (not through `NIMClient`).
    @Test func sandboxServesTeamsAsDocumented() async throws {
        try await NIMSandboxHelper.with(.init(callbacks: .none)) { sandbox in
            try await sandbox.createUsers("alice", "bob", "carol")
            let required: [(String, String)] = [("tname", "t"), ("owner", "alice"), ("members", #"["bob"]"#), ("msg", "hi"),
                                                ("magree", "0"), ("joinmode", "0")]
            for missing in ["tname", "owner", "members", "msg", "magree", "joinmode"] {
                let answer = try await sandbox.call("POST", "/team/create.action", .form(required.filter { $0.0 != missing })).json
                #expect(answer["code"] == 414, "without \(missing)")
            }
            #expect(try await sandbox.call("POST", "/team/create.action", .form(required.map { $0.0 == "joinmode" ? ($0.0, "3") : $0 })).json["code"] == 414)
            #expect(try await sandbox.call("POST", "/team/create.action", .form(required.map { $0.0 == "members" ? ($0.0, "bob") : $0 })).json["code"] == 414)
            let crowd = JSONValue.array((1...200).map { .string("u\($0)") }).jsonString()
            #expect(try await sandbox.call("POST", "/team/create.action", .form(required.map { $0.0 == "members" ? ($0.0, crowd) : $0 })).json["code"] == 801)

            let created = try await sandbox.call("POST", "/team/create.action", .form(required.map { $0.0 == "members" ? ($0.0, "['Bob', 'ghost']") : $0 })).json
            #expect(created["code"] == 200 && created["faccid"]?["accid"] == ["ghost"])
            let tid = try #require(created["tid"]?.int64Value)
            #expect(try await sandbox.call("POST", "/team/add.action", .form([("tid", String(tid)), ("owner", "bob"), ("members", #"["carol"]"#),
                                                                 ("magree", "0"), ("msg", "hi")])).json["code"] == 802)
            #expect(try await sandbox.call("POST", "/team/add.action", .form([("tid", "1"), ("owner", "alice"), ("members", #"["carol"]"#),
                                                                 ("magree", "0"), ("msg", "hi")])).json["code"] == 803)
            #expect(try await sandbox.call("POST", "/team/add.action", .form([("tid", String(tid)), ("owner", "alice"), ("members", #"["carol","bob"]"#),
                                                                 ("magree", "0"), ("msg", "hi")])).json["code"] == 200)
            #expect(try await sandbox.call("POST", "/team/update.action", .form([("tid", String(tid)), ("owner", "alice"), ("announcement", "a"),
                                                                    ("uptinfomode", "1")])).json["code"] == 200)

            let query = try await sandbox.call("POST", "/team/query.action", .form([("tids", "[\"\(tid)\"]"), ("ope", "1")])).json
            let info = try #require(query["tinfos"]?.arrayValue?.first)
            #expect(info["owner"] == "alice" && info["members"] == ["bob", "carol"] && info["admins"] == [] && info["size"] == 3)
            #expect(info["announcement"] == "a" && info["uptinfomode"] == 1 && info["tname"] == "t")
            let brief = try await sandbox.call("POST", "/team/query.action", .form([("tids", "[\"\(tid)\"]"), ("ope", "0")])).json
            #expect(brief["tinfos"]?.arrayValue?.first?["members"] == nil)
            #expect(try await sandbox.call("POST", "/team/query.action", .form([("tids", #"["42"]"#), ("ope", "1")])).json["code"] == 803)
            let lenient = try await sandbox.call("POST", "/team/query.action", .form([("tids", "[\"42\",\"\(tid)\"]"), ("ope", "1"), ("ignoreInvalid", "true")])).json
            #expect(lenient["tinfos"]?.arrayValue?.count == 1 && lenient["invalidTids"] == ["42"])

            let joined = try await sandbox.call("POST", "/team/joinTeams.action", .form([("accid", "carol")])).json
            #expect(joined["count"] == 1 && joined["infos"]?.arrayValue?.first?["tid"]?.int64Value == tid)
            #expect(try await sandbox.call("POST", "/team/joinTeams.action", .form([("accid", "nobody")])).json["count"] == 0)
            let forged = try await sandbox.call("POST", "/team/query.action", .form([("tids", "[\"\(tid)\"]"), ("ope", "1")]), headers: NIMSandboxHelper.signedHeaders(secret: "wrong")).json
            #expect(forged["code"] == 414 && forged["desc"] == "checksum")
        }
    }
}
