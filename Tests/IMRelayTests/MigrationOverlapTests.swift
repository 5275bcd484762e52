import Foundation
import IMCore
@_spi(Testing) import IMRelay
import IMStore
import IMTesting
import Synchronization
import Testing
import IMOutbox
@_spi(Testing) import IMMigration

/// A migration of a conversation that the bridge also relays (docs/migration.md, "Through the outbox"):
/// both paths queue into the same lane, share the ledger and the id map, and leave one copy of each
/// message on the target, whichever path saw it first.
@Suite struct MigrationOverlapTests {
    let g = ConversationRef.group("g")

    func texts(_ backend: any IMBackend, _ conversation: ConversationRef) async throws -> [String] {
        try await backend.history(HistoryQuery(conversation: conversation, anchor: .oldest, limit: 10_000)).messages.map { $0.content.digest }
    }

    /// 40 messages of history, then live messages every 2 ms while `Migrator` copies the conversation into
    /// the group the bridge relays it to, on one SQLite store: every message once, old and new. Whether the
    /// migration meets live messages (sends some itself) depends on the schedule: on a loaded machine the
    /// live relay can stay ahead of it. Every round is checked; up to three rounds are run until one
    /// overlaps, and one must.
    @Test func aLiveRelayAndAMigrationOfOneConversationLeaveOneCopyOfEach() async throws {
        var overlapped = false
        for _ in 1...3 where !overlapped {
            overlapped = try await relayAndMigrateOnce()
        }
        #expect(overlapped, "in three rounds the migration never met a live message")
    }

    /// One round of the test above; true when the migration sent live messages too.
    func relayAndMigrateOnce() async throws -> Bool {
        let harness = try RelayHarness()
        for n in 1...40 { _ = try await harness.wk.send(OutgoingMessage(conversation: g, sender: UserID("u\(n % 3)"), content: .text("old \(n)"))) }
        let live = harness.engine()
        try await live.start(feeding: [harness.wk, harness.rc])
        let wk = harness.wk, g = self.g
        let sender = Task {
            for n in 1...150 {
                _ = try await wk.send(OutgoingMessage(conversation: g, sender: UserID("u\(n % 3)"), content: .text("live \(n)")))
                try await Task.sleep(nanoseconds: 2_000_000)
            }
        }
        // A precondition, not a speed claim: on a loaded machine the first relays can take seconds.
        #expect(await eventually(60) { (try? await texts(harness.rcMemory, g).count) ?? 0 >= 20 }, "live relay under way")
        let report = try await Migrator(store: harness.store, source: harness.wk, target: harness.rc, sendsPerSecond: 100_000,
                                        routes: harness.routes)
            .run(MigrationPlan(source: "wk", target: "rc", conversations: [(g, g)], pageSize: 7, account: false))
        // The migration's engine, stopping, leaves no lane leased: the lane is free or the live engine's.
        let lane = LaneKey(backend: "rc", conversation: g)
        let holder = try harness.store.read { try $0.leaseHolder(lane.leaseName, at: Int64(Date().timeIntervalSince1970 * 1000)) }
        #expect(holder == nil || holder == live.lease.owner, "the lane is held by \(holder ?? "nobody")")
        try await sender.value
        #expect(await live.waitUntilIdle(timeoutMs: 60_000))
        await live.stop()

        let copies = try await texts(harness.rcMemory, g)
        let want = (1...40).map { "old \($0)" } + (1...150).map { "live \($0)" }
        #expect(copies.count == want.count, "one copy each: \(copies.count) for \(want.count)")
        #expect(Set(copies) == Set(want))
        #expect(Dictionary(grouping: copies, by: { $0 }).filter { $0.value.count > 1 }.keys.sorted() == [], "doubles")
        #expect(copies.filter { $0.hasPrefix("old ") } == (1...40).map { "old \($0)" }, "history in order")
        #expect(copies.filter { $0.hasPrefix("live ") } == (1...150).map { "live \($0)" }, "live messages in order")
        #expect(report.total.failedTotal == 0, "\(report.summary)")
        return report.total.sentTotal > 40
    }

