import Foundation
import IMCore
@_spi(Testing) import IMRelay
import IMStore
import IMTesting
import Synchronization
import Testing
import IMOutbox

/// Expansion convergence in the relay (docs/expansions.md) over the testing kit's WuKong and RongCloud
/// presets and a real SQLite store: races end the same on both sides, a stale change is not applied, a
/// late update does not bring a removed key back, and a value over the target's limit is dead-lettered at
/// intake with its reason.
@Suite struct ExpansionConvergenceTests {
    let g1 = ConversationRef.group("g1")

    /// A relayed order with an expansion, and its copy on RongCloud.
    func order(_ h: RelayHarness) async throws -> (wk: MessageID, rc: MessageID) {
        let order = try await h.wk.send(OutgoingMessage(conversation: g1, sender: "shop", content: .text("order"), expansion: ["status": "new"]))
        var copy: MessageID?
        #expect(try await eventually {
            copy = try h.store.read { try $0.mapped(order.id, from: "wk", to: "rc") }?.toMessage
            return copy != nil
        })
        return (order.id, try #require(copy))
    }

    func settled(_ h: RelayHarness, _ ids: (wk: MessageID, rc: MessageID)) async throws -> [String: String]? {
        var last: [String: String]?
        let ok = try await eventually {
            let wk = try await h.wk.expansion(of: ids.wk, in: g1).values, rc = try await h.rcMemory.expansion(of: ids.rc, in: g1).values
            last = wk
            let pending = try h.store.read { try $0.count(state: .pending) }
            return wk == rc && pending == 0
        }
        return ok ? last : nil
    }

    /// RongCloud → WuKong one way, the WuKong side behind `wrap`: an order sent on RongCloud with `expansion`,
    /// relayed to its copy, the lanes idle. RongCloud stamps with `rcClock`; `ready` sees the wrapped side and
    /// the engine before it starts. The caller stops the engine.
    func oneWayOrder<W: IMBackend>(expansion: [String: String], rcClock: any IMClock = SystemClock(), wrap: (MemoryBackend) -> W,
                                   ready: (W, RelayEngine) -> Void = { _, _ in }) async throws
        -> (h: RelayHarness, wk: W, engine: RelayEngine, order: Message, copy: MessageMapping) {
        let routes = [Route(from: try RouteEndpoint(parsing: "rc:group:*"), to: try RouteEndpoint(parsing: "wk:group:*"))]
        let h = try RelayHarness(routes: routes, rcClock: rcClock)
        let wk = wrap(h.wk)
        let engine = RelayEngine(store: h.store, backends: [wk, h.rc], routes: h.routes, retry: RetryPolicy(baseMs: 5, maxMs: 50))
        ready(wk, engine)
        try await engine.start(feeding: [h.rc])
        let order = try await h.rcMemory.send(OutgoingMessage(conversation: g1, sender: "shop", content: .text("order"), expansion: expansion))
        var mapping: MessageMapping?
        #expect(try await eventually {
            mapping = try h.store.read { try $0.mapped(order.id, from: "rc", to: "wk") }
            return mapping != nil
        })
        let copy = try #require(mapping)
        #expect(await engine.waitUntilIdle())
        return (h, wk, engine, order, copy)
    }

    @Test func concurrentChangesOnBothSidesConverge() async throws {
        let h = try RelayHarness()
        let engine = h.engine()
        try await engine.start(feeding: [h.wk, h.rc])
        defer { Task { _ = await engine.stop() } }
        let ids = try await order(h)
        for round in 1...20 {
            let change: ExpansionChange = round % 3 == 0 ? .remove(["status"]) : .set(["status": "wk-\(round)"])
            async let a = h.wk.updateExpansion(of: ids.wk, in: g1, by: "buyer", change)
            async let b = h.rcMemory.updateExpansion(of: ids.rc, in: g1, by: "carol", .set(["status": "rc-\(round)"]))
            _ = try await (a, b)
            let values = try #require(try await settled(h, ids), "round \(round)")
            let record = try #require(try h.store.read { try $0.expansionKeys(of: ids.wk, on: "wk") }["status"])
            #expect(values["status"] == record.value, "round \(round): \(values) vs \(record)")
        }
        #expect(try h.store.read { try $0.count(state: .dead) } == 0)
    }

    @Test func staleChangesAndLateUpdatesAreNotApplied() async throws {
        let h = try RelayHarness()
        let engine = h.engine()
        try await engine.start(feeding: [h.wk, h.rc])
        defer { Task { _ = await engine.stop() } }
        let ids = try await order(h)
        _ = try await h.rcMemory.updateExpansion(of: ids.rc, in: g1, by: "carol", .set(["status": "paid"]))
        #expect(try await settled(h, ids) == ["status": "paid"])
        let converged = try #require(try h.store.read { try $0.expansionKeys(of: ids.rc, on: "rc") }["status"])

        // A change older than what the bridge holds (as a redelivered or late vendor event would be).
        let stale = IMEvent(eventID: "stale-1", backend: "rc",
                            kind: .expansionChanged(messageID: ids.rc, conversation: g1, by: "carol",
                                                    delta: ExpansionDelta(version: converged.version - 60_000, set: ["status": "old"])))
        _ = try engine.ingest([stale])
        #expect(await engine.waitUntilIdle())
        #expect(try await h.wk.expansion(of: ids.wk, in: g1).values == ["status": "paid"], "the stale value is not written")
        #expect(try h.store.read { try $0.expansionKeys(of: ids.wk, on: "wk") }["status"]?.value == "paid")

        // A removal, then an update older than it: the key stays removed on both sides.
        _ = try await h.rcMemory.updateExpansion(of: ids.rc, in: g1, by: "carol", .remove(["status"]))
        #expect(try await settled(h, ids) == [:])
        let removal = try #require(try h.store.read { try $0.expansionKeys(of: ids.rc, on: "rc") }["status"])
        #expect(removal.value == nil && removal.isDecided)
        let late = IMEvent(eventID: "late-1", backend: "rc",
                           kind: .expansionChanged(messageID: ids.rc, conversation: g1, by: "carol",
                                                   delta: ExpansionDelta(version: removal.version - 1, set: ["status": "shipped"])))
        _ = try engine.ingest([late])
        #expect(await engine.waitUntilIdle())
        #expect(try await h.wk.expansion(of: ids.wk, in: g1).values == [:], "a late update does not resurrect a removed key")
        #expect(try h.store.read { try $0.count(state: .dead) } == 0)
    }

    /// RongCloud → WuKong (one way): a key set on RongCloud after the message went out; its write to the
    /// WuKong copy is under way (the plan marked it written) when the copy's first read after a restart
    /// comes — WuKong gives that read as the message's whole state, a clear, newer than the change. The
    /// copy never held the key, so its absence is no removal: the write goes out and both sides end equal.
    /// WuKong → RongCloud: two reads of WuKong's extras, the first served before a key was set and recorded
    /// after the second (a catch-up's read beside a callback's sync; seed 293). The first, the message's
    /// whole state after a start, does not hold the key; ordered by when it was recorded it removed the
    /// key for good. Ordered by when each read was asked for (`expansionVersionIsReadTime`), the newer read
    /// keeps it.
    @Test func aReadServedBeforeAnotherButRecordedAfterItDoesNotUndoIt() async throws {
        let h = try RelayHarness()
        let engine = h.engine()
        try await engine.start(feeding: [h.rc])
        defer { Task { _ = await engine.stop() } }
        let order = try await h.wk.send(OutgoingMessage(conversation: g1, sender: "shop", content: .text("order"), expansion: ["n": "9"]))
        _ = try engine.ingest([IMEvent(eventID: EventID("msg:\(order.id)"), backend: "wk", kind: .message(order))])
        var copy: MessageID?
        #expect(try await eventually {
            copy = try h.store.read { try $0.mapped(order.id, from: "wk", to: "rc") }?.toMessage
            return copy != nil
        })
        #expect(await engine.waitUntilIdle())
        let asked = Int64(Date().timeIntervalSince1970 * 1000)
        func change(_ id: String, _ delta: ExpansionDelta) -> IMEvent {
            IMEvent(eventID: EventID(id), backend: "wk", kind: .expansionChanged(messageID: order.id, conversation: g1, by: "shop", delta: delta))
        }
        // The newer read (asked for second) is recorded first; the older one, the whole state, after it.
        _ = try engine.ingest([change("exp:\(order.id):7", ExpansionDelta(version: asked + 20, set: ["pri": "v11"]))])
        try await Task.sleep(nanoseconds: 50_000_000)
        _ = try engine.ingest([change("exp:\(order.id):5", ExpansionDelta(version: asked, set: ["n": "9"], cleared: true))])
        #expect(await engine.waitUntilIdle())
        let copyID = try #require(copy)
        var last: [String: String] = [:]
        let converged = try await eventually(30) {
            last = try await h.rcMemory.expansion(of: copyID, in: g1).values
            return last == ["n": "9", "pri": "v11"]
        }
        #expect(converged, "the copy holds \(last)")
        #expect(try h.store.read { try $0.expansionKeys(of: order.id, on: "wk") }["pri"]?.value == "v11")
    }

    @Test func aCopysWholeStateDoesNotRemoveAKeyItsWriteHasNotReached() async throws {
        let (h, stalling, engine, order, mapping) = try await oneWayOrder(expansion: ["n": "42"], wrap: StallingExpansions.init)
        defer { Task { _ = await engine.stop() } }
        let copyID = mapping.toMessage
        #expect(try await h.wk.expansion(of: copyID, in: g1).values == ["n": "42"])

        stalling.stalled.withLock { $0 = true }
        _ = try await h.rcMemory.updateExpansion(of: order.id, in: g1, by: "carol", .set(["st": "v46"]))
        #expect(await eventually(30) { stalling.refused.withLock { $0 } >= 1 }, "the write to the copy was tried")
        // The copy's first read after a restart: its whole state, which does not hold `st` yet.
        let whole = IMEvent(eventID: "wk-first-read", backend: "wk",
                            kind: .expansionChanged(messageID: copyID, conversation: g1, by: nil,
                                                    delta: ExpansionDelta(version: Int64(Date().timeIntervalSince1970 * 1000) + 60_000,
                                                                          set: ["n": "42"], cleared: true)))
        _ = try engine.ingest([whole])
        stalling.stalled.withLock { $0 = false }
        var last: [String: String] = [:]
        let converged = try await eventually(30) {
            last = try await h.wk.expansion(of: copyID, in: g1).values
            return last == ["n": "42", "st": "v46"]
        }
        #expect(converged, "the copy holds \(last)")
        #expect(try h.store.read { try $0.expansionKeys(of: order.id, on: "rc") }["st"]?.value == "v46")
        #expect(try h.store.read { try $0.count(state: .dead) } == 0)
    }

    /// RongCloud → WuKong (one way), the source's clock ten minutes behind the bridge's: the copy's first read
    /// back (WuKong's whole-state row, read by an instance that did not send it, stamped with the bridge's
    /// time) restates the values the copy was sent with. It is the echo of the bridge's
    /// own write, not a change made on WuKong: the source's next change, a removal stamped by its own clock,
    /// still reaches the copy — after a second whole-state read too (Finding 34, seeds 154 and 198,
    /// docs/reliability.md).
    @Test func aCopysReadBackOfItsInitialValuesDoesNotOutrankTheSourcesNextChange() async throws {
        let routes = [Route(from: try RouteEndpoint(parsing: "rc:group:*"), to: try RouteEndpoint(parsing: "wk:group:*"))]
        let h = try RelayHarness(routes: routes)
        // RongCloud stamps its changes ten minutes behind the bridge's clock.
        let rc = MemoryBackend(id: "rc", capabilities: .rongCloud, clock: TestClock(startMs: SystemClock().nowMs() - 600_000))
        let engine = RelayEngine(store: h.store, backends: [h.wk, rc], routes: h.routes, retry: RetryPolicy(baseMs: 5, maxMs: 50))
        try await engine.start(feeding: [rc])
        defer { Task { _ = await engine.stop() } }
        let order = try await rc.send(OutgoingMessage(conversation: g1, sender: "shop", content: .text("order"), expansion: ["n": "42"]))
        var mapping: MessageMapping?
        #expect(try await eventually {
            mapping = try h.store.read { try $0.mapped(order.id, from: "rc", to: "wk") }
            return mapping != nil
        })
        // The copy's group is the one the route's portal made on WuKong.
        let (copyID, copyGroup) = try #require(mapping.map { ($0.toMessage, $0.toConversation) })
        #expect(await engine.waitUntilIdle())
        #expect(try await h.wk.expansion(of: copyID, in: copyGroup).values == ["n": "42"])

        // WuKong gives no change time: the read is stamped when the bridge takes it in.
        let readBack = IMEvent(eventID: "wk-read-back", backend: "wk",
                               kind: .expansionChanged(messageID: copyID, conversation: copyGroup, by: nil,
                                                       delta: ExpansionDelta(version: 0, set: ["n": "42"], cleared: true)))
        _ = try engine.ingest([readBack])
        #expect(await engine.waitUntilIdle())
        // And again, as the first read after a restart gives the whole state once more (seed 198).
        var again = readBack
        again.eventID = "wk-read-back-after-restart"
        _ = try engine.ingest([again])
        #expect(await engine.waitUntilIdle())
        _ = try await rc.updateExpansion(of: order.id, in: g1, by: "carol", .remove(["n"]))
        var last: [String: String] = ["n": "42"]
        let removed = try await eventually(30) {
            last = try await h.wk.expansion(of: copyID, in: copyGroup).values
            return last.isEmpty
        }
        #expect(removed, "the source's removal reached the copy: it holds \(last)")
        #expect(try h.store.read { try $0.expansionKeys(of: order.id, on: "rc") }["n"].map { $0.value == nil && $0.origin == "rc" } == true)
        #expect(try h.store.read { try $0.count(state: .dead) } == 0)
    }

    /// RongCloud → WuKong, RongCloud's clock five minutes behind the bridge's. The copy's first extras read,
    /// showing the expansion the bridge sent it with, is taken in before the send returns (a sync racing
    /// the send, on this instance or another; seed 289). It is the echo of the bridge's write, no change
    /// made on WuKong: versioned by the bridge's clock it outranked the source's later removal of the key,
    /// stamped by RongCloud's clock, and the copy kept the key. Read as a change (`cleared` false) or as the
    /// message's whole state (`cleared` true, WuKong's first read after a start).
    @Test(arguments: [false, true])
    func theCopysEchoTakenInBeforeTheSendReturnsIsNoChange(cleared: Bool) async throws {
        let (h, _, engine, order, copy) = try await oneWayOrder(expansion: ["down": "d0", "n": "1"], rcClock: ClockBehind(ms: 300_000),
                                                                wrap: EchoBeforeTheSendReturns.init) { wk, engine in
            wk.sent.withLock {
                $0 = { copy in
                    let read = ExpansionDelta(version: SystemClock().nowMs(), set: copy.expansion?.values ?? [:], cleared: cleared)
                    _ = try engine.ingest([IMEvent(eventID: EventID("exp:\(copy.id):1"), backend: "wk",
                                                  kind: .expansionChanged(messageID: copy.id, conversation: copy.conversation, by: "wk_shop", delta: read))])
                }
            }
        }
        defer { Task { _ = await engine.stop() } }
        #expect(try await h.wk.expansion(of: copy.toMessage, in: copy.toConversation).values == ["down": "d0", "n": "1"])

        _ = try await h.rcMemory.updateExpansion(of: order.id, in: g1, by: "shop", .remove(["n"]))
        var last: [String: String] = [:]
        let removed = try await eventually(30) {
            last = try await h.wk.expansion(of: copy.toMessage, in: copy.toConversation).values
            return last == ["down": "d0"]
        }
        #expect(removed, "the copy holds \(last)")
        let record = try h.store.read { try $0.expansionKeys(of: order.id, on: "rc") }["n"]
        #expect(record?.isDecided == true && record?.value == nil && record?.origin == "rc", "\(String(describing: record))")
        #expect(try h.store.read { try $0.count(state: .dead) } == 0)
    }

    /// A change delivered late (older than one taken in after it) wins at first over values the message
    /// was sent with, which the bridge keeps without a version; its write to the copy is planned and on
    /// its way when the newer change comes in. The copy still shows the newer change's value, but the write
    /// under way is about to overwrite it: the newer change must queue a write of its own (seed 599: two
    /// RongCloud callbacks made while the bridge was down, delivered after the catch-up had relayed the
    /// message, left the NIM copy at the older value).
    @Test func aNewerChangeTakenInWhileAnOlderOnesWriteIsUnderWayStillReachesTheCopy() async throws {
        let (h, holding, engine, order, mapping) = try await oneWayOrder(expansion: ["pri": "v45"], wrap: HoldingExpansions.init)
        defer { Task { _ = await engine.stop() } }
        let (copyID, copyGroup) = (mapping.toMessage, mapping.toConversation)
        #expect(try await h.wk.expansion(of: copyID, in: copyGroup).values == ["pri": "v45"])

        holding.held.withLock { $0 = true }
        holding.entered.withLock { $0 = 0 }
        let now = Int64(Date().timeIntervalSince1970 * 1000)
        func change(_ id: String, _ value: String, at version: Int64) -> IMEvent {
            IMEvent(eventID: EventID(id), backend: "rc",
                    kind: .expansionChanged(messageID: order.id, conversation: g1, by: "carol", delta: ExpansionDelta(version: version, set: ["pri": value])))
        }
        _ = try engine.ingest([change("exp:older", "v44", at: now - 200)])
        #expect(await eventually(30) { holding.entered.withLock { $0 } >= 1 }, "the older change's write is under way")
        _ = try engine.ingest([change("exp:newer", "v45", at: now - 100)])
        holding.held.withLock { $0 = false }
        #expect(await engine.waitUntilIdle())
        var last: [String: String] = [:]
        let converged = try await eventually(30) {
            last = try await h.wk.expansion(of: copyID, in: copyGroup).values
            return last == ["pri": "v45"]
        }
        #expect(converged, "the copy holds \(last)")
        #expect(holding.entered.withLock { $0 } == 2, "the older value was written, then the newer one")
        #expect(try h.store.read { try $0.expansionKeys(of: order.id, on: "rc") }["pri"]?.value == "v45")
        #expect(try h.store.read { try $0.count(state: .dead) } == 0)
    }

    /// RongCloud → WuKong: a whole state of the WuKong copy read after the source's change but before the
    /// bridge's write of it reached the copy, and recorded after the write (one instance asked for it,
    /// another wrote; seed 597). The read does not show the change, and it is newer than the change, but
    /// older than what the copy is known to hold: it neither removes the new key nor restates the older
    /// value — whether the write's echo was taken in first (the seed) or not.
    @Test(arguments: [true, false])
    func aWholeStateReadBeforeTheBridgesWriteDoesNotUndoIt(echoFirst: Bool) async throws {
        let (h, holding, engine, order, mapping) = try await oneWayOrder(expansion: ["n": "83", "pri": "v88"], wrap: HoldingExpansions.init)
        defer { Task { _ = await engine.stop() } }
        let (copyID, copyGroup) = (mapping.toMessage, mapping.toConversation)
        holding.held.withLock { $0 = true }
        holding.entered.withLock { $0 = 0 }
        _ = try await h.rcMemory.updateExpansion(of: order.id, in: g1, by: "carol", .set(["pri": "v89", "st": "new"]))
        #expect(await eventually(30) { holding.entered.withLock { $0 } >= 1 }, "the change's write is under way")
        // The copy's whole state is asked for now: after the change, before its write reaches the copy.
        try await Task.sleep(nanoseconds: 20_000_000)
        let asked = Int64(Date().timeIntervalSince1970 * 1000)
        try await Task.sleep(nanoseconds: 20_000_000)
        holding.held.withLock { $0 = false }
        #expect(try await eventually { try await h.wk.expansion(of: copyID, in: copyGroup).values == ["n": "83", "pri": "v89", "st": "new"] })
        #expect(await engine.waitUntilIdle())
        func copyEvent(_ id: String, _ delta: ExpansionDelta) -> IMEvent {
            IMEvent(eventID: EventID(id), backend: "wk", kind: .expansionChanged(messageID: copyID, conversation: copyGroup, by: nil, delta: delta))
        }
        if echoFirst {
            let echoAt = Int64(Date().timeIntervalSince1970 * 1000)
            _ = try engine.ingest([copyEvent("wk-echo", ExpansionDelta(version: echoAt, set: ["pri": "v89", "st": "new"]))])
            #expect(await engine.waitUntilIdle())
        }
        _ = try engine.ingest([copyEvent("wk-stale-read", ExpansionDelta(version: asked, set: ["n": "83", "pri": "v88"], cleared: true))])
        #expect(await engine.waitUntilIdle())
        try await Task.sleep(nanoseconds: 100_000_000)
        #expect(await engine.waitUntilIdle())
        #expect(try await h.wk.expansion(of: copyID, in: copyGroup).values == ["n": "83", "pri": "v89", "st": "new"])
        #expect(try await h.rcMemory.expansion(of: order.id, in: g1).values == ["n": "83", "pri": "v89", "st": "new"])
        let records = try h.store.read { try $0.expansionKeys(of: order.id, on: "rc") }
        #expect(records["pri"]?.value == "v89" && records["st"]?.value == "new", "\(records)")
        #expect(try h.store.read { try $0.count(state: .dead) } == 0)
    }

    /// WuKong → RongCloud (both ways), the copy's callbacks late: the source changes a key twice, and the
    /// echo of the bridge's first write reaches it only after the second write was planned and made. The
    /// echo carries RongCloud's time of that write — later than the source's second change — and is the
    /// bridge's own value: no change of the copy. Taken for one, it won, was written back over the source,
    /// and the copy was left to hold it at the next write (seed 946: the echoes of three quick changes
    /// each came after the next write, and the copy ended at the second value).
    @Test(arguments: [false, true])
    func anEchoArrivingAfterTheNextWriteIsNoChange(echoesInOrder: Bool) async throws {
        let h = try RelayHarness()
        let engine = h.engine()
        try await engine.start(feeding: [h.wk])   // the copy's events only as this test hands them in
        defer { Task { _ = await engine.stop() } }
        let ids = try await order(h)
        #expect(await engine.waitUntilIdle())
        for value in ["v2", "v3"] {
            _ = try await h.wk.updateExpansion(of: ids.wk, in: g1, by: "buyer", .set(["status": value]))
            #expect(try await eventually(30) { try await h.rcMemory.expansion(of: ids.rc, in: g1).values == ["status": value] })
            #expect(await engine.waitUntilIdle())
        }
        // The copy's echoes of the two writes, stamped as RongCloud stamps them: after the source's changes.
        let now = Int64(Date().timeIntervalSince1970 * 1000)
        func echo(_ value: String, at version: Int64) -> IMEvent {
            IMEvent(eventID: EventID("rc-echo-\(value)"), backend: "rc",
                    kind: .expansionChanged(messageID: ids.rc, conversation: g1, by: "wk_buyer", delta: ExpansionDelta(version: version, set: ["status": value])))
        }
        let echoes = [echo("v2", at: now + 1_000), echo("v3", at: now + 2_000)]
        for event in echoesInOrder ? echoes : echoes.reversed() {
            _ = try engine.ingest([event])
            #expect(await engine.waitUntilIdle())
        }
        try await Task.sleep(nanoseconds: 100_000_000)
        #expect(await engine.waitUntilIdle())
        #expect(try await h.wk.expansion(of: ids.wk, in: g1).values == ["status": "v3"], "the source keeps its last change")
        #expect(try await h.rcMemory.expansion(of: ids.rc, in: g1).values == ["status": "v3"], "the copy holds the source's last change")
        let records = (try h.store.read { try $0.expansionKeys(of: ids.wk, on: "wk") }["status"],
                       try h.store.read { try $0.expansionKeys(of: ids.rc, on: "rc") }["status"])
        #expect(records.0?.value == "v3" && records.0?.origin == "wk", "\(String(describing: records.0))")
        #expect(records.1?.value == "v3" && records.1?.written == .unknown && records.1?.earlierWrites.contains("v2") == false, "\(String(describing: records.1))")
        #expect(try h.store.read { try $0.count(state: .dead) } == 0)
    }

    /// On a route both ways, a change the source attributes to the bridge's own puppet (WuKong's sync names
    /// the CMD's sender, and that CMD may be the bridge's own write) is written to the copy as the user the
    /// puppet stands for, not as a puppet of the puppet, a name that would gain a prefix on each round trip
    /// until the vendor refuses it.
    @Test func aChangeAttributedToAPuppetIsWrittenAsItsUser() async throws {
        let h = try RelayHarness(routes: [Route(from: try RouteEndpoint(parsing: "wk:group:*"), to: try RouteEndpoint(parsing: "rc:group:*"),
                                                direction: .both)])
        let engine = h.engine()
        try await engine.start(feeding: [h.wk, h.rc])
        defer { Task { _ = await engine.stop() } }
        let ids = try await order(h)
        #expect(await engine.waitUntilIdle())
        let onRC = h.rcMemory.events()
        let writer = Task { () -> UserID? in
            for await event in onRC {
                if case .expansionChanged(let id, _, let by?, let delta) = event.kind, id == ids.rc, delta.set["status"] == "paid" { return by }
            }
            return nil
        }
        _ = try await h.wk.updateExpansion(of: ids.wk, in: g1, by: "rc_carol", .set(["status": "paid"]))
        #expect(try await eventually(30) { try await h.rcMemory.expansion(of: ids.rc, in: g1).values == ["status": "paid"] })
        #expect(await writer.value == "carol")
        #expect(await engine.waitUntilIdle())
        #expect(try await h.wk.expansion(of: ids.wk, in: g1).values == ["status": "paid"])
        #expect(try h.store.read { try $0.count(state: .dead) } == 0)
    }

    @Test func aValueOverTheTargetLimitIsDeadLetteredAtIntake() async throws {
        let h = try RelayHarness()
        let engine = h.engine()
        let big = String(repeating: "长", count: 4097)
        let event = IMEvent(eventID: "big-1", backend: "wk",
                            kind: .expansionChanged(messageID: "m1", conversation: g1, by: "buyer",
                                                    delta: ExpansionDelta(version: 1, set: ["note": big, "status": "ok"])))
        let result = try engine.ingest([event])
        #expect(result.queued == 1)
        let dead = try h.store.read { try $0.deadLetters(limit: 10) }
        #expect(dead.count == 1 && dead.first?.kind == "expansion")
        let reason = try #require(dead.first?.lastError)
        #expect(reason.contains("value_length") && reason.contains("'note'") && reason.contains("4097") && reason.contains("4096"), "\(reason)")
        #expect(try h.store.read { try $0.count(state: .pending) } == 0, "nothing of the change is written")
    }
}

