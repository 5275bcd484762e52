import Foundation
import IMBridgeApp
import IMCore
@_spi(Testing) import IMRelay
import IMStore
import IMTesting
import Testing
import IMOutbox

/// A group a route reaches for the first time is set up on the target through `Delivery.bringGroup`,
/// the code migration uses (docs/architecture.md, "Groups").
@Suite struct GroupSyncTests {
    static let tea = GroupProfile(id: "g1", name: "Tea", avatar: "https://cdn.example/tea.png", owner: "ann",
                                  members: ["ann", "bob"], announcement: "be nice")

    func relayedTexts(_ h: RelayHarness, _ group: String) async throws -> [String] {
        try await h.history(h.rcMemory, group).compactMap { message -> String? in
            if case .text(let text) = message.currentContent { return text.text }
            return nil
        }
    }

    @Test func aGroupFirstSeenIsCreatedOnTheTargetWithItsProfileBeforeItsFirstMessage() async throws {
        let h = try RelayHarness()
        h.wk.world.seedGroup(Self.tea)
        let engine = h.engine()
        try await engine.start(feeding: [h.wk])
        _ = try await h.wk.send(OutgoingMessage(conversation: .group("g1"), sender: "ann", content: .text("hello")))
        _ = try await h.wk.send(OutgoingMessage(conversation: .group("g1"), sender: "bob", content: .text("hi")))
        #expect(try await eventually { try await relayedTexts(h, "g1") == ["hello", "hi"] })
        let created = try #require(try await h.rcMemory.group("g1"))
        #expect(created.name == "Tea" && created.avatar == "https://cdn.example/tea.png" && created.announcement == "be nice")
        #expect(created.owner == "wk_ann" && created.members == ["wk_ann", "wk_bob"])
        #expect(try await eventually { engine.metrics.value("imbridge_relayed_total", ["target": "rc", "action": "group"]) == 1 })
        // The group entry ran ahead of the first message in the conversation's lane.
        let entries = try h.store.read { try $0.entries(ids: Array(1...4)) }
        #expect(entries.first?.kind == "group" && entries.first?.lane == LaneKey(backend: "rc", conversation: .group("g1")), "\(entries.map(\.kind))")
        await engine.stop()
    }

    @Test func anExistingTargetGroupIsBroughtUpToDateNotRecreated() async throws {
        let h = try RelayHarness()
        h.wk.world.seedGroup(Self.tea)
        _ = try await h.rcMemory.createGroup(GroupProfile(id: "g1", name: "Old name", owner: "carol", members: ["carol"]))
        let engine = h.engine()
        try await engine.start(feeding: [h.wk])
        _ = try await h.wk.send(OutgoingMessage(conversation: .group("g1"), sender: "ann", content: .text("hello")))
        #expect(try await eventually { try await relayedTexts(h, "g1") == ["hello"] })
        let group = try #require(try await h.rcMemory.group("g1"))
        #expect(group.name == "Tea" && group.announcement == "be nice")
        #expect(group.members == ["carol", "wk_ann", "wk_bob"], "members added, none removed")
        #expect(try h.store.read { try $0.count(state: .dead) } == 0)
        await engine.stop()
    }

    @Test func aGroupItsSourceDoesNotDescribeIsSetUpWithItsSendersAndTheMessageFlows() async throws {
        let h = try RelayHarness()
        let engine = h.engine()
        try await engine.start(feeding: [h.wk])
        _ = try await h.wk.send(OutgoingMessage(conversation: .group("unknown"), sender: "ann", content: .text("hello")))
        #expect(try await eventually { try await relayedTexts(h, "unknown") == ["hello"] })
        #expect(try await eventually { engine.metrics.value("imbridge_relayed_total", ["target": "rc", "action": "group"]) == 1 })
        // Never an empty target group: the first sender is its member, later senders join before their first message.
        #expect(try await h.rcMemory.group("unknown")?.members == ["wk_ann"])
        _ = try await h.wk.send(OutgoingMessage(conversation: .group("unknown"), sender: "bob", content: .text("hi")))
        #expect(try await eventually { try await relayedTexts(h, "unknown") == ["hello", "hi"] })
        #expect(try await h.rcMemory.group("unknown")?.members == ["wk_ann", "wk_bob"])
        await engine.stop()
    }