    /// The migration's engine is a guest on the store: it leaves the leases of a bridge running on the
    /// same SQLite file alone (a bridge's own start drops them all), and its copies are paced to the rate
    /// it is given (the target's documented rate by default).
    @Test func theMigrationsEngineLeavesOtherLeasesAloneAndPacesItsCopies() async throws {
        let harness = try RelayHarness()
        let now = SystemClock().nowMs()
        let busy = LaneKey(backend: "rc", conversation: .group("elsewhere"))
        #expect(try harness.store.transaction { try $0.takeLease(busy.leaseName, owner: "bridge-1", ttlMs: 60_000, now: now) != nil })
        for n in 1...25 { _ = try await harness.wk.send(OutgoingMessage(conversation: g, sender: "u1", content: .text("m\(n)"))) }
        let started = Date()
        let report = try await Migrator(store: harness.store, source: harness.wk, target: harness.rc, sendsPerSecond: 10)
            .run(MigrationPlan(source: "wk", target: "rc", conversations: [(g, g)], account: false))
        let elapsed = Date().timeIntervalSince(started)
        #expect(report.total.sentTotal == 25 && report.total.failedTotal == 0, "\(report.summary)")
        #expect(try harness.store.read { try $0.leaseHolder(busy.leaseName, at: SystemClock().nowMs()) } == "bridge-1")
        // 10 a second with a burst of 10: the last of 25 copies no sooner than 1.5 s after the first.
        #expect(elapsed >= 1.4, "paced: \(elapsed) s")
    }

    /// A bridge that holds the lane carries out the migration's copies; senders the migration's user phase
    /// wrote with their profiles are not provisioned again as bare ids (`UserProvisioning.ensureUser`, which
    /// on RongCloud resets the name).
    @Test func copiesABridgeCarriesOutDoNotProvisionMigratedSendersAgain() async throws {
        let wk = MemoryBackend(id: "wk", capabilities: .wukong, clock: SystemClock())
        for user in ["u1", "u2"] as [UserID] { try await wk.saveUser(UserProfile(id: user, name: "Name of \(user)")) }
        for n in 1...6 { _ = try await wk.send(OutgoingMessage(conversation: g, sender: n.isMultiple(of: 2) ? "u1" : "u2", content: .text("m\(n)"))) }
        let inner = MemoryBackend(id: "rc", capabilities: .rongCloud, clock: SystemClock())
        let rc = ProvisionCounting(inner)
        let store = try RelayHarness().store
        let bridge = RelayEngine(store: store, backends: [wk, rc], routes: [], lease: LeaseSettings(owner: "bridge-1"))
        let lane = LaneKey(backend: "rc", conversation: g)
        await bridge.start()
        // Once the bridge leads (its SQLite start has dropped every lease by then), it holds the lane, as
        // while it relays into it: the migration's engine is refused the lane.
        #expect(await eventually(30) { (try? store.read { try $0.leaseHolder(LeaseSettings.leaderLease, at: SystemClock().nowMs()) }) == "bridge-1" })
        let now = SystemClock().nowMs()
        #expect(try store.transaction { try $0.takeLease(lane.leaseName, owner: "bridge-1", ttlMs: 60_000, now: now) != nil })
        let report = try await Migrator(store: store, source: wk, target: rc, sendsPerSecond: 100_000)
            .run(MigrationPlan(source: "wk", target: "rc", conversations: [(g, g)]))
        await bridge.stop()
        #expect(report.total.sentTotal == 6 && report.account?.usersCreated == 2, "\(report.summary)")
        #expect(try await texts(inner, g) == (1...6).map { "m\($0)" })
        #expect(rc.ensured.withLock { $0 } == [], "provisioned again: \(rc.ensured.withLock { $0 })")
        #expect(try await inner.users(["u1", "u2"]).map(\.name) == ["Name of u1", "Name of u2"])
    }

