import Foundation
import IMCore
import IMHTTP
import IMSandbox
import IMTesting
import RongCloud
import RongCloudSandbox
import SandboxTestSupport
import Testing

/// RongCloud's group publish refuses neither a non-member ("non-group members can also send messages
/// to a group via the Server API") nor a group without members (a group exists only through its
/// members, and the app controls who may send): docs/adapters/rongcloud.md, "Conversations".
@Suite(.serialized) struct RongCloudSandboxConversationTests {
    func publish(_ rig: RongCloudSandboxHelper, from: String, to group: String, _ text: String) async throws -> JSONValue {
        let content = FormBody.escape(JSONValue.object(["content": .string(text)]).jsonString())
        return try await rig.call("POST", RCPaths.groupPublish, .formText("fromUserId=\(from)&toGroupId=\(group)&objectName=RC:TxtMsg&content=\(content)")).json
    }

    @Test func groupPublishRefusesNeitherStrangersNorMemberlessGroups() async throws {
        #expect(Capabilities.rongCloud.groupSendRefusals == .none)
        try await RongCloudDirectoryTests.withBackend { rig, backend in
            #expect(try await publish(rig, from: "alice", to: "nogroup", "into no group")["code"] == 200)
            try await rig.seedGroup("ops1", owner: "alice", members: ["bob"], name: "Ops")
            #expect(try await publish(rig, from: "zed", to: "ops1", "a stranger")["code"] == 200)
            #expect(try await rig.messages().map(\.text) == ["into no group", "a stranger"])
            #expect(try await backend.group("ops1")?.members == ["alice", "bob"])
        }
    }
}