    /// A wildcard route into a target that assigns group ids sets the group up in its portal's lane; a
    /// route that names the target group relays into it as it is, with no group entry.
    @Test func targetsThatAssignGroupIDsGetTheGroupInItsPortalLaneOnlyOnWildcardRoutes() throws {
        let wk = MemoryBackend(id: "wk", capabilities: .wukong, clock: SystemClock())
        let yx = MemoryBackend(id: "yx", capabilities: .nim, clock: SystemClock())
        func engine(_ to: String) throws -> RelayEngine {
            let store = try BridgeStore(path: FileManager.default.temporaryDirectory.appendingPathComponent("g-\(UUID().uuidString).sqlite").path)
            return RelayEngine(store: store, backends: [wk, yx], routes: [Route(from: try RouteEndpoint(parsing: "wk:group:*"), to: try RouteEndpoint(parsing: to))])
        }
        let message = Message(id: "m1", conversation: .group("g1"), sender: "ann", sentAt: 1, content: .text("hi"))
        let wildcard = try engine("yx:group:*")
        let result = try wildcard.ingest([IMEvent(eventID: "e1", backend: "wk", kind: .message(message))])
        #expect(result.queued == 1 && result.groupsQueued == 1, "\(result)")
        // (The sender's profile entry goes into the puppet's own lane.)
        let entries = try wildcard.store.read { try $0.entries(ids: [1, 2, 3]) }.filter { $0.kind != "profile" }
        #expect(entries.map(\.kind) == ["group", "send"])
        #expect(entries.allSatisfy { $0.lane == PortalMap.lane(target: "yx", source: "wk", group: "g1") })
        let named = try engine("yx:group:100001")
        let direct = try named.ingest([IMEvent(eventID: "e1", backend: "wk", kind: .message(message))])
        #expect(direct.queued == 1 && direct.groupsQueued == 0, "\(direct)")
    }

    @Test func aGroupIsQueuedOncePerStore() throws {
        let h = try RelayHarness()
        func event(_ n: Int) -> IMEvent {
            IMEvent(eventID: EventID("e\(n)"), backend: "wk",
                    kind: .message(Message(id: MessageID("m\(n)"), conversation: .group("g1"), sender: "ann", sentAt: Int64(n), content: .text("\(n)"))))
        }
        #expect(try h.engine().ingest([event(1), event(2)]).groupsQueued == 1)
        // Another engine on the same store (a restart) knows the group from the checkpoint.
        #expect(try h.engine().ingest([event(3)]).groupsQueued == 0)
    }

    /// After first sight, a round compares the groups with events since the last round: a member who
    /// joined is added, a rename is carried, nobody is removed; a round with no activity queues nothing.
    @Test func aRoundCarriesJoinsAndRenamesOfActiveGroupsAndRemovesNobody() async throws {
        let h = try RelayHarness()
        h.wk.world.seedGroup(Self.tea)
        let engine = h.engine()
        try await engine.start(feeding: [h.wk])
        _ = try await h.wk.send(OutgoingMessage(conversation: .group("g1"), sender: "ann", content: .text("one")))
        #expect(try await eventually { try await relayedTexts(h, "g1") == ["one"] })
        #expect(try await h.rcMemory.group("g1")?.members == ["wk_ann", "wk_bob"])

        try await h.wk.updateGroup(GroupProfile(id: "g1", name: "Tea house", members: ["carol"]))
        _ = try await h.wk.send(OutgoingMessage(conversation: .group("g1"), sender: "carol", content: .text("two")))
        #expect(try await eventually { try await relayedTexts(h, "g1") == ["one", "two"] })
        #expect(try await engine.refreshGroups() == 1)
        #expect(try await eventually { try await h.rcMemory.group("g1")?.name == "Tea house" })
        #expect(try await h.rcMemory.group("g1")?.members == ["wk_ann", "wk_bob", "wk_carol"])
        // The membership event of the update may reach the intake after the round above (a loaded machine
        // delays the feed): then one more round has it. Once nothing comes in, a round queues nothing.
        #expect(try await eventually { try await engine.refreshGroups() == 0 }, "a round with no activity queues nothing")
        #expect(try await engine.refreshGroups() == 0, "no event since the last round")
        #expect(try await h.rcMemory.group("g1")?.members == ["wk_ann", "wk_bob", "wk_carol"], "nobody removed")
        #expect(try h.store.read { try $0.count(state: .dead) } == 0)
        await engine.stop()
    }

