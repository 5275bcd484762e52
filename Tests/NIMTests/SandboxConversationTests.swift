import Foundation
import IMAdapterKit
import IMCore
import IMSandbox
import IMTesting
import NIM
import NIMSandbox
import SandboxTestSupport
import Testing

/// A team message needs a team that exists and a sender in it, as NIM's server requires
/// (docs/adapters/nim.md, "Conversations"): over HTTP with NIM's codes, and through the adapter as the
/// error classes the preset's `groupSendRefusals` names.
@Suite(.serialized) struct NIMSandboxConversationTests {
    static func text(_ text: String) -> String { JSONValue.object(["msg": .string(text)]).jsonString() }

    @Test func teamMessagesNeedATeamAndAMember() async throws {
        try await NIMSandboxHelper.with(.init(callbacks: .none)) { sandbox in
            try await sandbox.createUsers("alice", "bob", "carol")
            let created = try await sandbox.call("POST", "/team/create.action", .form([
                ("tname", "Tea"), ("owner", "alice"), ("members", #"["bob"]"#), ("msg", "join"), ("magree", "0"), ("joinmode", "0"),
            ])).json
            let tid = try #require(created["tid"]?.int64Value.map(String.init))
            #expect(try await sandbox.sendText("owner", from: "alice", to: tid, ope: 1)["code"] == 200)
            #expect(try await sandbox.sendText("member", from: "bob", to: tid, ope: 1)["code"] == 200)
            let stranger = try await sandbox.sendText("stranger", from: "carol", to: tid, ope: 1)
            #expect(stranger["code"] == 804, "\(stranger)")
            let nowhere = try await sandbox.sendText("nowhere", from: "alice", to: "987654321", ope: 1)
            #expect(nowhere["code"] == 803, "\(nowhere)")
            #expect(try await sandbox.sendText("not a tid", from: "alice", to: "t1", ope: 1)["code"] == 803)
            // A team notification (sendAttachMsg msgtype 1) follows the same rules.
            func notify(_ from: String, _ to: String) async throws -> JSONValue {
                try await sandbox.call("POST", "/msg/sendAttachMsg.action", .form([
                    ("from", from), ("msgtype", "1"), ("to", to), ("attach", #"{"k":1}"#)])).json
            }
            #expect(try await notify("bob", tid)["code"] == 200)
            #expect(try await notify("carol", tid)["code"] == 804)
            #expect(try await notify("alice", "987654321")["code"] == 803)
            // Only the two accepted messages are stored.
            #expect(try await sandbox.messages().map(\.text) == ["owner", "member"])
        }
    }

    @Test func aSenderWhoLeftTheTeamCannotRecallThere() async throws {
        try await NIMSandboxHelper.with(.init(callbacks: .none)) { sandbox in
            try await sandbox.createUsers("alice", "bob")
            try await sandbox.seedGroup("1300000777", owner: "alice", members: ["bob"], name: "Seeded")
            let sent = try await sandbox.sendText("soon gone", from: "bob", to: "1300000777", ope: 1)
            #expect(sent["code"] == 200)
            try await sandbox.seedGroup("1300000777", owner: "alice", members: [])
            let recall = try await sandbox.call("POST", "/msg/recall.action", .form([
                ("deleteMsgid", try #require(sent["data"]?["msgid"]?.stringValue)), ("timetag", try #require(sent["data"]?["timetag"]?.stringValue)),
                ("type", "8"), ("from", "bob"), ("to", "1300000777")])).json
            #expect(recall == ["code": 403, "desc": "not allow!"])
            // The seeded team is a real team: queried with its name, and new tids are assigned above it.
            let query = try await sandbox.call("POST", "/team/query.action", .form([("tids", #"["1300000777"]"#), ("ope", "1")])).json
            let info = query["tinfos"]?.arrayValue?.first
            #expect(info?["tname"] == "Seeded" && info?["members"] == [], "\(query)")
            let created = try await sandbox.call("POST", "/team/create.action", .form([
                ("tname", "Next"), ("owner", "alice"), ("members", "[]"), ("msg", "join"), ("magree", "0"), ("joinmode", "0"),
            ])).json
            #expect((created["tid"]?.int64Value ?? 0) > 1_300_000_777)
            let refused = try await sandbox.rig.send("POST", "/_sandbox/groups", body: Array(#"{"id":"t1","owner":"alice"}"#.utf8))
            #expect(refused.status == 400, "a NIM tid is a number")
        }
    }

    /// Through the adapter: NIM's 803 and 804 become the error classes of `NIMErrors.table`, and the
    /// preset's `groupSendRefusals` name the same classes and codes (what `MemoryBackend` throws).
    @Test func theAdapterMapsTheRefusalsAsThePresetSays() async throws {
        try await WiredBackend.with { wired in
            let rig = wired.rig
            for accid in ["alice", "bob", "carol"] {
                try await rig.postForm("/nimserver/user/create.action", [("accid", accid)], headers: NIMSandboxHelper.signedHeaders(appKey: "k", secret: "s"))
            }
            try await rig.seedGroup("1001", owner: "alice", members: ["bob"])
            let refusals = Capabilities.nim.groupSendRefusals
            for (group, sender, expected) in [("987654321", "alice", refusals.unknownGroup), ("1001", "carol", refusals.nonMember)] {
                let refusal = try #require(expected)
                do {
                    _ = try await wired.backend.send(OutgoingMessage(conversation: .group(GroupID(group)), sender: UserID(sender), content: .text("x")))
                    Issue.record("\(sender) into \(group) was accepted")
                } catch let error as IMError {
                    #expect(error.code == refusal.code && error.vendorCode == refusal.vendorCode, "\(error)")
                }
            }
            _ = try await wired.backend.send(OutgoingMessage(conversation: .group("1001"), sender: "bob", content: .text("in")))
        }
    }
}
