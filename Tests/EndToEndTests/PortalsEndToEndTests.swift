import BridgeTestSupport
import Foundation
import IMBridgeApp
import IMCore
import IMHTTP
import IMLab
import IMOutbox
import IMStore
import Testing

/// A wildcard group route into a vendor that gives groups ids of its own (NIM, JMessage, WuKong's business
/// server), with real sandboxes that refuse what their vendors refuse and the bridge as a process: each
/// source group gets one target group with its name and its members' puppets, every message goes into it
/// once and in order, and a join and a rename on the source follow (docs/architecture.md, "Portals").
@Suite(.serialized) struct PortalsEndToEndTests {
    struct Target: CustomTestStringConvertible, Sendable {
        var id: BackendID
        var vendor: String
        var testDescription: String { "RongCloud → \(vendor)" }
    }

    static let targets = [Target(id: "yx", vendor: "nim"), Target(id: "jm", vendor: "jmessage"), Target(id: "wk", vendor: "wukong")]

    /// The target group the conversation map names for RongCloud's `group`.
    static func portal(_ lab: BridgeLab, _ group: String, on target: BackendID) throws -> GroupID? {
        try BridgeStore(path: "\(lab.directory)/bridge.sqlite").read {
            try PortalMap.group(PortalMap.key(source: "rc", conversation: .group(GroupID(group)), target: target), $0)
        }
    }

    static func texts(_ lab: BridgeLab, on target: BackendID) async throws -> [(conversation: String, text: String)] {
        try await lab.messages(target).filter { $0["kind"] == "text" }.compactMap { message in
            guard let conversation = message["conversation_id"]?.stringValue, let text = message["text"]?.stringValue else { return nil }
            return (conversation, text)
        }
    }

    @Test(arguments: targets) func eachGroupGetsOneTargetGroupWithItsMembersItsMessagesInOrderAndFollowsAJoinAndARename(_ target: Target) async throws {
        let routes = "  - from: \"rc:group:*\"\n    to: \"\(target.id):group:*\"\n    direction: forward\n    users: puppet\n"
        let rig = try await BridgeRig.make([BridgeLab.Member("rc", "rongcloud"), BridgeLab.Member(target.id, target.vendor)],
                                           routes: routes, extra: "groups:\n  refresh_minutes: 0.05\n")
        defer { Task { await rig.stop() } }
        let lab = rig.lab
        let rc = try #require(try await lab.userBackend("rc", registry: ContentRegistry()) as? any GroupDirectory)
        let far = try #require(try await lab.userBackend(target.id, registry: ContentRegistry()) as? any GroupDirectory)
        _ = try await rc.createGroup(GroupProfile(id: "p1", name: "项目一", owner: "alice", members: ["alice", "bob"]))
        _ = try await rc.createGroup(GroupProfile(id: "p2", name: "项目二", owner: "carol", members: ["carol", "alice"]))
        let bridge = try await rig.start()
        defer { bridge.killWithoutWaiting() }

        for n in 1...3 {
            _ = try await rc.send(OutgoingMessage(conversation: .group("p1"), sender: n == 2 ? "bob" : "alice", content: .text("p1 #\(n)")))
            _ = try await rc.send(OutgoingMessage(conversation: .group("p2"), sender: "carol", content: .text("p2 #\(n)")))
        }
        let arrived = try await eventually(60) { try await Self.texts(lab, on: target.id).count >= 6 }
        #expect(arrived, "\(bridge.output.suffix(3000))")
        let first = try #require(try Self.portal(lab, "p1", on: target.id)), second = try #require(try Self.portal(lab, "p2", on: target.id))
        #expect(first != second && first.rawValue != "p1" && second.rawValue != "p2", "ids the target gave: \(first), \(second)")
        let texts = try await Self.texts(lab, on: target.id)
        #expect(texts.filter { $0.conversation == first.rawValue }.map(\.text) == ["p1 #1", "p1 #2", "p1 #3"])
        #expect(texts.filter { $0.conversation == second.rawValue }.map(\.text) == ["p2 #1", "p2 #2", "p2 #3"])
        #expect(texts.count == 6, "nothing elsewhere, nothing twice: \(texts)")
        let one = try #require(try await far.group(first))
        #expect(one.name == "项目一" && Set(["rc_alice", "rc_bob"]).isSubset(of: Set(one.members.map(\.rawValue))), "\(one)")
        #expect(try await far.group(second)?.name == "项目二")
        #expect(try BridgeStore(path: "\(lab.directory)/bridge.sqlite").read { try $0.count(state: .dead) } == 0, "\(bridge.output.suffix(3000))")

        // A join and a rename on RongCloud follow at the next comparison after the group's next message.
        try await rc.updateGroup(GroupProfile(id: "p1", name: "项目一（新）", members: ["dave"]))
        _ = try await rc.send(OutgoingMessage(conversation: .group("p1"), sender: "dave", content: .text("p1 #4")))
        let followed = try await eventually(60) {
            let group = try await far.group(first)
            return group?.name == "项目一（新）" && group?.members.contains("rc_dave") == true
        }
        let after = try await far.group(first)
        #expect(followed, "\(String(describing: after))\n\(bridge.output.suffix(3000))")
        #expect(try await eventually(30) { try await Self.texts(lab, on: target.id).filter { $0.conversation == first.rawValue }.count == 4 })
        #expect(await bridge.terminate() == 0)
    }

