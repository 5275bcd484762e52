import Foundation
import IMCore
@_spi(Testing) import IMRelay
import IMStore
import IMTesting
import Testing
import IMOutbox

/// A wildcard group route into a target that gives groups ids of its own relays each source group into
/// a group the bridge sets up there and keeps in the conversation map (docs/architecture.md, "Portals").
/// The NIM preset refuses a team message into an unknown team or from a non-member, as NIM does.
@Suite struct PortalTests {
    struct Rig {
        let wk = MemoryBackend(id: "wk", capabilities: .wukong, clock: SystemClock())
        let yx = MemoryBackend(id: "yx", capabilities: .nim, clock: SystemClock())
        let store: BridgeStore
        let routes: [Route]

        init(direction: Route.Direction = .forward, routes: [Route]? = nil) throws {
            let path = FileManager.default.temporaryDirectory.appendingPathComponent("portal-\(UUID().uuidString).sqlite").path
            store = try BridgeStore(path: path)
            self.routes = try routes ?? [Route(from: try RouteEndpoint(parsing: "wk:group:*"), to: try RouteEndpoint(parsing: "yx:group:*"),
                                               direction: direction)]
        }

        func engine() -> RelayEngine {
            RelayEngine(store: store, backends: [wk, yx], routes: routes, retry: RetryPolicy(baseMs: 5, maxMs: 50))
        }

        /// `group` seeded on WuKong, an engine started fed by it, and its first message "hi" relayed into the
        /// target group set up for it: the engine and that group's id.
        func relayFirstMessage(of group: GroupProfile) async throws -> (RelayEngine, GroupID) {
            wk.world.seedGroup(group)
            let engine = engine()
            try await engine.start(feeding: [wk])
            _ = try await wk.send(OutgoingMessage(conversation: .group(group.id), sender: "alice", content: .text("hi")))
            #expect(try await eventually { try await portalTexts(group.id) == ["hi"] })
            return (engine, try #require(try portal(group.id)))
        }

        func portal(_ group: GroupID) throws -> GroupID? {
            try store.read { try PortalMap.group(PortalMap.key(source: "wk", conversation: .group(group), target: "yx"), $0) }
        }

        /// The texts of the target group standing for `group`, nil while there is none.
        func portalTexts(_ group: GroupID) async throws -> [String]? {
            guard let team = try portal(group) else { return nil }
            return try await texts(yx, team)
        }

        func texts(_ backend: MemoryBackend, _ group: GroupID) async throws -> [String] {
            try await backend.history(HistoryQuery(conversation: .group(group), anchor: .latest, limit: 100)).messages.compactMap {
                if case .text(let text) = $0.currentContent { return text.text }
                return nil
            }
        }
    }

    static let one = GroupProfile(id: "523879d6dd0b46ed9cc9d9c48e8e1664", name: "项目一", owner: "alice", members: ["alice", "bob"])
    static let two = GroupProfile(id: "7f3c", name: "项目二", owner: "carol", members: ["carol", "alice"])

    @Test func eachSourceGroupGetsOneTargetGroupWithItsNameAndMembersAndItsMessagesInOrder() async throws {
        let rig = try Rig()
        rig.wk.world.seedGroup(Self.one)
        rig.wk.world.seedGroup(Self.two)
        let engine = rig.engine()
        try await engine.start(feeding: [rig.wk])
        for n in 1...5 {
            for (group, sender) in [(Self.one.id, UserID("alice")), (Self.two.id, UserID("carol"))] {
                _ = try await rig.wk.send(OutgoingMessage(conversation: .group(group), sender: n == 3 ? "alice" : sender, content: .text("\(group.rawValue.prefix(4)) \(n)")))
            }
        }
        #expect(try await eventually { try rig.portal(Self.one.id) != nil && rig.portal(Self.two.id) != nil })
        let first = try #require(try rig.portal(Self.one.id)), second = try #require(try rig.portal(Self.two.id))
        #expect(try await eventually { try await rig.texts(rig.yx, first).count == 5 })
        #expect(try await eventually { try await rig.texts(rig.yx, second).count == 5 })
        #expect(try await rig.texts(rig.yx, first) == (1...5).map { "5238 \($0)" })
        #expect(try await rig.texts(rig.yx, second) == (1...5).map { "7f3c \($0)" })
        // One team per group, with the group's name and its members' puppets; nothing under the source's ids.
        #expect(try await rig.yx.allGroups().count == 2)
        let team = try #require(try await rig.yx.group(first))
        #expect(team.name == "项目一" && team.owner == "wk_alice" && Set(team.members) == ["wk_alice", "wk_bob"])
        #expect(try await rig.yx.group(second)?.name == "项目二")
        #expect(try await rig.yx.group(Self.one.id) == nil)
        // Recorded both ways: the team's id maps back to the source group.
        let back = try rig.store.read { try PortalMap.group(PortalMap.key(source: "yx", conversation: .group(first), target: "wk"), $0) }
        #expect(back == Self.one.id)
        #expect(try rig.store.read { try PortalMap.all($0) }.count == 2)
        #expect(try rig.store.read { try $0.count(state: .dead) } == 0)
        await engine.stop()
    }

