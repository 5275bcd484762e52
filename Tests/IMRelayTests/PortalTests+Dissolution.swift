import Foundation
import IMCore
@_spi(Testing) import IMRelay
import IMStore
import IMTesting
import Testing
import IMOutbox

/// A source group's dissolution follows into its target group, in the group's lane after its earlier
/// messages: the target group is dissolved (the NIM preset then refuses a message into it, as NIM does),
/// or with `on_dissolve: keep` left with a notice (docs/architecture.md, "Portals").
extension PortalTests {
    static func dissolved(_ group: GroupID, by: UserID?, n: Int = 0) -> IMEvent {
        IMEvent(eventID: EventID("dissolved-\(group)-\(n)"), backend: "wk", kind: .groupDissolved(group: group, by: by, at: 1_000))
    }

    static func message(_ n: Int, in group: GroupID, from sender: UserID = "alice") -> IMEvent {
        IMEvent(eventID: EventID("m-\(group)-\(n)"), backend: "wk", kind: .message(Message(
            id: MessageID("m-\(group)-\(n)"), conversation: .group(group), sender: sender, sentAt: Int64(n), content: .text("\(n)"))))
    }

    @Test func aDissolutionDissolvesTheTargetGroupAfterTheGroupsEarlierMessages() async throws {
        let rig = try Rig()
        rig.wk.world.seedGroup(Self.one)
        let engine = rig.engine()
        // The messages and the dissolution in one batch: the dissolution must wait for all five, or NIM
        // refuses them (803) and they end as dead letters.
        _ = try engine.ingest((1...5).map { Self.message($0, in: Self.one.id) } + [Self.dissolved(Self.one.id, by: "alice")])
        try await engine.start()
        #expect(try await eventually { try rig.portal(Self.one.id) != nil })
        let team = try #require(try rig.portal(Self.one.id))
        #expect(try await eventually { try await rig.yx.group(team) == nil }, "the team is dissolved")
        #expect(try await rig.texts(rig.yx, team) == ["1", "2", "3", "4", "5"], "every earlier message went in first")
        #expect(try rig.store.read { try $0.count(state: .dead) } == 0)
        do {
            _ = try await rig.yx.send(OutgoingMessage(conversation: .group(team), sender: "wk_alice", content: .text("after")))
            Issue.record("NIM took a message into a dissolved team")
        } catch let error as IMError {
            #expect(error.vendorCode == "803", "\(error)")
        }
        await engine.stop()
    }

    @Test func onDissolveKeepLeavesTheTargetGroupWithANotice() async throws {
        let rig = try Rig(routes: [Route(from: try RouteEndpoint(parsing: "wk:group:*"), to: try RouteEndpoint(parsing: "yx:group:*"),
                                     direction: .forward, onDissolve: .keep)])
        rig.wk.world.seedGroup(Self.one)
        let engine = rig.engine()
        _ = try engine.ingest([Self.message(1, in: Self.one.id), Self.dissolved(Self.one.id, by: nil)])
        try await engine.start()
        #expect(try await eventually { try await rig.portalTexts(Self.one.id) == ["1", "[群已解散]"] })
        let team = try #require(try rig.portal(Self.one.id))
        #expect(try await rig.yx.group(team)?.members.contains("wk_alice") == true, "the team is still there")
        #expect(try rig.store.read { try $0.count(state: .dead) } == 0)
        await engine.stop()
    }

    @Test func aDissolutionOfAGroupNeverSetUpCallsNoTargetAndIsNoDeadLetter() async throws {
        let rig = try Rig()
        let engine = rig.engine()
        _ = try engine.ingest([Self.dissolved("never", by: "alice")])
        try await engine.start()
        #expect(try await eventually { try rig.store.read { try $0.count(state: .pending) } == 0 })
        #expect(try rig.store.read { try $0.count(state: .dead) } == 0)
        #expect(try await rig.yx.allGroups().isEmpty, "no group was set up to be dissolved")
        await engine.stop()
    }

    @Test func aMemberWhoLeftTheSourceGroupIsTakenOutOfTheTeam() async throws {
        let rig = try Rig()
        let (engine, team) = try await rig.relayFirstMessage(of: Self.one)
        #expect(Set(try await rig.yx.group(team)?.members ?? []) == ["wk_alice", "wk_bob"])
        try await rig.wk.removeMembers(["bob"], from: Self.one.id)
        _ = try await rig.wk.send(OutgoingMessage(conversation: .group(Self.one.id), sender: "alice", content: .text("bob left")))
        #expect(try await eventually { try await rig.portalTexts(Self.one.id) == ["hi", "bob left"] })
        #expect(try await engine.refreshGroups() == 1)
        #expect(try await eventually { try await rig.yx.group(team)?.members == ["wk_alice"] })
        await engine.stop()
    }

    /// A route whose puppets have an empty prefix cannot tell its puppets from the target's own users: a
    /// comparison removes nobody, so a member the target group has of its own stays (docs/architecture.md,
    /// "Groups").
    @Test func anEmptyPuppetPrefixRemovesNobodyFromTheTargetGroup() async throws {
        let route = Route(from: try RouteEndpoint(parsing: "wk:group:*"), to: try RouteEndpoint(parsing: "yx:group:*"),
                          direction: .forward, usersOnTarget: .puppet(prefix: ""))
        let rig = try Rig(routes: [route])
        let (engine, team) = try await rig.relayFirstMessage(of: Self.one)
        #expect(Set(try await rig.yx.group(team)?.members ?? []) == ["alice", "bob"])
        rig.yx.world.addMembers(["zoe"], to: team)   // the target's own user, added there by hand
        // bob leaves and the group is renamed: the rename shows when the comparison has been carried out.
        rig.wk.world.seedGroup(GroupProfile(id: Self.one.id, name: "项目一（新）", owner: "alice", members: ["alice"]))
        #expect(try await engine.refreshGroups() == 1)
        #expect(try await eventually { try await rig.yx.group(team)?.name == "项目一（新）" })
        // Nobody is taken out: not zoe, and not bob either (his puppet is his own id there).
        #expect(Set(try await rig.yx.group(team)?.members ?? []) == ["alice", "bob", "zoe"])
        await engine.stop()
    }
}

