import Foundation
import IMCore
import IMHTTP
import IMSandbox
@testable import NIM
import NIMSandbox
import SandboxTestSupport
import Testing

/// Members taken out (`/team/kick.action`) and teams dismissed (`/team/remove.action`) through the adapter
/// against the sandbox, and the sandbox's answers seen raw (docs/adapters/nim.md, "Groups in live relay").
extension NIMDirectoryTests {
    @Test func membersAreKickedAndATeamIsDismissedAfterWhichItTakesNoMessage() async throws {
        try await WiredBackend.with { wired in
            let nim = wired.backend
            for user in ["alice", "bob", "carol"] { try await nim.saveUser(UserProfile(id: UserID(user))) }
            let tid = try await nim.createGroup(GroupProfile(id: "x", name: "Club", owner: "alice", members: ["alice", "bob", "carol"]))
            try await nim.removeMembers(["bob", "alice", "nobody"], from: tid)
            #expect(try await nim.group(tid)?.members == ["alice", "carol"], "bob kicked; the owner and non-members skipped")
            _ = try await nim.send(OutgoingMessage(conversation: .group(tid), sender: "carol", content: .text("still here")))
            try await nim.dissolveGroup(tid)
            #expect(try await nim.group(tid) == nil, "the team is gone")
            try await nim.dissolveGroup(tid)   // a team that is gone is left alone
            await Self.expectError(.notFound) {
                _ = try await nim.send(OutgoingMessage(conversation: .group(tid), sender: "carol", content: .text("after")))
            }
        }
    }

    @Test func sandboxKicksAndRemovesAsDocumented() async throws {
        try await NIMSandboxHelper.with(.init(callbacks: .none)) { sandbox in
            try await sandbox.createUsers("alice", "bob", "carol")
            let created = try await sandbox.call("POST", "/team/create.action", .form([("tname", "t"), ("owner", "alice"),
                ("members", #"["bob","carol"]"#), ("msg", "hi"), ("magree", "0"), ("joinmode", "0")])).json
            let tid = String(try #require(created["tid"]?.int64Value))
            func kick(_ fields: [(String, String)]) async throws -> JSONValue? {
                try await sandbox.call("POST", "/team/kick.action", .form([("tid", tid)] + fields)).json["code"]
            }
            #expect(try await kick([("owner", "bob"), ("member", "carol")]) == 802, "only the owner kicks")
            #expect(try await kick([("owner", "alice"), ("member", "alice")]) == 802, "the owner is not kicked")
            #expect(try await kick([("owner", "alice"), ("members", #"["dave"]"#)]) == 804, "not in the team")
            #expect(try await kick([("owner", "alice")]) == 414)
            #expect(try await kick([("owner", "alice"), ("members", #"["bob"]"#)]) == 200)
            let query = try await sandbox.call("POST", "/team/query.action", .form([("tids", "[\"\(tid)\"]"), ("ope", "1")])).json
            #expect(query["tinfos"]?.arrayValue?.first?["members"] == ["carol"])
            let send: [(String, String)] = [("from", "carol"), ("ope", "1"), ("to", tid), ("type", "0"), ("body", #"{"msg":"hi"}"#)]
            #expect(try await sandbox.call("POST", "/msg/sendMsg.action", .form(send)).json["code"] == 200)
            #expect(try await sandbox.call("POST", "/team/remove.action", .form([("tid", tid), ("owner", "carol")])).json["code"] == 802)
            #expect(try await sandbox.call("POST", "/team/remove.action", .form([("tid", tid), ("owner", "alice")])).json["code"] == 200)
            #expect(try await sandbox.call("POST", "/msg/sendMsg.action", .form(send)).json["code"] == 803, "a removed team takes no message")
            #expect(try await sandbox.call("POST", "/team/remove.action", .form([("tid", tid), ("owner", "alice")])).json["code"] == 803)
        }
    }
}