/// Toward a vendor without expansions (JMessage) a change stays the route's fallback: a text notice.
@Suite struct ExpansionTowardJMessageTests {
    @Test func aChangeBecomesANotice() async throws {
        let wk = MemoryBackend(id: "wk", capabilities: .wukong, clock: SystemClock())
        let jm = MemoryBackend(id: "jm", capabilities: .jMessage, clock: SystemClock())
        jm.world.seedGroup(GroupProfile(id: "g1", owner: "wk_shop"))  // JMessage relays into a group that exists
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("relay-\(UUID().uuidString).sqlite").path
        let engine = RelayEngine(store: try BridgeStore(path: path), backends: [wk, jm],
                                 routes: [Route(from: try RouteEndpoint(parsing: "wk:group:*"), to: try RouteEndpoint(parsing: "jm:group:*"))],
                                 retry: RetryPolicy(baseMs: 5, maxMs: 50))
        try await engine.start(feeding: [wk, jm])
        defer { Task { _ = await engine.stop() } }
        let g1 = ConversationRef.group("g1")
        let order = try await wk.send(OutgoingMessage(conversation: g1, sender: "shop", content: .text("order"), expansion: ["status": "new"]))
        func digests() async throws -> [String] {
            try await jm.history(HistoryQuery(conversation: g1, anchor: .latest, limit: 100)).messages.map(\.content.digest)
        }
        #expect(try await eventually { try await digests().count == 1 })
        _ = try await wk.updateExpansion(of: order.id, in: g1, by: "buyer", .set(["status": "paid"]))
        var seen: [String] = []
        #expect(try await eventually {
            seen = try await digests()
            return seen.contains { $0.contains("status → paid") }
        }, "\(seen)")
    }
}

