import Foundation
import IMCore
@_spi(Testing) import IMRelay
import IMStore
import IMTesting
import Testing
import IMOutbox

/// Deletions and membership events through the engine and its outbox (docs/mappings.md, "Deletion";
/// docs/architecture.md, "Groups"), between testing-kit worlds with the vendors' rules.
@Suite struct DeletionRelayTests {
    struct Pair {
        let source: MemoryBackend
        let target: MemoryBackend
        let store: BridgeStore
        let engine: RelayEngine

        init(_ source: (BackendID, Capabilities), _ target: (BackendID, Capabilities), direction: Route.Direction = .forward) throws {
            self.source = MemoryBackend(id: source.0, capabilities: source.1, clock: SystemClock())
            self.target = MemoryBackend(id: target.0, capabilities: target.1, clock: SystemClock())
            store = try BridgeStore(path: FileManager.default.temporaryDirectory.appendingPathComponent("del-\(UUID().uuidString).sqlite").path)
            engine = RelayEngine(store: store, backends: [self.source, self.target],
                                 routes: [Route(from: try RouteEndpoint(parsing: "\(source.0):group:*"),
                                                to: try RouteEndpoint(parsing: "\(target.0):group:*"), direction: direction)],
                                 retry: RetryPolicy(baseMs: 5, maxMs: 50))
        }

        func texts(_ backend: MemoryBackend, _ group: GroupID) async throws -> [String] {
            try await backend.history(HistoryQuery(conversation: .group(group), anchor: .latest, limit: 100)).messages.compactMap { message in
                if case .text(let text) = message.currentContent { return message.isRecalled ? "(recalled) \(text.text)" : text.text }
                return nil
            }
        }
    }

    /// RongCloud reports a deletion for everyone (its recall command with `isDelete`); WuKong can delete
    /// for everyone: the copy is gone from the target, the other messages stay.
    @Test func aDeletionForEveryoneIsGoneFromATargetThatCanDelete() async throws {
        let pair = try Pair(("rc", .rongCloud), ("rc2", .rongCloud))
        try await pair.engine.start(feeding: [pair.source])
        let group = ConversationRef.group("g1")
        _ = try await pair.source.send(OutgoingMessage(conversation: group, sender: "ann", content: .text("keep")))
        let oops = try await pair.source.send(OutgoingMessage(conversation: group, sender: "ann", content: .text("oops")))
        #expect(try await eventually { try await pair.texts(pair.target, "g1") == ["keep", "oops"] })
        try await pair.source.delete(oops.id, in: group, by: "ann", forUser: nil)
        let gone = try await eventually { try await pair.texts(pair.target, "g1") == ["keep"] }
        let shown = try await pair.texts(pair.target, "g1")
        #expect(gone, "\(shown)")
        #expect(await eventually { pair.engine.metrics.value("imbridge_relayed_total", ["target": "rc2", "action": "delete"]) == 1 })
        #expect(try pair.store.read { try $0.count(state: .dead) } == 0)
        await pair.engine.stop()
    }

    /// One user's deletion between worlds without a vendor preset (both report and delete either scope):
    /// the copy is gone from that user's puppet's view only.
    @Test func aDeletionForOneUserHidesTheCopyFromThatUsersPuppetOnly() async throws {
        var custom = Capabilities.rongCloud
        custom.vendor = "custom"
        custom.deletionScopes = [.everyone, .oneUser]
        custom.deleteBySenderOnly = false
        let pair = try Pair(("x", custom), ("y", custom))
        try await pair.engine.start(feeding: [pair.source])
        let group = ConversationRef.group("g1")
        let sent = try await pair.source.send(OutgoingMessage(conversation: group, sender: "ann", content: .text("hello")))
        #expect(try await eventually { try await pair.texts(pair.target, "g1") == ["hello"] })
        try await pair.source.delete(sent.id, in: group, by: "bob", forUser: "bob")
        func shown(to viewer: UserID) async throws -> [MessageID] {
            var query = HistoryQuery(conversation: group, anchor: .latest, limit: 10)
            query.viewer = viewer
            return try await pair.target.history(query).messages.map(\.id)
        }
        #expect(try await eventually { try await shown(to: "x_bob").isEmpty })
        #expect(try await shown(to: "x_ann").count == 1, "the others still see the copy")
        #expect(await eventually { pair.engine.metrics.value("imbridge_relayed_total", ["target": "y", "action": "delete"]) == 1 })
        await pair.engine.stop()
    }

