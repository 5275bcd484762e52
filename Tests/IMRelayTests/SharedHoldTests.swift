import Foundation
import IMAdapterKit
import IMCore
@_spi(Testing) @testable import IMRelay
import IMStore
import IMTesting
import PostgresTestSupport
import Testing
import IMOutbox
@_spi(Testing) @testable import IMCatchUp
@testable import IMPositions

/// Two instances on one PostgreSQL store and a source whose live traffic shows no gap (RongCloud, NIM,
/// JMessage): while one instance catches a conversation up, the other refuses the conversation's live
/// callbacks instead of recording them ahead of the older messages the read brings
/// (docs/high-availability.md, "Held conversations"). Found by the fault campaign as a reorder after a
/// PostgreSQL outage: each instance held only the conversations whose callbacks it had refused itself.
@Suite(.serialized) struct SharedHoldTests {
    struct Instance {
        let source: FailingHistorySource
        let engine: RelayEngine
        let runner: CatchUpRunner
        let owner: String
    }

    struct Rig {
        let memory = MemoryBackend(id: "wk", capabilities: .wukong, clock: SystemClock())
        let target = MemoryBackend(id: "rc", capabilities: .rongCloud, clock: SystemClock())
        let url: String
        let routes = [Route(from: try! RouteEndpoint(parsing: "wk:group:*"), to: try! RouteEndpoint(parsing: "rc:group:*"))]

        init() throws { url = try TestPostgres.freshURL("holds") }

        /// An instance of its own (store connection, source view whose history can fail, lease owner).
        func instance(_ name: String, ttlMs: Int64 = 1_000, gapSignal: CatchUpGapSignal = .none) throws -> Instance {
            let store = try BridgeStore(path: url)
            let source = FailingHistorySource(memory, gapSignal: gapSignal)
            let owner = "\(name)-\(UUID().uuidString.prefix(6))"
            let engine = RelayEngine(store: store, backends: [source, target], routes: routes, retry: RetryPolicy(baseMs: 5, maxMs: 50),
                                     lease: LeaseSettings(owner: owner, ttlMs: ttlMs))
            let runner = CatchUpRunner(engine: engine, backends: [source, target], routes: routes,
                                       settings: CatchUpSettings(maxAgeMs: 3_600_000, maxMessagesPerConversation: 1000, intervalMs: 600_000))
            return Instance(source: source, engine: engine, runner: runner, owner: owner)
        }

        func start(_ instance: Instance) async throws {
            await instance.engine.start()
            try await instance.runner.start()
            #expect(await eventually { await instance.runner.finishedPasses >= 1 })
        }

        /// Instances a and b started, and n1 relayed through `first` of them (it meets g first: a
        /// conversation's first callback writes its checkpoint).
        func pair(firstMessageThrough first: String = "a") async throws -> (a: Instance, b: Instance) {
            let a = try instance("a"), b = try instance("b")
            try await start(a)
            try await start(b)
            try await (first == "a" ? a : b).engine.accept([post("n1")])
            #expect(try await eventually { try await relayed() == ["n1"] })
            return (a, b)
        }

        func stop(_ instance: Instance) async {
            await instance.runner.stop()
            await instance.engine.stop()
        }

        /// Sends `text` into group g on the source (its history has it) and returns its callback's event.
        func post(_ text: String) async throws -> IMEvent {
            _ = try await memory.send(OutgoingMessage(conversation: .group("g"), sender: "ann", content: .text(text)))
            let stored = try #require(try await memory.history(HistoryQuery(conversation: .group("g"), anchor: .latest, limit: 1)).messages.last)
            return IMEvent(eventID: EventID("msg:\(stored.id)"), backend: "wk", kind: .message(stored))
        }

        func relayed() async throws -> [String] {
            try await target.history(HistoryQuery(conversation: .group("g"), anchor: .latest, limit: 1000)).messages
                .compactMap { if case .text(let t) = $0.content { t.text } else { nil } }
        }

        /// `instance` cannot read history, and a callback of `text` it could not record (the vendor gave up):
        /// it holds g in the store until its read succeeds. True once the store shows the hold.
        func holdStuck(_ instance: Instance, after text: String) async throws -> Bool {
            instance.source.historyDown.withLock { $0 = true }
            instance.engine.catchUpGate.notRecorded([try await post(text)])
            return try await eventually { try holder(instance) == instance.owner }
        }

