import Foundation
import IMCore
import Testing
@testable import WuKong
import WuKongSandbox

/// A user's groups on WuKong (docs/adapters/wukong.md, "Users and groups"): the business server posts a
/// "group created" notice (type 1001) into every group it creates, so the group channels of a user's
/// `/conversation/sync` list are the groups the user is in; the notice itself is not relayed.
@Suite(.serialized) struct WuKongGroupSearchTests {
    @Test func aGroupCreatedAtTheBusinessServerIsFoundByItsCreatorAndItsMembers() async throws {
        try await WuKongDirectoryTests.withBackend { _, backend in
            let tea = try await backend.createGroup(GroupProfile(id: "x", name: "Tea", owner: "alice", members: ["bob", "carol"]))
            let other = try await backend.createGroup(GroupProfile(id: "y", name: "Other", owner: "bob", members: ["dave"]))
            _ = try await backend.send(OutgoingMessage(conversation: .direct("alice", "dave"), sender: "alice", content: .text("hi")))
            #expect(try await backend.groups(of: "alice") == [tea], "the creator's one group; a direct chat is no group")
            #expect(Set(try await backend.groups(of: "bob")) == [tea, other], "a member of both")
            #expect(try await backend.groups(of: "carol") == [tea])
            #expect(try await backend.groups(of: "dave") == [other])
            #expect(try await backend.groups(of: "nobody").isEmpty)

            // A removed member no longer has the group's conversation.
            try await backend.removeMembers(["carol"], from: tea)
            #expect(try await backend.groups(of: "carol").isEmpty)
            #expect(Set(try await backend.groups(of: "bob")) == [tea, other])
        }
    }

    @Test func theGroupCreatedNoticeHasTheBusinessServersShapeAndIsNoEvent() async throws {
        try await WuKongDirectoryTests.withBackend { _, backend in
            try await backend.saveUser(UserProfile(id: "alice", name: "Alice"))
            let id = try await backend.createGroup(GroupProfile(id: "x", name: "Tea", owner: "alice", members: ["bob", "carol"]))
            let history = try await backend.history(HistoryQuery(conversation: .group(id), anchor: .latest, limit: 10)).messages
            #expect(history.count == 1, "only the notice: \(history)")
            let notice = try #require(history.first)
            #expect(notice.sender.rawValue == WuKongChannel.systemUID)
            guard case .notice(let content) = notice.content else { Issue.record("not a notice: \(notice.content)"); return }
            #expect(content.noticeType == "1001" && content.template == "{0}邀请{1}、{2}加入群聊", "\(content)")
            #expect(content.parameters.compactMap { $0["uid"]?.stringValue } == ["alice", "bob", "carol"], "\(content)")
            #expect(content.text == "Alice邀请bob、carol加入群聊", "names rendered from `extra`: \(content.text)")
            #expect(WuKongInboundMapper.isGroupCreated(notice))
            #expect(backend.catchUpEvent(for: notice) == nil, "the notice is not caught up as a message")

            // The webhook copy (`msg.notify`) maps to nothing; another notice (type 2000) is still an event.
            func wire(_ type: Int) -> WKMessage {
                WKMessage(messageID: 7, fromUID: "", channelID: id.rawValue, channelType: WKChannelType.group, timestamp: 1,
                          payload: Data(#"{"type":\#(type),"content":"{0}邀请{1}加入群聊","extra":[{"uid":"alice","name":"Alice"}]}"#.utf8))
            }
            #expect(try backend.mapper.actions(for: wire(WKContentType.groupCreated)).isEmpty)
            #expect(try backend.mapper.actions(for: wire(WKContentType.tip)).count == 1)

            // A member's message in the group is an event as before.
            let sent = try await backend.send(OutgoingMessage(conversation: .group(id), sender: "bob", content: .text("hi")))
            #expect(!WuKongInboundMapper.isGroupCreated(sent) && backend.catchUpEvent(for: sent) != nil)
        }
    }
}
