import Foundation
import IMCore
import Testing
@testable import WuKong
import WuKongSandbox

/// The business server's disband (`DELETE /v1/groups/{no}/disband`, the creator only) deletes the group's
/// WuKongIM channel, after which `/message/send` refuses it; a channel only WuKongIM knows lists its
/// subscribers through the cluster API (docs/adapters/wukong.md, "Groups in live relay").
extension WuKongDirectoryTests {
    @Test func aDisbandedGroupsChannelTakesNoMessageAndOnlyTheCreatorDisbands() async throws {
        try await Self.withBackend { rig, backend in
            let id = try await backend.createGroup(GroupProfile(id: "x", name: "G", owner: "alice", members: ["bob"]))
            _ = try await backend.send(OutgoingMessage(conversation: .group(id), sender: "bob", content: .text("before")))
            let byMember = try await rig.send("DELETE", WKDirectoryPaths.groupDisband(id.rawValue),
                                              headers: [("token", try await backend.session("bob"))])
            #expect(byMember.status == 400 && byMember.json["msg"]?.stringValue == "用户无权执行此操作")
            try await backend.dissolveGroup(id)
            try await backend.dissolveGroup(id)   // disbanded already: OK
            do {
                _ = try await backend.send(OutgoingMessage(conversation: .group(id), sender: "bob", content: .text("after")))
                Issue.record("a disbanded channel took a message")
            } catch let error as IMError {
                #expect(error.code == .invalidArgument && error.vendorCode == "400" && error.vendorMessage == "频道已解散！", "\(error)")
            }
        }
    }

    @Test func aChannelOnlyWuKongIMKnowsListsItsSubscribers() async throws {
        try await Self.withBackend(managerToken: "mt") { rig, backend in
            let add = try await rig.send("POST", "/channel/subscriber_add",
                                         body: Array(#"{"channel_id":"g9","channel_type":2,"subscribers":["ann","ben"]}"#.utf8),
                                         headers: [("token", "mt"), ("Content-Type", "application/json")])
            #expect(add.status == 200, "\(add.text)")
            #expect(try await backend.group("g9") == nil, "the business server does not describe it")
            #expect(try await backend.subscribers(of: "g9") == ["ann", "ben"])
            #expect(try await backend.subscribers(of: "nothing").isEmpty)
            let unauthenticated = try await rig.send("GET", "/cluster/channels/g9/2/subscribers")
            #expect(unauthenticated.status == 401, "the manager token guards the cluster API too")
        }
    }
}