    /// The migration records the ledger row a callback (or catch-up) would: when the callback comes after
    /// the migration queued the message it is a duplicate and queues nothing; the other legs of the routes
    /// get the message from the migration's recording, once.
    @Test func aCallbackAfterTheMigrationIsADuplicateAndOtherLegsStillGetTheMessage() async throws {
        let harness = try RelayHarness()
        let nim = MemoryBackend(id: "nim", capabilities: .nim, clock: SystemClock())
        nim.world.seedGroup(GroupProfile(id: GroupID(g.id), owner: "wk_u1"))  // a NIM team message needs the team, its sender in it
        let routes = [Route(from: try RouteEndpoint(parsing: "wk:group:*"), to: try RouteEndpoint(parsing: "rc:group:*"), direction: .forward),
                      Route(from: try RouteEndpoint(parsing: "wk:group:*"), to: try RouteEndpoint(parsing: "nim:group:*"), direction: .forward)]
        var sent: [Message] = []
        for n in 1...10 { sent.append(try await harness.wk.send(OutgoingMessage(conversation: g, sender: "u1", content: .text("m\(n)")))) }
        let report = try await Migrator(store: harness.store, source: harness.wk, target: harness.rc, sendsPerSecond: 100_000,
                                        routes: routes, backends: [nim])
            .run(MigrationPlan(source: "wk", target: "rc", conversations: [(g, g)], pageSize: 4, account: false))
        #expect(report.total.sentTotal == 10 && report.total.failedTotal == 0, "\(report.summary)")
        #expect(try await texts(harness.rcMemory, g).count == 10)

        let bridge = RelayEngine(store: harness.store, backends: [harness.wk, harness.rc, nim], routes: routes,
                                 retry: RetryPolicy(baseMs: 5, maxMs: 50))
        // The callbacks MemoryBackend would have delivered (`msg:<id>`), arriving late.
        let late = try bridge.ingest(sent.map { IMEvent(eventID: EventID("msg:\($0.id)"), backend: "wk", kind: .message($0)) })
        #expect(late.duplicates == 10 && late.queued == 0, "\(late)")
        await bridge.start()
        #expect(await bridge.waitUntilIdle(timeoutMs: 10_000))
        await bridge.stop()
        #expect(try await texts(nim, g) == (1...10).map { "m\($0)" }, "the other leg, once each")
        #expect(try await texts(harness.rcMemory, g) == (1...10).map { "m\($0)" }, "the migration's target, once each")
    }

    /// A message sent with expansion values, queued by the live relay and by a migration before either
    /// copy was made (the migration read it between its callback's recording and its copy): both paths
    /// queue the copy and, toward NIM, a carrier of its initial values, in the same lane. The migration's
    /// copy is not sent again (the id map names the live one), nor is its carrier: NIM shows the values
    /// once (seed 57 showed them twice).
    @Test func aMessagesInitialValuesAreCarriedOnceWhenTheMigrationAndTheRelayBothQueuedIt() async throws {
        let harness = try RelayHarness()
        let nim = MemoryBackend(id: "nim", capabilities: .nim, clock: SystemClock())
        nim.world.seedGroup(GroupProfile(id: GroupID(g.id), owner: "wk_u1"))
        // A named route (a wildcard into NIM, which assigns team ids, would make portals: docs/portals.md).
        let routes = [Route(from: try RouteEndpoint(parsing: "wk:group:g"), to: try RouteEndpoint(parsing: "nim:group:g"), direction: .forward)]
        let sent = try await harness.wk.send(OutgoingMessage(conversation: g, sender: "u1", content: .text("order"), expansion: ["n": "13"]))
        let bridge = RelayEngine(store: harness.store, backends: [harness.wk, nim], routes: routes, retry: RetryPolicy(baseMs: 5, maxMs: 50))
        // The callback, recorded and queued; the bridge's lanes have not run it yet.
        let live = try bridge.ingest([IMEvent(eventID: EventID("msg:\(sent.id)"), backend: "wk", kind: .message(sent))])
        #expect(live.queued >= 1, "\(live)")
        let report = try await Migrator(store: harness.store, source: harness.wk, target: nim, sendsPerSecond: 100_000, routes: routes)
            .run(MigrationPlan(source: "wk", target: "nim", conversations: [(g, g)], users: .puppet(prefix: "wk_"), account: false))
        #expect(report.total.failedTotal == 0, "\(report.summary)")
        await bridge.start()
        #expect(await bridge.waitUntilIdle(timeoutMs: 10_000))
        await bridge.stop()
        let shown = try await nim.history(HistoryQuery(conversation: g, anchor: .oldest, limit: 100)).messages
        let carriers = shown.filter { if case .custom = $0.content { true } else { false } }
        let entries = try harness.store.read { try $0.entries(ids: Array(1...40)) }
        #expect(shown.count - carriers.count == 1, "one copy: \(shown.map(\.content.digest)) \(entries.map { "\($0.id) \($0.lane) \($0.kind) \($0.sourceEventID) \($0.state)" })")
        #expect(carriers.count == 1, "the initial values carried once: \(carriers.count) \(entries.map { "\($0.id) \($0.lane) \($0.kind) \($0.sourceEventID) \($0.state)" }) \(report.summary)")
    }

