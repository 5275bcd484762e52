import Foundation
import IMCore
import IMHTTP
import IMSandbox
import IMTesting
import JMessage
import JMessageSandbox
import SandboxTestSupport
import Testing

/// A group message needs a group that exists (899006) with its sender, the admin, in it (803005), and a
/// group message is retracted only by a sender still in the group (docs/adapters/jmessage.md,
/// "Conversations"): over HTTP with JMessage's codes, and through the adapter, whose groups take the admin.
@Suite(.serialized) struct JMessageSandboxConversationTests {
    static func groupText(_ text: String, gid: String) -> SandboxRequestBody {
        .json(#"{"version":1,"target_type":"group","target_id":"\#(gid)","from_type":"admin","from_id":"bridge_admin","msg_type":"text","msg_body":{"text":"\#(text)"}}"#)
    }

    @Test func groupMessagesNeedAGroupWithTheAdminInIt() async throws {
        try await JMessageSandboxHelper.with { sandbox in
            try await sandbox.seedUsers()
            let created = try await sandbox.call("POST", "/v1/groups/", .json(#"{"owner_username":"alice","name":"Tea","members_username":["bobby"]}"#))
            #expect(created.status == 201)
            let gid = try #require(created.json["gid"]?.int64Value.map(String.init))
            let outside = try await sandbox.call("POST", "/v1/messages", Self.groupText("outside", gid: gid))
            #expect(outside.status == 403 && sandbox.errorCode(outside) == 803005, "\(outside.text)")
            let nowhere = try await sandbox.call("POST", "/v1/messages", Self.groupText("nowhere", gid: "99999999"))
            #expect(nowhere.status == 403 && sandbox.errorCode(nowhere) == 899006, "\(nowhere.text)")
            #expect(try await sandbox.call("POST", "/v1/groups/\(gid)/members", .json(#"{"add":["bridge_admin"]}"#)).status == 204)
            let inside = try await sandbox.call("POST", "/v1/messages", Self.groupText("inside", gid: gid))
            #expect(inside.status == 201, "\(inside.text)")
            // Out of the group again, the admin can no longer retract there.
            #expect(try await sandbox.call("POST", "/v1/groups/\(gid)/members", .json(#"{"remove":["bridge_admin"]}"#)).status == 204)
            let msgid = try #require(inside.json["msg_id"]?.int64Value)
            let retract = try await sandbox.call("POST", "/v1/messages/bridge_admin/\(msgid)/retract")
            #expect(retract.status == 403 && sandbox.errorCode(retract) == 803005, "\(retract.text)")
            #expect(try await sandbox.messages().map(\.text) == ["inside"])
        }
    }

    @Test func aSeededGroupTakesItsGidAndMembers() async throws {
        try await JMessageSandboxHelper.with { sandbox in
            try await sandbox.seedUsers()
            try await sandbox.seedGroup("777", owner: "alice", members: ["bobby", "bridge_admin"], name: "Operator's")
            #expect(try await sandbox.call("POST", "/v1/messages", Self.groupText("seeded", gid: "777")).status == 201)
            let members = try await sandbox.call("GET", "/v1/groups/777/members/").json.arrayValue ?? []
            #expect(members.compactMap { $0["username"]?.stringValue } == ["alice", "bobby", "bridge_admin"])
            #expect(members.first?["flag"] == 1)
            #expect(try await sandbox.call("GET", "/v1/groups/777").json["name"] == "Operator's")
            let next = try await sandbox.call("POST", "/v1/groups/", .json(#"{"owner_username":"alice","name":"Next"}"#))
            #expect((next.json["gid"]?.int64Value ?? 0) > 777)
        }
    }

    /// Through the adapter: a group it creates has the admin in it (so the bridge can send there) and
    /// reads back without it; a send into an unknown gid is the preset's refusal.
    @Test func theAdapterPutsItsAdminInTheGroupsItCreates() async throws {
        try await JMessageSandboxHelper.with { sandbox in
            try await sandbox.seedUsers()
            let backend = JMessageBackend(id: "jm", settings: sandbox.backendSettings, clock: sandbox.clock)
            try await backend.start(pollIntervalMs: nil)
            let gid = try await backend.createGroup(GroupProfile(id: "g", name: "Tea", owner: "alice", members: ["alice", "bobby"]))
            let raw = try await sandbox.call("GET", "/v1/groups/\(gid.rawValue)/members/").json.arrayValue ?? []
            #expect(raw.compactMap { $0["username"]?.stringValue } == ["alice", "bobby", "bridge_admin"])
            #expect(try await backend.group(gid)?.members == ["alice", "bobby"])
            _ = try await backend.send(OutgoingMessage(conversation: .group(gid), sender: "carol", content: .text("attributed")))
            let refusal = try #require(Capabilities.jMessage.groupSendRefusals.unknownGroup)
            do {
                _ = try await backend.send(OutgoingMessage(conversation: .group("99999999"), sender: "alice", content: .text("x")))
                Issue.record("a send into an unknown gid was accepted")
            } catch let error as IMError {
                #expect(error.code == refusal.code && error.vendorCode == refusal.vendorCode, "\(error)")
            }
            await backend.stop()
        }
    }
}