    @Test func aGroupItsSourceDoesNotDescribeGetsItsSendersEachBeforeTheirFirstMessage() async throws {
        let rig = try Rig()
        let engine = rig.engine()
        try await engine.start(feeding: [rig.wk])
        _ = try await rig.wk.send(OutgoingMessage(conversation: .group("g1"), sender: "ann", content: .text("one")))
        #expect(try await eventually { try await rig.portalTexts("g1") == ["one"] })
        let team = try #require(try rig.portal("g1"))
        #expect(try await rig.yx.group(team)?.members == ["wk_ann"])
        _ = try await rig.wk.send(OutgoingMessage(conversation: .group("g1"), sender: "bob", content: .text("two")))
        #expect(try await eventually { try await rig.texts(rig.yx, team) == ["one", "two"] })
        #expect(try await rig.yx.group(team)?.members == ["wk_ann", "wk_bob"])
        #expect(try await rig.yx.allGroups().count == 1)
        await engine.stop()
    }

    @Test func theTargetGroupsMessagesComeBackIntoTheSourceGroup() async throws {
        let rig = try Rig(direction: .both)
        rig.wk.world.seedGroup(Self.one)
        let engine = rig.engine()
        try await engine.start(feeding: [rig.wk, rig.yx])
        _ = try await rig.wk.send(OutgoingMessage(conversation: .group(Self.one.id), sender: "alice", content: .text("from wk")))
        #expect(try await eventually { try rig.portal(Self.one.id) != nil })
        let team = try #require(try rig.portal(Self.one.id))
        #expect(try await eventually { try await rig.texts(rig.yx, team) == ["from wk"] })
        // A NIM user of the team writes back: it reaches the WuKong group, not a channel named by the tid.
        try await rig.yx.updateGroup(GroupProfile(id: team, members: ["dora"]))
        _ = try await rig.yx.send(OutgoingMessage(conversation: .group(team), sender: "dora", content: .text("from yx")))
        #expect(try await eventually { try await rig.texts(rig.wk, Self.one.id) == ["from wk", "from yx"] })
        #expect(try await rig.texts(rig.wk, team).isEmpty)
        #expect(try await rig.yx.allGroups().count == 1, "the echo of the bridge's own team was not relayed into a second group")
        await engine.stop()
    }

    @Test func twoEnginesMeetingANewGroupAtOnceSetUpOneTargetGroup() async throws {
        let rig = try Rig()
        rig.wk.world.seedGroup(Self.one)
        let (a, b) = (rig.engine(), rig.engine())
        func event(_ n: Int) -> IMEvent {
            IMEvent(eventID: EventID("e\(n)"), backend: "wk", kind: .message(Message(id: MessageID("m\(n)"), conversation: .group(Self.one.id),
                                                                                      sender: "alice", sentAt: Int64(n), content: .text("\(n)"))))
        }
        _ = try a.ingest([event(1)])
        _ = try b.ingest([event(2)])
        try await a.start()
        try await b.start()
        #expect(try await eventually { try await rig.portalTexts(Self.one.id) == ["1", "2"] })
        #expect(try await rig.yx.allGroups().count == 1)
        await a.stop()
        await b.stop()
    }

    @Test func aJoinAndARenameOnTheSourceFollowIntoTheTargetGroup() async throws {
        let rig = try Rig()
        let (engine, team) = try await rig.relayFirstMessage(of: Self.one)
        rig.wk.world.seedGroup(GroupProfile(id: Self.one.id, name: "项目一（新）", owner: "alice", members: ["alice", "bob", "erin"]))
        #expect(try await engine.refreshGroups() == 1)
        #expect(try await eventually { try await rig.yx.group(team)?.name == "项目一（新）" })
        #expect(Set(try await rig.yx.group(team)?.members ?? []) == ["wk_alice", "wk_bob", "wk_erin"])
        #expect(try await rig.yx.allGroups().count == 1, "a comparison never creates a second group")
        await engine.stop()
    }

    /// `wk:group:* ⇄ rc:group:*` (the demo's route): WuKong gives new groups ids of its own, RongCloud keeps
    /// them. A WuKong group relayed into RongCloud under its id is its own portal the other way: RongCloud's
    /// answers come back into it, and no second WuKong group is set up.
    @Test func aGroupRelayedUnderItsOwnIdComesBackIntoTheSameGroup() async throws {
        let h = try RelayHarness()
        h.wk.world.seedGroup(GroupProfile(id: "g1", name: "Tea", owner: "ann", members: ["ann"]))
        let engine = h.engine()
        try await engine.start(feeding: [h.wk, h.rcMemory])
        _ = try await h.wk.send(OutgoingMessage(conversation: .group("g1"), sender: "ann", content: .text("from wk")))
        #expect(try await eventually { try await h.history(h.rcMemory, "g1").count == 1 })
        try await h.rcMemory.updateGroup(GroupProfile(id: "g1", members: ["carol"]))
        _ = try await h.rcMemory.send(OutgoingMessage(conversation: .group("g1"), sender: "carol", content: .text("from rc")))
        #expect(try await eventually { try await h.history(h.wk, "g1").count == 2 })
        #expect(try await h.wk.allGroups() == ["g1"], "no second WuKong group")
        let back = try h.store.read { try PortalMap.group(PortalMap.key(source: "rc", conversation: .group("g1"), target: "wk"), $0) }
        #expect(back == "g1")
        #expect(try await h.wk.group("g1")?.members.contains("rc_carol") == true, "the RongCloud member's puppet joined the WuKong group")
        await engine.stop()
    }
}