    /// The target carries out the group's creation but its answer is lost: the retry finds that group (a
    /// pending mark, then a search of the owner's groups by name) and makes no second one. On WuKong the
    /// owner's groups are the group channels of the owner's conversations, which the business server's
    /// "group created" notice opens (docs/adapters/wukong.md, "Users and groups").
    @Test(arguments: [Target(id: "jm", vendor: "jmessage"), Target(id: "wk", vendor: "wukong")])
    func aCreationWhoseAnswerWasLostIsFoundNotMadeAgain(_ target: Target) async throws {
        let routes = "  - from: \"rc:group:*\"\n    to: \"\(target.id):group:*\"\n    direction: forward\n    users: puppet\n"
        let rig = try await BridgeRig.make([BridgeLab.Member("rc", "rongcloud"), BridgeLab.Member(target.id, target.vendor)], routes: routes)
        defer { Task { await rig.stop() } }
        let lab = rig.lab
        let rc = try #require(try await lab.userBackend("rc", registry: ContentRegistry()) as? any GroupDirectory)
        let far = try #require(try await lab.userBackend(target.id, registry: ContentRegistry()) as? any GroupDirectory)
        _ = try await rc.createGroup(GroupProfile(id: "lost", name: "Lost answer", owner: "alice", members: ["alice", "bob"]))
        let prefix = target.vendor == "wukong" ? "/v1/group/create" : "/v1/groups"
        let fault = #"{"status":500,"count":1,"path_prefix":"\#(prefix)","after_accept":true}"#
        _ = try await HTTPClientWrapper().send(.json(lab.url(of: target.id) + "/_sandbox/faults", Data(fault.utf8)))
        let bridge = try await rig.start()
        defer { bridge.killWithoutWaiting() }
        _ = try await rc.send(OutgoingMessage(conversation: .group("lost"), sender: "alice", content: .text("after a lost answer")))
        #expect(try await eventually(60) { try await Self.texts(lab, on: target.id).count == 1 }, "\(bridge.output.suffix(3000))")
        let id = try #require(try Self.portal(lab, "lost", on: target.id))
        if target.vendor == "wukong" {
            // Independent of the search: the business server posts one "group created" notice per group it makes.
            let notices = try await lab.messages(target.id).filter { $0["kind"] == "notice" }
            #expect(notices.count == 1 && notices.first?["conversation_id"]?.stringValue == id.rawValue, "\(notices)")
        }
        // Every group made for it lists bob's puppet: one group on the target.
        #expect(try await far.groups(of: "rc_bob") == [id], "one group on \(target.vendor)")
        if target.vendor == "jmessage" { #expect(try await far.allGroups() == [id]) }
        // The lost answer was met: the group's entry was retried once.
        #expect(bridge.output.contains("will retry") && bridge.output.contains("group"), "\(bridge.output.suffix(3000))")
        #expect(await bridge.terminate() == 0)
    }
}