    /// A message a migration copied from a source whose changes catch-up finds by re-reading history
    /// (`ChangeWindowSource`): what it held when read is kept as the intake keeps what a message was sent
    /// with, so a key added while the bridge is down is a change the window relays — with nothing kept, the
    /// window took every key it showed as a first value and relayed none (seed 720, docs/reliability.md).
    @Test func theValuesAMigrationReadAreKeptSoAKeyAddedLaterIsAChange() async throws {
        let harness = try RelayHarness()
        let source = WindowHistorySource(harness.wk)
        let sent = try await harness.wk.send(OutgoingMessage(conversation: g, sender: "u1", content: .text("order"), expansion: ["n": "5"]))
        let report = try await Migrator(store: harness.store, source: source, target: harness.rc, sendsPerSecond: 100_000, routes: harness.routes)
            .run(MigrationPlan(source: "wk", target: "rc", conversations: [(g, g)], account: false))
        #expect(report.total.failedTotal == 0 && report.total.sentTotal == 1, "\(report.summary)")
        let kept = try harness.store.read { try $0.expansionKeys(of: sent.id, on: "wk") }
        #expect(kept["n"]?.held == .known("5"), "\(kept)")
        #expect(kept.count == 1)
    }

    /// The same recalled message, whose copy the bridge had made already: the migration queues nothing for
    /// it, so the recall stays the callback's to carry — recorded by the migration, it would be a duplicate
    /// and the copy would never be recalled.
    @Test func aRecallOfACopyTheBridgeMadeIsStillRelayedAfterAMigrationMetTheMessage() async throws {
        let h = try RelayHarness()
        let source = WindowHistorySource(MemoryBackend(id: "wk", capabilities: .wukong, clock: SystemClock()))
        let bridge = RelayEngine(store: h.store, backends: [source, h.rc], routes: h.routes, retry: RetryPolicy(baseMs: 5, maxMs: 50))
        await bridge.start()
        let taken = try await source.sendText("taken back")
        try await bridge.accept([try #require(source.catchUpEvent(for: taken))])
        #expect(await eventually { (try? await h.rc.history(HistoryQuery(conversation: g, anchor: .oldest, limit: 10)).messages.count) == 1 })
        try await source.inner.recall(taken.id, in: g, by: "ann")
        let report = try await Migrator(store: h.store, source: source, target: h.rc, sendsPerSecond: 100_000, routes: h.routes)
            .run(MigrationPlan(source: "wk", target: "rc", conversations: [(g, g)], account: false))
        #expect(report.total.failedTotal == 0 && report.total.skipped["already_copied"] == 1, "\(report.summary)")
        try await bridge.accept([IMEvent(eventID: EventID("recall:\(taken.id)"), backend: "wk",
                                         kind: .recalled(messageID: taken.id, conversation: g, by: "ann", at: taken.sentAt + 1))])
        #expect(await eventually { (try? await h.rc.history(HistoryQuery(conversation: g, anchor: .oldest, limit: 10)).messages.last?.isRecalled) == true },
                "the copy was not recalled")
        await bridge.stop()
    }

    /// A message the bridge took in and queued, recalled meanwhile (its recall queued too), that a migration
    /// reads before the bridge's lane has sent it: the migration queues nothing for it — a second recall
    /// would meet a copy taken back already, on NIM a dead letter (seed 189, docs/reliability.md).
    @Test func aMessageTheBridgeQueuedIsNotQueuedAgainByAMigration() async throws {
        let h = try RelayHarness()
        let source = WindowHistorySource(MemoryBackend(id: "wk", capabilities: .wukong, clock: SystemClock()))
        let bridge = RelayEngine(store: h.store, backends: [source, h.rc], routes: h.routes, retry: RetryPolicy(baseMs: 5, maxMs: 50))
        let taken = try await source.sendText("taken back")
        _ = try bridge.ingest([try #require(source.catchUpEvent(for: taken))])
        try await source.inner.recall(taken.id, in: g, by: "ann")
        _ = try bridge.ingest([IMEvent(eventID: EventID("recall:\(taken.id)"), backend: "wk",
                                       kind: .recalled(messageID: taken.id, conversation: g, by: "ann", at: taken.sentAt + 1))])
        let report = try await Migrator(store: h.store, source: source, target: h.rc, sendsPerSecond: 100_000, routes: h.routes)
            .run(MigrationPlan(source: "wk", target: "rc", conversations: [(g, g)], account: false))
        #expect(report.total.failedTotal == 0 && report.total.skipped["already_copied"] == 1, "\(report.summary)")
        await bridge.start()
        #expect(await bridge.waitUntilIdle(timeoutMs: 10_000))
        let entries = try h.store.read { try $0.entries(ids: Array(1...100)) }
        #expect(entries.filter { $0.kind == "recall" }.count == 1 && entries.filter { $0.kind == "send" }.count == 1,
                "\(entries.map { "\($0.id) \($0.kind) \($0.sourceEventID) \($0.state)" })")
        let copies = try await h.rc.history(HistoryQuery(conversation: g, anchor: .oldest, limit: 10)).messages
        #expect(copies.count == 1 && copies.first?.isRecalled == true)
        await bridge.stop()
    }

    /// A message recalled on its source before a migration reads it is copied and then recalled by the
    /// migration; the recall's callback, coming afterwards (the bridge was down when it was made), is a
    /// duplicate: no second recall is queued — on NIM, whose history drops a recalled message, it could not
    /// find the copy and would end as a dead letter.
    @Test func aRecallTheMigrationCopiedIsNotQueuedAgainWhenItsCallbackComes() async throws {
        let h = try RelayHarness()
        let source = WindowHistorySource(MemoryBackend(id: "wk", capabilities: .wukong, clock: SystemClock()))
        let bridge = RelayEngine(store: h.store, backends: [source, h.rc], routes: h.routes, retry: RetryPolicy(baseMs: 5, maxMs: 50))
        await bridge.start()
        _ = try await source.sendText("kept")
        let taken = try await source.sendText("taken back")
        try await source.inner.recall(taken.id, in: g, by: "ann")
        let report = try await Migrator(store: h.store, source: source, target: h.rc, sendsPerSecond: 100_000, routes: h.routes)
            .run(MigrationPlan(source: "wk", target: "rc", conversations: [(g, g)], account: false))
        #expect(report.total.failedTotal == 0, "\(report.summary)")
        try await bridge.accept([IMEvent(eventID: EventID("recall:\(taken.id)"), backend: "wk",
                                         kind: .recalled(messageID: taken.id, conversation: g, by: "ann", at: taken.sentAt + 1))])
        #expect(await bridge.waitUntilIdle(timeoutMs: 10_000))
        let entries = try h.store.read { try $0.entries(ids: Array(1...100)) }
        #expect(entries.filter { $0.kind == "recall" }.count == 1, "\(entries.map { "\($0.id) \($0.kind) \($0.sourceEventID)" })")
        #expect(entries.allSatisfy { $0.state == .done }, "\(entries.map { "\($0.id) \($0.kind) \($0.state)" })")
        let copies = try await h.rc.history(HistoryQuery(conversation: g, anchor: .oldest, limit: 10)).messages
        #expect(copies.count == 2 && copies.last?.isRecalled == true)
        await bridge.stop()
    }
}

/// Forwards to a memory backend, noting every `ensureUser` (a bare provisioning call).
final class ProvisionCounting: MemoryWrapping, UserDirectory {
    let inner: MemoryBackend
    let ensured = Mutex<[UserID]>([])
    init(_ inner: MemoryBackend) { self.inner = inner }
    func ensureUser(_ profile: UserProfile) async throws {
        ensured.withLock { $0.append(profile.id) }
        try await inner.ensureUser(profile)
    }
    func users(_ ids: [UserID]) async throws -> [UserProfile] { try await inner.users(ids) }
    func saveUser(_ profile: UserProfile) async throws { try await inner.saveUser(profile) }
    func allUsers() async throws -> [UserID] { try await inner.allUsers() }
}