    /// NIM cannot delete over its server API but recalls natively: the copy is recalled instead (it shows
    /// as recalled there, docs/mappings.md "Deletion").
    @Test func aDeletionTowardATargetThatCannotDeleteRecallsTheCopy() async throws {
        let pair = try Pair(("rc", .rongCloud), ("yx", .nim))
        pair.target.world.seedGroup(GroupProfile(id: "g1", owner: "rc_ann"))  // NIM: the team first, its sender in it
        try await pair.engine.start(feeding: [pair.source])
        let group = ConversationRef.group("g1")
        let oops = try await pair.source.send(OutgoingMessage(conversation: group, sender: "ann", content: .text("oops")))
        #expect(try await eventually { try await pair.texts(pair.target, "g1") == ["oops"] })
        try await pair.source.delete(oops.id, in: group, by: "ann", forUser: nil)
        #expect(try await eventually { try await pair.texts(pair.target, "g1") == ["(recalled) oops"] })
        #expect(await eventually { pair.engine.metrics.value("imbridge_relayed_total", ["target": "yx", "action": "recall"]) == 1 })
        await pair.engine.stop()
    }

    /// Both ways between two RongCloud worlds: the copy deleted by the bridge's puppet reports its own
    /// deletion, which is an echo and goes nowhere; each side keeps the other messages.
    @Test func theBridgesOwnDeletionIsAnEchoBothWays() async throws {
        let pair = try Pair(("a", .rongCloud), ("b", .rongCloud), direction: .both)
        try await pair.engine.start(feeding: [pair.source, pair.target])
        let group = ConversationRef.group("g1")
        _ = try await pair.source.send(OutgoingMessage(conversation: group, sender: "ann", content: .text("keep")))
        let oops = try await pair.source.send(OutgoingMessage(conversation: group, sender: "ann", content: .text("oops")))
        #expect(try await eventually { try await pair.texts(pair.target, "g1") == ["keep", "oops"] })
        try await pair.source.delete(oops.id, in: group, by: "ann", forUser: nil)
        #expect(try await eventually { try await pair.texts(pair.target, "g1") == ["keep"] })
        try await Task.sleep(nanoseconds: 200_000_000)
        #expect(try await pair.texts(pair.source, "g1") == ["keep"])
        #expect(pair.engine.metrics.value("imbridge_relayed_total", ["target": "a", "action": "delete"]) == 0)
        #expect(try pair.store.read { try $0.count(state: .dead) } == 0)
        await pair.engine.stop()
    }

    /// A vendor that reports membership changes: a removal on the source takes the puppet out of the
    /// target group at once, without waiting for a comparison round. No shipped adapter reports them yet
    /// (NIM's message copy carries team operations the adapter does not read), so the source is NIM's
    /// preset with `reportsMembershipChanges` on.
    @Test func aMembershipEventComparesTheGroupAtOnce() async throws {
        var reporting = Capabilities.nim
        reporting.reportsMembershipChanges = true
        let pair = try Pair(("yx", reporting), ("rc", .rongCloud))
        try await pair.engine.start(feeding: [pair.source])
        let id = try await pair.source.createGroup(GroupProfile(id: "ignored", name: "Team", owner: "ann", members: ["ann", "bob"]))
        _ = try await pair.source.send(OutgoingMessage(conversation: .group(id), sender: "ann", content: .text("hi")))
        #expect(try await eventually { try await pair.target.group(id)?.members == ["yx_ann", "yx_bob"] })
        try pair.source.world.removeMembers(["bob"], from: id)   // bob leaves on NIM
        #expect(try await eventually { try await pair.target.group(id)?.members == ["yx_ann"] })
        try await pair.source.updateGroup(GroupProfile(id: id, members: ["carol"]))
        #expect(try await eventually { try await pair.target.group(id)?.members == ["yx_ann", "yx_carol"] })
        #expect(try pair.store.read { try $0.count(state: .dead) } == 0)
        await pair.engine.stop()
    }

    /// A membership event that only the bridge's own puppets make (its comparison's writes seen again) is
    /// an echo and queues nothing; a real one queues one comparison per leg.
    @Test func membershipEventsOfPuppetsAreEchoes() throws {
        let pair = try Pair(("yx", .nim), ("rc", .rongCloud), direction: .both)
        let echo = IMEvent(eventID: "m1", backend: "yx", kind: .membersChanged(group: "g1", joined: ["rc_ann"], left: [], by: nil, at: 1))
        let echoed = try pair.engine.ingest([echo])
        #expect(echoed.echoes == 1 && echoed.groupsQueued == 0, "\(echoed)")
        let real = IMEvent(eventID: "m2", backend: "yx", kind: .membersChanged(group: "g1", joined: [], left: ["bob"], by: "ann", at: 2))
        let queued = try pair.engine.ingest([real])
        #expect(queued.accepted == 1 && queued.groupsQueued == 1 && queued.queued == 0, "\(queued)")
    }
}
