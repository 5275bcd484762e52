import BridgeTestSupport
import Foundation
import IMBridgeApp
import IMCore
import IMHTTP
import IMLab
import IMOutbox
import IMStore
import Testing

/// Dissolutions and leaves on the source follow into the target groups, with the bridge as a process and
/// sandboxes that refuse as their vendors do; a group WuKongIM alone knows reaches its target with its
/// channel's subscribers (docs/architecture.md, "Portals").
extension PortalsEndToEndTests {
    static let dismiss = MessageContent.unsupported(UnsupportedContent(
        vendor: "rongcloud", vendorType: "RC:GrpNtf", raw: #"{"operatorUserId":"alice","operation":"Dismiss","data":{},"message":"","extra":""}"#))

    /// RongCloud's app dismisses a group (the `RC:GrpNtf` "Dismiss" it sends, then `/group/dismiss.json`):
    /// the target group is dissolved after the group's messages, and then takes no message.
    @Test(arguments: targets) func aDissolutionOnTheSourceDissolvesTheTargetGroup(_ target: Target) async throws {
        let routes = "  - from: \"rc:group:*\"\n    to: \"\(target.id):group:*\"\n    direction: forward\n    users: puppet\n"
        let rig = try await BridgeRig.make([BridgeLab.Member("rc", "rongcloud"), BridgeLab.Member(target.id, target.vendor)], routes: routes)
        defer { Task { await rig.stop() } }
        let lab = rig.lab
        let rc = try #require(try await lab.userBackend("rc", registry: ContentRegistry()) as? any GroupDissolving)
        let far = try #require(try await lab.userBackend(target.id, registry: ContentRegistry()) as? any GroupDirectory)
        _ = try await rc.createGroup(GroupProfile(id: "p1", name: "项目一", owner: "alice", members: ["alice", "bob"]))
        let bridge = try await rig.start()
        defer { bridge.killWithoutWaiting() }

        for n in 1...2 { _ = try await rc.send(OutgoingMessage(conversation: .group("p1"), sender: "alice", content: .text("p1 #\(n)"))) }
        _ = try await rc.send(OutgoingMessage(conversation: .group("p1"), sender: "alice", content: Self.dismiss))
        try await rc.dissolveGroup("p1")
        #expect(try await rc.group("p1") == nil)
        let mapped = try await eventually(60) { try Self.portal(lab, "p1", on: target.id) != nil }
        #expect(mapped, "\(bridge.output.suffix(3000))")
        let group = try #require(try Self.portal(lab, "p1", on: target.id))
        let dissolved = try await eventually(60) { bridge.output.contains("target group dissolved after its source group") }
        #expect(dissolved, "\(bridge.output.suffix(3000))")
        // Dissolved: the target takes no message into it any more.
        do {
            _ = try await far.send(OutgoingMessage(conversation: .group(group), sender: "rc_alice", content: .text("after")))
            Issue.record("\(target.vendor) took a message into the dissolved group")
        } catch is IMError {}
        if target.vendor == "wukong" {
            // The business server's disband deletes the WuKongIM channel, its messages with it.
            #expect(try await Self.texts(lab, on: target.id).filter { $0.conversation == group.rawValue }.isEmpty)
        } else {
            #expect(try await far.group(group) == nil, "the target group is gone")
            #expect(try await Self.texts(lab, on: target.id).filter { $0.conversation == group.rawValue }.map(\.text) == ["p1 #1", "p1 #2"],
                    "both messages went in before the dissolution, the notification itself is no message")
        }
        #expect(try BridgeStore(path: "\(lab.directory)/bridge.sqlite").read { try $0.count(state: .dead) } == 0, "\(bridge.output.suffix(3000))")
        #expect(await bridge.terminate() == 0)
    }

    /// A member leaves the source group: at the next comparison the puppet is kicked from the NIM team.
    @Test func aLeaveOnTheSourceTakesThePuppetOutOfTheNIMTeam() async throws {
        let routes = "  - from: \"rc:group:*\"\n    to: \"yx:group:*\"\n    direction: forward\n    users: puppet\n"
        let rig = try await BridgeRig.make([BridgeLab.Member("rc", "rongcloud"), BridgeLab.Member("yx", "nim")],
                                           routes: routes, extra: "groups:\n  refresh_minutes: 0.05\n")
        defer { Task { await rig.stop() } }
        let lab = rig.lab
        let rc = try #require(try await lab.userBackend("rc", registry: ContentRegistry()) as? any GroupMemberRemoving)
        let yx = try #require(try await lab.userBackend("yx", registry: ContentRegistry()) as? any GroupDirectory)
        _ = try await rc.createGroup(GroupProfile(id: "p1", name: "项目一", owner: "alice", members: ["alice", "bob", "carol"]))
        let bridge = try await rig.start()
        defer { bridge.killWithoutWaiting() }
        _ = try await rc.send(OutgoingMessage(conversation: .group("p1"), sender: "bob", content: .text("hello")))
        #expect(try await eventually(60) { try await Self.texts(lab, on: "yx").count == 1 }, "\(bridge.output.suffix(3000))")
        let team = try #require(try Self.portal(lab, "p1", on: "yx"))
        #expect(Set(try await yx.group(team)?.members.map(\.rawValue) ?? []) == ["rc_alice", "rc_bob", "rc_carol"])

        try await rc.removeMembers(["bob"], from: "p1")
        _ = try await rc.send(OutgoingMessage(conversation: .group("p1"), sender: "alice", content: .text("bob left")))
        let kicked = try await eventually(60) { Set(try await yx.group(team)?.members.map(\.rawValue) ?? []) == ["rc_alice", "rc_carol"] }
        let after = try await yx.group(team)
        #expect(kicked, "\(String(describing: after))\n\(bridge.output.suffix(3000))")
        #expect(try await Self.texts(lab, on: "yx").map(\.text) == ["hello", "bob left"])
        #expect(await bridge.terminate() == 0)
    }

    /// A group channel WuKongIM alone knows (subscribers, no business-server group) reaches RongCloud with
    /// its subscribers as members, not only its first sender.
    @Test func aGroupOnlyWuKongIMKnowsGetsItsSubscribers() async throws {
        let routes = "  - from: \"wk:group:*\"\n    to: \"rc:group:*\"\n    direction: forward\n    users: puppet\n"
        let rig = try await BridgeRig.make([BridgeLab.Member("wk", "wukong"), BridgeLab.Member("rc", "rongcloud")], routes: routes)
        defer { Task { await rig.stop() } }
        let lab = rig.lab
        let wk = try await lab.userBackend("wk", registry: ContentRegistry())
        let rc = try #require(try await lab.userBackend("rc", registry: ContentRegistry()) as? any GroupDirectory)
        let add = #"{"channel_id":"g7","channel_type":2,"subscribers":["ann","ben","cat"]}"#
        let answer = try await HTTPClientWrapper().send(.json(lab.url(of: "wk") + "/channel/subscriber_add", Data(add.utf8)))
        #expect(answer.status == 200)
        let bridge = try await rig.start()
        defer { bridge.killWithoutWaiting() }
        _ = try await wk.send(OutgoingMessage(conversation: .group("g7"), sender: "ann", content: .text("hi all")))
        #expect(try await eventually(60) { try await Self.texts(lab, on: "rc").map(\.text) == ["hi all"] }, "\(bridge.output.suffix(3000))")
        #expect(Set(try await rc.group("g7")?.members.map(\.rawValue) ?? []) == ["wk_ann", "wk_ben", "wk_cat"])
        #expect(bridge.output.contains("the channel's subscribers"), "one warning: \(bridge.output.suffix(3000))")
        #expect(await bridge.terminate() == 0)
    }
}