/// The key encoding for keys a target refuses (docs/mappings.md, "Expansion keys across vendors").
@Suite struct ExpansionKeyCodecTests {
    @Test func refusedKeysRoundTripAndLegalKeysStay() throws {
        let limits = ExpansionLimits.rongCloud
        for key in ["status", "A-b_c+=9"] { #expect(ExpansionKeyCodec.encode(key, for: limits) == key) }
        let chinese = ExpansionKeyCodec.encode("订单状态", for: limits)
        #expect(chinese.hasPrefix("=") && !chinese.hasPrefix("==") && limits.isValidKey(chinese) && chinese.count <= 32)
        #expect(ExpansionKeyCodec.decode(chinese, for: limits, known: []) == "订单状态", "the short form needs no table")
        let long = String(repeating: "k", count: 40)
        let hashed = ExpansionKeyCodec.encode(long, for: limits)
        #expect(hashed.hasPrefix("==") && hashed.count == 32 && limits.isValidKey(hashed))
        #expect(ExpansionKeyCodec.decode(hashed, for: limits, known: ["status", long]) == long)
        #expect(ExpansionKeyCodec.decode(hashed, for: limits, known: ["status"]) == hashed, "unknown originals stay as they are")
        let marked = ExpansionKeyCodec.encode("=x", for: limits)
        #expect(marked != "=x" && ExpansionKeyCodec.decode(marked, for: limits, known: []) == "=x", "the marker itself is encoded")
        #expect(ExpansionKeyCodec.decode("=abc", for: limits, known: []) == "=abc", "a key that is no encoding is kept")
        #expect(ExpansionKeyCodec.encode("订单状态", for: nil) == "订单状态")
        let wukong = try #require(Capabilities.wukong.expansionLimits)
        #expect(ExpansionKeyCodec.encode("订单状态", for: wukong) == "订单状态" && ExpansionKeyCodec.encode(long, for: wukong) == long)
    }

    /// At the limits exactly: a legal key of the target's full length stays; a key whose short form is
    /// exactly the full length takes the short form (decoded from the key alone), one byte more the hashed one.
    @Test func keysAtTheLengthLimitTakeTheirForms() throws {
        let limits = ExpansionLimits.rongCloud
        let full = String(repeating: "k", count: limits.maxKeyLength)
        #expect(ExpansionKeyCodec.encode(full, for: limits) == full)
        let fits = "订单状态订单状ab"   // 23 UTF-8 bytes: "=" + 31 base64url characters = 32
        let short = ExpansionKeyCodec.encode(fits, for: limits)
        #expect(short.count == limits.maxKeyLength && short.hasPrefix("=") && !short.hasPrefix("=="), "\(short)")
        #expect(ExpansionKeyCodec.decode(short, for: limits, known: []) == fits)
        let over = ExpansionKeyCodec.encode(fits + "c", for: limits)
        #expect(over.hasPrefix("==") && over.count == limits.maxKeyLength)
    }
}

/// A WuKong-rules backend that, before a send returns, hands the new copy to `sent` (a test takes the
/// copy's first extras read in there, as a sync racing the send would).
final class EchoBeforeTheSendReturns: MemoryWrapping, ExpansionUpdating {
    let inner: MemoryBackend
    let sent = Mutex<(@Sendable (Message) throws -> Void)?>(nil)
    init(_ inner: MemoryBackend) { self.inner = inner }
    func send(_ message: OutgoingMessage) async throws -> Message {
        let created = try await inner.send(message)
        try sent.withLock { $0 }?(created)
        return created
    }
    func updateExpansion(of message: MessageID, in conversation: ConversationRef, by user: UserID,
                         _ change: ExpansionChange) async throws -> ExpansionDelta {
        try await inner.updateExpansion(of: message, in: conversation, by: user, change)
    }
    func expansion(of message: MessageID, in conversation: ConversationRef) async throws -> Expansion {
        try await inner.expansion(of: message, in: conversation)
    }
}

/// A WuKong-rules backend whose expansion writes are refused (retryably) while `stalled` says so: a write
/// under way when the bridge stops.
final class StallingExpansions: MemoryWrapping, ExpansionUpdating {
    let inner: MemoryBackend
    let stalled = Mutex(false)
    let refused = Mutex(0)
    init(_ inner: MemoryBackend) { self.inner = inner }
    func updateExpansion(of message: MessageID, in conversation: ConversationRef, by user: UserID,
                         _ change: ExpansionChange) async throws -> ExpansionDelta {
        if stalled.withLock({ $0 }) {
            refused.withLock { $0 += 1 }
            throw IMError(.unavailable, "try again", isRetryable: true)
        }
        return try await inner.updateExpansion(of: message, in: conversation, by: user, change)
    }
    func expansion(of message: MessageID, in conversation: ConversationRef) async throws -> Expansion {
        try await inner.expansion(of: message, in: conversation)
    }
}

/// A WuKong-rules backend whose expansion writes wait while `held` says so: a write planned and on its way.
final class HoldingExpansions: MemoryWrapping, ExpansionUpdating {
    let inner: MemoryBackend
    let held = Mutex(false)
    let entered = Mutex(0)
    init(_ inner: MemoryBackend) { self.inner = inner }
    func updateExpansion(of message: MessageID, in conversation: ConversationRef, by user: UserID,
                         _ change: ExpansionChange) async throws -> ExpansionDelta {
        entered.withLock { $0 += 1 }
        while held.withLock({ $0 }) { try await Task.sleep(nanoseconds: 5_000_000) }
        return try await inner.updateExpansion(of: message, in: conversation, by: user, change)
    }
    func expansion(of message: MessageID, in conversation: ConversationRef) async throws -> Expansion {
        try await inner.expansion(of: message, in: conversation)
    }
}