    /// A member who left the source group loses its puppet on the target at the next round; a native
    /// member of the target group and another route's puppet are never removed.
    @Test func aRoundRemovesThePuppetsOfMembersWhoLeftAndNoOneElse() async throws {
        let h = try RelayHarness()
        h.wk.world.seedGroup(GroupProfile(id: "g1", name: "Tea", owner: "ann", members: ["ann", "bob", "carol"]))
        _ = try await h.rcMemory.createGroup(GroupProfile(id: "g1", name: "Tea", owner: "rita", members: ["rita", "yx_zed"]))
        let engine = h.engine()
        try await engine.start(feeding: [h.wk])
        _ = try await h.wk.send(OutgoingMessage(conversation: .group("g1"), sender: "ann", content: .text("one")))
        #expect(try await eventually { try await relayedTexts(h, "g1") == ["one"] })
        #expect(try await h.rcMemory.group("g1")?.members == ["rita", "wk_ann", "wk_bob", "wk_carol", "yx_zed"])

        try await h.wk.removeMembers(["bob"], from: "g1")
        _ = try await h.wk.send(OutgoingMessage(conversation: .group("g1"), sender: "ann", content: .text("two")))
        #expect(try await eventually { try await relayedTexts(h, "g1") == ["one", "two"] })
        #expect(try await engine.refreshGroups() == 1)
        let removed = try await eventually { try await h.rcMemory.group("g1")?.members == ["rita", "wk_ann", "wk_carol", "yx_zed"] }
        let now = try await h.rcMemory.group("g1")
        #expect(removed, "\(String(describing: now))")
        // Everybody left but the owner: the puppets go, the native members stay.
        try await h.wk.removeMembers(["carol"], from: "g1")
        _ = try await h.wk.send(OutgoingMessage(conversation: .group("g1"), sender: "ann", content: .text("three")))
        #expect(try await eventually { try await relayedTexts(h, "g1") == ["one", "two", "three"] })
        #expect(try await engine.refreshGroups() == 1)
        #expect(try await eventually { try await h.rcMemory.group("g1")?.members == ["rita", "wk_ann", "yx_zed"] })
        #expect(try h.store.read { try $0.count(state: .dead) } == 0)
        await engine.stop()
    }

    /// A route both ways between two backends that keep group ids: each side's members reach the other as
    /// puppets, and a puppet never comes back as a member of its own user's side (no `b_a_ann`); a member
    /// who leaves one side loses its puppet on the other, and the native members stay.
    @Test func bothWaysPuppetsDoNotEchoAndLeavesFollow() async throws {
        let a = MemoryBackend(id: "a", capabilities: .rongCloud, clock: SystemClock())
        let b = MemoryBackend(id: "b", capabilities: .rongCloud, clock: SystemClock())
        let store = try BridgeStore(path: FileManager.default.temporaryDirectory.appendingPathComponent("g-\(UUID().uuidString).sqlite").path)
        let engine = RelayEngine(store: store, backends: [a, b], routes: [Route(from: try RouteEndpoint(parsing: "a:group:*"),
                                                                                  to: try RouteEndpoint(parsing: "b:group:*"), direction: .both)],
                                 retry: RetryPolicy(baseMs: 5, maxMs: 50))
        _ = try await a.createGroup(GroupProfile(id: "g1", name: "Tea", owner: "ann", members: ["ann", "bob"]))
        _ = try await b.createGroup(GroupProfile(id: "g1", name: "Tea", owner: "bea", members: ["bea"]))
        try await engine.start(feeding: [a, b])
        _ = try await a.send(OutgoingMessage(conversation: .group("g1"), sender: "ann", content: .text("from a")))
        #expect(try await eventually { try await b.group("g1")?.members == ["a_ann", "a_bob", "bea"] })
        _ = try await b.send(OutgoingMessage(conversation: .group("g1"), sender: "bea", content: .text("from b")))
        #expect(try await eventually { try await a.group("g1")?.members == ["ann", "b_bea", "bob"] })

        try await a.removeMembers(["bob"], from: "g1")
        _ = try await a.send(OutgoingMessage(conversation: .group("g1"), sender: "ann", content: .text("again")))
        _ = try await b.send(OutgoingMessage(conversation: .group("g1"), sender: "bea", content: .text("again")))
        // Each side: its own two messages and the other side's two copies.
        #expect(try await eventually { try await b.history(HistoryQuery(conversation: .group("g1"), anchor: .latest, limit: 50)).messages.count == 4 })
        #expect(try await eventually { try await a.history(HistoryQuery(conversation: .group("g1"), anchor: .latest, limit: 50)).messages.count == 4 })
        #expect(try await engine.refreshGroups() == 2, "one comparison each way")
        #expect(try await eventually { try await b.group("g1")?.members == ["a_ann", "bea"] })
        // Neither side's comparison took the other's puppets for members of its own.
        try await Task.sleep(nanoseconds: 200_000_000)
        #expect(try await a.group("g1")?.members == ["ann", "b_bea"])
        #expect(try await b.group("g1")?.members == ["a_ann", "bea"])
        #expect(try store.read { try $0.count(state: .dead) } == 0)
        await engine.stop()
    }

    @Test func groupSettingsParse() throws {
        func parsed(_ block: String) throws -> GroupSettings {
            try BridgeConfig.parse(BridgeConfigTests.valid + "\n" + block, environment: ["WK_TOKEN": "t", "RC_SECRET": "s"]).groups
        }
        #expect(try parsed("").refreshMs == 3_600_000)
        #expect(try parsed("groups:\n  refresh_minutes: 2").refreshMs == 120_000)
        #expect(try parsed("groups:\n  refresh_minutes: 0").refreshMs == nil)
        let error = #expect(throws: IMError.self) { try parsed("groups:\n  refresh_minutes: -3") }
        #expect(error?.message.contains("groups.refresh_minutes") == true, "\(error?.message ?? "")")
    }
}
