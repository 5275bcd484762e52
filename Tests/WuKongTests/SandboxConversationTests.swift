import Foundation
import IMCore
import IMSandbox
import IMTesting
import SandboxTestSupport
import Testing
@testable import WuKong
import WuKongSandbox

/// WuKongIM's `/message/send` refuses neither a group channel it does not have nor a sender who is not
/// a subscriber: an API send carries the system device, skips the subscriber checks and is queued
/// asynchronously (docs/adapters/wukong.md, "Conversations"). The sandbox answers so, the preset says
/// so, and a group seeded under a chosen `group_no` is a business-server group with its channel.
@Suite(.serialized) struct WuKongSandboxConversationTests {
    @Test func apiSendsIntoUnknownChannelsAndByStrangersAreAccepted() async throws {
        #expect(Capabilities.wukong.groupSendRefusals.unknownGroup == nil && Capabilities.wukong.groupSendRefusals.nonMember == nil)
        try await WuKongDirectoryTests.withBackend { rig, backend in
            try await rig.sendText("nobody's channel", from: "alice", to: "no-such-group", type: 2)
            try await rig.seedGroup("ops1", owner: "alice", members: ["bob"], name: "Ops")
            try await rig.sendText("a stranger", from: "zed", to: "ops1", type: 2)
            #expect(try await rig.messages().map(\.text) == ["nobody's channel", "a stranger"])
            let group = try #require(try await backend.group("ops1"))
            #expect(group.name == "Ops" && group.owner == "alice" && group.members == ["alice", "bob"], "\(group)")
            // Seeding again replaces the members (how a test takes one out).
            try await rig.seedGroup("ops1", owner: "alice", members: [])
            #expect(try await backend.group("ops1")?.members == ["alice"])
        }
    }
}