        func holder(_ instance: Instance) throws -> String? {
            try instance.engine.store.read { try $0.leaseOwners(["hold:wk/group:g"])["hold:wk/group:g"] }
        }
    }

    /// A holds the conversation (its catch-up cannot read history yet, after a callback it could not
    /// record); B meets the hold and refuses the newer message, which is relayed after the older one.
    @Test func aConversationOneInstanceCatchesUpIsNotOvertakenByTheOther() async throws {
        let rig = try Rig()
        let a = try rig.instance("a"), b = try rig.instance("b")
        try await rig.start(a)
        try await rig.start(b)
        for (index, text) in ["n1", "n2", "n3"].enumerated() {
            try await (index.isMultiple(of: 2) ? a : b).engine.accept([rig.post(text)])
        }
        #expect(try await eventually { try await rig.relayed() == ["n1", "n2", "n3"] })

        // n4's callback reached A, which could not record it; the vendor gave up. A's read fails for now.
        #expect(try await rig.holdStuck(a, after: "n4"), "A holds the conversation in the store")

        let n5 = try await rig.post("n5")
        await #expect(throws: IMError.self, "B refuses a live message of a conversation A holds") {
            try await b.engine.accept([n5])
        }
        try await Task.sleep(nanoseconds: 200_000_000)
        #expect(try await rig.relayed() == ["n1", "n2", "n3"], "nothing overtakes n4")

        a.source.historyDown.withLock { $0 = false }
        #expect(try await eventually { try rig.holder(a) == nil }, "A gives the hold up once caught up")
        try await b.engine.accept([n5])   // the vendor's retry
        try await b.engine.accept([rig.post("n6")])
        let expected = ["n1", "n2", "n3", "n4", "n5", "n6"]
        let arrived = try await eventually { try await rig.relayed().count >= 6 }
        let got = try await rig.relayed()
        #expect(arrived && got == expected, "got \(got)")
        await rig.stop(a)
        await rig.stop(b)
    }

    /// A callback that carries only the bridge's own writes joins no transaction (`RelayEngine.accept`),
    /// but it still meets another instance's hold: B refuses it while A holds g and marks the hold, as
    /// for any live callback, so that a hold left by a dead instance is found and taken over.
    @Test func anEchoOnlyCallbackStillMeetsAnotherInstancesHold() async throws {
        let rig = try Rig()
        // B meets g with a message of its own first.
        let (a, b) = try await rig.pair(firstMessageThrough: "b")
        func echo(_ id: String) -> IMEvent {
            // `rc_bob` is the puppet the route writes RongCloud's bob as on WuKong: the bridge sent it.
            IMEvent(eventID: EventID("msg:\(id)"), backend: "wk", kind: .message(Message(
                id: MessageID(id), conversation: .group("g"), sender: "rc_bob", sentAt: 1, content: .text("copy"))))
        }
        // No hold anywhere: taken and counted as an echo. (That it joins no write transaction is asserted in
        // `EchoIntakeTests`, on a store nothing else writes to; here B's lanes and leases write meanwhile.)
        let echoes = b.engine.metrics.value("imbridge_echoes_total")
        try await b.engine.accept([echo("e1")])
        #expect(b.engine.metrics.value("imbridge_echoes_total") == echoes + 1)
        // The read that found no hold answers for the echoes of the next moment (`echoCheckWindowMs`): a
        // burst of them costs a read per window, not one each. The lease loop's renewals are counted apart
        // and left out; the scheduler's scans (two reads each) are allowed for. On a loaded machine the burst
        // spans more windows, and the bound grows with them; quick, it is a few statements, not 20.
        let counters = b.engine.store.counters
        let statements = counters.statements - counters.sideStatements
        let scansBefore = b.engine.signals.scans.load(ordering: .relaxed)
        let started = ContinuousClock.now
        for n in 0..<20 { try await b.engine.accept([echo("burst-\(n)")]) }
        let took = ContinuousClock.now - started
        let windows = 1 + Int(took / .milliseconds(Int64(SharedHolds.echoCheckWindowMs)))
        let scanned = b.engine.signals.scans.load(ordering: .relaxed) - scansBefore
        let spent = counters.statements - counters.sideStatements - statements
        #expect(spent <= 2 * windows + 2 * scanned,
                "\(spent) statements for 20 echoes over \(windows) window(s) of \(SharedHolds.echoCheckWindowMs) ms, \(scanned) scan(s)")

        #expect(try await rig.holdStuck(a, after: "n2"), "A holds the conversation in the store")
        // Met within the window of the hold being taken.
        var refused = false
        for n in 0..<40 where !refused {
            do {
                try await b.engine.accept([echo("e2-\(n)")])
                try await Task.sleep(nanoseconds: 50_000_000)
            } catch {
                refused = error is IMError
            }
        }
        #expect(refused, "B refuses an echo-only callback of a conversation A holds")
        #expect(b.engine.metrics.value("imbridge_callbacks_held_elsewhere_total") >= 1)
        a.source.historyDown.withLock { $0 = false }
        #expect(try await eventually { try await rig.relayed() == ["n1", "n2"] })
        await rig.stop(a)
        await rig.stop(b)
    }

    /// A WuKong-like source (message sequence numbers): A recorded n1…n3 of group g, B has never met g.
    /// n4's callback is late; n5's reaches B. B does not record n5 blind: it reads g's position from the
    /// store, sees the gap and reads g's history, so n4 arrives first. Found by the fault campaign (two
    /// instances behind a round-robin balancer, WuKong → NIM): an instance's first batch of a conversation
    /// went ahead of an older batch the other instance had refused.
    @Test func anInstanceThatNeverMetAConversationDoesNotRecordItBlind() async throws {
        let rig = try Rig()
        let a = try rig.instance("a", gapSignal: .sequence), b = try rig.instance("b", gapSignal: .sequence)
        try await rig.start(a)
        try await rig.start(b)
        for text in ["n1", "n2", "n3"] { try await a.engine.accept([rig.post(text)]) }
        #expect(try await eventually { try await rig.relayed() == ["n1", "n2", "n3"] })

        _ = try await rig.post("n4")   // its callback has not come yet
        let n5 = try await rig.post("n5")
        guard case .message(let message) = n5.kind, message.seq != nil else {
            Issue.record("the source gives no sequence numbers: the case cannot be staged")
            return
        }
        try await b.engine.accept([n5])
        let arrived = try await eventually { try await rig.relayed().count >= 5 }
        let got = try await rig.relayed()
        #expect(arrived && got == ["n1", "n2", "n3", "n4", "n5"], "got \(got)")
        await rig.stop(a)
        await rig.stop(b)
    }

    /// A dies holding the conversation, with a live message it answered still unrecorded (held in its
    /// memory): B meets the expired hold, takes it over and reads the conversation, so that message
    /// arrives, before the newer one B refused.
    @Test func aHoldLeftByAnInstanceThatDiedIsTakenOver() async throws {
        let rig = try Rig()
        let (a, b) = try await rig.pair()

        #expect(try await rig.holdStuck(a, after: "n2"))
        try await a.engine.accept([rig.post("n3")])   // held in A's memory and answered
        await rig.stop(a)   // its leases are no longer renewed: the hold expires, its row stays

        let n4 = try await rig.post("n4")
        await #expect(throws: IMError.self, "B refuses while the row of A's hold is there") {
            try await b.engine.accept([n4])
        }
        #expect(try await eventually { try rig.holder(b) == nil }, "B took the hold over, caught up and gave it up")
        try await b.engine.accept([n4])
        let expected = ["n1", "n2", "n3", "n4"]
        let arrived = try await eventually { try await rig.relayed().count >= 4 }
        let got = try await rig.relayed()
        #expect(arrived && got == expected, "got \(got)")
        await rig.stop(b)
    }

    /// A hold row of A's that no catch-up of A's is for — as the intake writes it anew when its transaction
    /// for a message held while A's catch-up finished commits after that catch-up gave the hold up. A's
    /// lease loop would renew it for as long as A runs: B refused every callback of the conversation and
    /// found its own catch-up of it busy, and a message whose callback was lost meanwhile was never read
    /// back (seed 389, docs/reliability.md). A's lease loop sees the hold has no catch-up behind it and
    /// catches the conversation up, which reads the lost message back and gives the hold up.
    @Test func aHoldThatOutlivedItsCatchUpIsGivenUp() async throws {
        let rig = try Rig()
        let (a, b) = try await rig.pair()

        // The row as the late intake transaction leaves it: A's, renewed with A's leases.
        let now = Int64(Date().timeIntervalSince1970 * 1000)
        #expect(try a.engine.store.transaction { try $0.takeLease("hold:wk/group:g", owner: a.owner, ttlMs: 1_000, now: now) } != nil)
        _ = try await rig.post("n2")   // its callback was lost
        let n3 = try await rig.post("n3")
        // B refuses n3 while the row is A's; the vendor retries it until A gives the hold up.
        var refusals = 0, given = false
        let deadline = Date().addingTimeInterval(20)
        while !given && Date() < deadline {
            do {
                try await b.engine.accept([n3])
                given = true
            } catch is IMError {
                refusals += 1
                try await Task.sleep(nanoseconds: 300_000_000)
            }
        }
        let holder = try rig.holder(a)
        #expect(given, "B took n3 in within 20 s (refused \(refusals) times); the hold's owner: \(holder ?? "none")")
        let arrived = try await eventually { try await rig.relayed().count >= 3 }
        let got = try await rig.relayed()
        #expect(arrived && got == ["n1", "n2", "n3"], "the lost n2 is read back, before n3: got \(got)")
        #expect(try rig.holder(a) == nil, "no hold is left")
        await rig.stop(a)
        await rig.stop(b)
    }

    /// A late callback behind the catch-up position, for a message gone from the source's history, is
    /// withheld (recorded, relayed nowhere). Its conversation is not held in the store for it: nothing
    /// would ever give that hold up (no catch-up is to come for a withheld message), the lease loop would
    /// renew it for good, and every other instance would refuse the conversation's live callbacks — and
    /// find its own catch-up of it busy — for as long as this one runs (seed 38 lost messages so).
    @Test func aWithheldLateCallbackLeavesNoHold() async throws {
        let rig = try Rig()
        let store = try BridgeStore(path: rig.url)
        let source = WindowHistorySource(rig.memory)
        let owner = "a-\(UUID().uuidString.prefix(6))"
        let engine = RelayEngine(store: store, backends: [source, rig.target], routes: rig.routes, retry: RetryPolicy(baseMs: 5, maxMs: 50),
                                 lease: LeaseSettings(owner: owner, ttlMs: 1_000))
        let runner = CatchUpRunner(engine: engine, backends: [source, rig.target], routes: rig.routes,
                                   settings: CatchUpSettings(maxAgeMs: 3_600_000, maxMessagesPerConversation: 1000, intervalMs: 600_000))
        await engine.start()
        try await runner.start()
        defer { Task { await runner.stop(); await engine.stop() } }
        #expect(await eventually { await runner.finishedPasses >= 1 })
        try await engine.accept([rig.post("n1")])
        // Each in a millisecond of its own: the screen compares send times.
        try await Task.sleep(nanoseconds: 5_000_000)
        let gone = try await rig.post("gone")
        try await Task.sleep(nanoseconds: 5_000_000)
        let n3 = try await rig.post("n3")
        try await engine.accept([n3])
        #expect(try await eventually { try await rig.relayed() == ["n1", "n3"] })
        // A read went past `gone` (its position is n3's), and `gone` was then taken back on the source.
        guard case .message(let read) = n3.kind, case .message(let late) = gone.kind else { return }
        engine.catchUpGate.confirm(CatchUpGate.Key(backend: "wk", conversation: .group("g")), at: read.sentAt, id: read.id.rawValue)
        source.hidden.withLock { _ = $0.insert(late.id) }
        try await engine.accept([gone])
        #expect(try store.read { try $0.hasEvent("wk", EventID("withheld:\(late.id)")) }, "withheld")
        #expect(try store.read { try $0.leaseOwners(["hold:wk/group:g"])["hold:wk/group:g"] } == nil,
                "no hold left for the conversation of a withheld message")
        try await Task.sleep(nanoseconds: 200_000_000)
        #expect(try await rig.relayed() == ["n1", "n3"])
    }
}
