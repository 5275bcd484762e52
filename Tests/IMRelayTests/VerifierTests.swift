import Foundation
import IMBridgeApp
import IMCore
@_spi(Testing) @testable import IMRelay
import IMStore
import IMTesting
import PostgresTestSupport
import Testing
@testable import IMOutbox
@_spi(Testing) @testable import IMVerify

/// `Verifier` over in-memory backends (WuKong and RongCloud rules) and a real SQLite store, for what the
/// end-to-end suite (Tests/EndToEndTests/VerifyEndToEndTests.swift) does not plant: copies shown in the
/// wrong order, a copy found without an id-map row, a copy still queued in the outbox, the time window,
/// the settle horizon and the repair's check against the intake; and `verify:` parsing.
@Suite struct VerifierTests {
    let h: RelayHarness
    let group = ConversationRef.group("g")

    init() throws { h = try RelayHarness() }

    /// The repair's guard on PostgreSQL, beside a `.send` the bridge queued before it (seed 194).
    @Test func onPostgresARepairDoesNotSendWhatTheBridgeQueued() async throws {
        let h = try RelayHarness(storeURL: try TestPostgres.freshURL("verify"))
        let taken = try await h.wk.send(OutgoingMessage(conversation: group, sender: "alice", content: .text("taken in meanwhile")))
        let verifier = Verifier(store: h.store, backends: [h.wk, h.rc], routes: h.routes)
        var report = try await verifier.run(VerifyScope(conversation: ("wk", group), settleMs: 0))
        #expect(report.conversations.first?.items.map(\.kind) == [.missing], "\(report.table)")
        let engine = h.engine()
        let event = IMEvent(eventID: EventID("msg:\(taken.id)"), backend: "wk", kind: .message(taken))
        #expect(try engine.ingest([event]).queued == 1)
        let lane = LaneKey(backend: "rc", conversation: group)
        #expect(try h.store.read { try $0.pendingSends(in: lane).map(\.source) } == [taken.id], "the bridge's `.send` reads back")
        try await verifier.repair(&report, retry: RetryPolicy(baseMs: 5, maxMs: 50), timeoutMs: 5_000)
        #expect(report.conversations.first?.items.first?.repair?.hasPrefix("not needed") == true, "\(report.table)")
    }

    /// Sends `text` on WuKong as alice; its copy on RongCloud (as the puppet) when `copy`, mapped when `map`.
    func relay(_ texts: [String], copyOrder: [Int]? = nil, map: Bool = true, harness: RelayHarness? = nil) async throws
        -> (sources: [Message], copies: [Message]) {
        let h = harness ?? self.h
        var sources: [Message] = []
        for text in texts { sources.append(try await h.wk.send(OutgoingMessage(conversation: group, sender: "alice", content: .text(text)))) }
        var copies = [Message?](repeating: nil, count: texts.count)
        for index in copyOrder ?? Array(texts.indices) {
            let copy = try await h.rcMemory.send(OutgoingMessage(conversation: group, sender: "wk_alice", content: .text(texts[index])))
            copies[index] = copy
            if map {
                try h.store.transaction { tx in
                    try tx.map(source: ("wk", sources[index].id, group), target: ("rc", copy.id, group), at: 1)
                }
            }
        }
        return (sources, copies.compactMap { $0 })
    }

    /// Judged at once (no settle horizon) unless `settle`.
    func verify(_ scope: VerifyScope = VerifyScope(), settle: Bool = false) async throws -> VerifyReport {
        var scope = scope
        scope.conversation = ("wk", group)
        if !settle { scope.settleMs = 0 }
        return try await Verifier(store: h.store, backends: [h.wk, h.rc], routes: h.routes).run(scope)
    }

    @Test func aCleanPairVerifiesClean() async throws {
        _ = try await relay(["one", "two", "three"])
        let report = try await verify()
        #expect(report.exitCode == 0 && report.driftCount == 0, "\(report.table)")
        #expect(report.conversations.map(\.sourceMessages) == [3] && report.conversations.first?.targetMessages == 3)
        #expect(report.readCalls["wk"] == 1 && report.readCalls["rc"] == 1, "one page a side: \(report.readCalls)")
        let verifier = Verifier(store: h.store, backends: [h.wk, h.rc], routes: h.routes)
        for _ in 1...2 {
            let again = try await verifier.run(VerifyScope(conversation: ("wk", group)))
            #expect(again.readCalls == ["wk": 1, "rc": 1], "each run counts its own calls (scheduled audits reuse a verifier)")
        }
    }

    @Test func copiesShownInTheOtherOrderAreOutOfOrder() async throws {
        let (sources, copies) = try await relay(["one", "two"], copyOrder: [1, 0])
        let report = try await verify()
        let items = report.conversations.flatMap(\.items)
        #expect(items.count == 1 && report.exitCode == 1, "\(report.table)")
        let item = try #require(items.first)
        #expect(item.kind == .outOfOrder && item.sourceMessage == sources[1].id.rawValue && item.targetMessage == copies[1].id.rawValue)
        #expect(item.fix.isEmpty && item.unfixable != nil, "a target keeps its order: nothing to queue")
    }

    @Test func aCopyWithoutAnIdMapRowIsFoundByContentAndAQueuedOneIsInFlight() async throws {
        _ = try await relay(["one", "two"], map: false)
        let third = try await h.wk.send(OutgoingMessage(conversation: group, sender: "alice", content: .text("three")))
        let payload = OutboxPayload(action: .send(outgoing: OutgoingMessage(conversation: group, sender: "wk_alice", content: .text("three")),
                                                  source: third.id, replyToSource: nil),
                                    route: h.routes[0], eventTimeMs: 1, sourceConversation: group)
        _ = try h.store.transaction { tx in
            try tx.enqueue(lane: LaneKey(backend: "rc", conversation: group), sourceBackend: "wk", sourceEventID: EventID("msg:\(third.id)"),
                           kind: "send", payload: try payload.encoded(), at: 1)
        }
        let report = try await verify()
        let conversation = try #require(report.conversations.first)
        #expect(report.exitCode == 0 && conversation.matchedByContent == 2 && conversation.inFlight == 1, "\(report.table)")
        // A fourth, neither copied nor queued, is missing, with no target id.
        let fourth = try await h.wk.send(OutgoingMessage(conversation: group, sender: "alice", content: .text("four")))
        let again = try await verify()
        let missing = try #require(again.conversations.first?.items.first)
        #expect(missing.kind == .missing && missing.sourceMessage == fourth.id.rawValue && missing.targetMessage == nil)
        #expect(missing.fix.count == 1 && again.exitCode == 1)
    }

    /// A target whose clock is ten minutes behind the source's stamps every copy ten minutes "before" its
    /// source message. A second copy is still doubled: the time guard moves by the offset the mapped copies
    /// show (Finding 53, docs/reliability.md). It used to ask for a copy stored after the source message
    /// (less 5 s) and saw none.
    @Test func aDoubleOnATargetWhoseClockIsBehindIsDoubled() async throws {
        let h = try RelayHarness(rcClock: ClockBehind(ms: 600_000))
        let (sources, copies) = try await relay(["one", "two"], harness: h)
        let double = try await h.rcMemory.send(OutgoingMessage(conversation: group, sender: "wk_alice", content: .text("two")))
        #expect(double.sentAt < sources[1].sentAt - 60_000, "the target stamps its own, earlier time")
        let report = try await Verifier(store: h.store, backends: [h.wk, h.rc], routes: h.routes)
            .run(VerifyScope(conversation: ("wk", group), settleMs: 0))
        let items = report.conversations.flatMap(\.items)
        #expect(items.map(\.kind) == [.doubled], "\(report.table)")
        #expect(items.first?.sourceMessage == sources[1].id.rawValue && items.first?.targetMessage == double.id.rawValue, "\(report.table)")
        #expect(copies.count == 2)
    }

    /// The same target, verified over a window (`--since`): the copies lie ten minutes before the window
    /// by the target's stamps. They are read all the same (the read moves back by the lag the copies it
    /// meets show), so nothing is called missing — a repair would send every message again — and the
    /// double is still found (Finding 54, docs/reliability.md).
    @Test func aWindowOnATargetWhoseClockIsBehindReadsTheCopies() async throws {
        let h = try RelayHarness(rcClock: ClockBehind(ms: 600_000))
        let (sources, _) = try await relay(["one", "two", "three"], harness: h)
        let double = try await h.rcMemory.send(OutgoingMessage(conversation: group, sender: "wk_alice", content: .text("two")))
        let report = try await Verifier(store: h.store, backends: [h.wk, h.rc], routes: h.routes)
            .run(VerifyScope(conversation: ("wk", group), sinceMs: sources[0].sentAt - 1_000, settleMs: 0))
        let items = report.conversations.flatMap(\.items)
        #expect(items.map(\.kind) == [.doubled], "\(report.table)")
        #expect(items.first?.targetMessage == double.id.rawValue, "\(report.table)")
        #expect(report.conversations.first?.targetMessages == 4, "\(report.table)")
    }

    /// A change queued for a message the bridge has neither copied nor queued (its expansion came before
    /// it: the entry waits for the message) does not make the message in flight: with the message after it
    /// missing too, both are missing and repaired in the source's order — not the later one alone, ahead of
    /// the earlier in the lane (seed 173, docs/reliability.md).
    @Test func aChangeWaitingForItsMessageDoesNotPutTheMessageInFlight() async throws {
        _ = try await relay(["one"])
        let second = try await h.wk.send(OutgoingMessage(conversation: group, sender: "alice", content: .text("two"), expansion: ["n": "2"]))
        let third = try await h.wk.send(OutgoingMessage(conversation: group, sender: "alice", content: .text("three")))
        let payload = OutboxPayload(action: .expansion(source: second.id, by: "alice", delta: ExpansionDelta(version: 5, set: ["n": "3"])),
                                    route: h.routes[0], eventTimeMs: 1, sourceConversation: group)
        _ = try h.store.transaction { tx in
            try tx.enqueue(lane: LaneKey(backend: "rc", conversation: group), sourceBackend: "wk", sourceEventID: EventID("exp:\(second.id):5"),
                           kind: "expansion", payload: try payload.encoded(), at: 1)
        }
        let report = try await verify()
        let conversation = try #require(report.conversations.first)
        #expect(conversation.inFlight == 0, "\(report.table)")
        let missing = conversation.items.filter { $0.kind == .missing }.map(\.sourceMessage)
        #expect(missing == [second.id.rawValue, third.id.rawValue], "both are missing, in the source's order: \(report.table)")
    }

    /// A missing copy the bridge makes after the repair's guard let its `.send` through (the bridge held the
    /// lane, so the repair's entry waited behind it) is not sent a second time: the send checks the id map
    /// again when it runs, and the report says the bridge relayed it (seed 194, docs/reliability.md).
    @Test func aCopyTheBridgeMakesAfterTheGuardIsNotSentAgainByTheRepair() async throws {
        let message = try await h.wk.send(OutgoingMessage(conversation: group, sender: "alice", content: .text("late")))
        let verifier = Verifier(store: h.store, backends: [h.wk, h.rc], routes: h.routes)
        let found = try await verifier.run(VerifyScope(conversation: ("wk", group), settleMs: 0))
        #expect(found.conversations.first?.items.map(\.kind) == [.missing], "\(found.table)")
        let lane = LaneKey(backend: "rc", conversation: group)
        let now = SystemClock().nowMs()
        #expect(try h.store.transaction { try $0.takeLease(lane.leaseName, owner: "bridge-1", ttlMs: 60_000, now: now) != nil })
        let repair = Task { [verifier] in
            var report = found
            try await verifier.repair(&report, retry: RetryPolicy(baseMs: 5, maxMs: 50), timeoutMs: 20_000)
            return report
        }
        // The guard has let the send through once the entry is queued; the bridge then copies the message.
        let deadline = Date().addingTimeInterval(10)
        while try h.store.read({ try $0.pendingEntries(of: lane, limit: 10) }).isEmpty, Date() < deadline {
            try await Task.sleep(nanoseconds: 10_000_000)
        }
        #expect(try h.store.read { try $0.pendingEntries(of: lane, limit: 10) }.count == 1, "the repair queued its send")
        let copy = try await h.rcMemory.send(OutgoingMessage(conversation: group, sender: "wk_alice", content: .text("late")))
        try h.store.transaction { tx in
            try tx.map(source: ("wk", message.id, group), target: ("rc", copy.id, group), at: SystemClock().nowMs())
            try tx.releaseLease(lane.leaseName, owner: "bridge-1")
        }
        let report = try await repair.value
        #expect(report.conversations.first?.items.first?.repair == "not needed: the bridge relayed it meanwhile as \(copy.id)", "\(report.table)")
        let copies = try await h.rcMemory.history(HistoryQuery(conversation: group, limit: 10)).messages
        #expect(copies.map(\.id) == [copy.id], "one copy, the bridge's: \(copies.map(\.id))")
        let after = try await verifier.run(VerifyScope(conversation: ("wk", group), settleMs: 0))
        #expect(after.exitCode == 0, "\(after.table)")
    }

    @Test func theWindowLeavesOlderMessagesOut() async throws {
        _ = try await relay(["one"])
        try await Task.sleep(nanoseconds: 20_000_000)
        let since = SystemClock().nowMs()
        _ = try await h.wk.send(OutgoingMessage(conversation: group, sender: "alice", content: .text("late, never copied")))
        let report = try await verify(VerifyScope(sinceMs: since))
        #expect(report.conversations.first?.sourceMessages == 1 && report.conversations.first?.items.first?.kind == .missing,
                "only the message in the window: \(report.table)")
        let before = try await verify(VerifyScope(untilMs: since - 1))
        #expect(before.exitCode == 0 && before.conversations.first?.sourceMessages == 1, "\(before.table)")
    }

    @Test func scheduledAuditSettings() throws {
        #expect(try BridgeConfig.parse(CatchUpTests.config("")).verify == VerifySettings(), "off by default")
        #expect(VerifySettings().intervalMs == nil)
        let set = try BridgeConfig.parse(CatchUpTests.config("verify:\n  interval: 6h\n  window: 2d\n")).verify
        #expect(set == VerifySettings(intervalMs: 6 * 3_600_000, windowMs: 2 * 86_400_000))
        for (yaml, expected) in [("verify:\n  interval: 5s\n", "verify.interval"), ("verify:\n  window: soon\n", "verify.window"),
                                 ("verify:\n  every: 1h\n", "every")] {
            do {
                _ = try BridgeConfig.parse(CatchUpTests.config(yaml))
                Issue.record("accepted \(yaml)")
            } catch let error as IMError {
                #expect(error.message.contains(expected), "\(yaml): \(error.message)")
            }
        }
    }

    /// An edit that did not reach a target that edits (WuKong rules on both sides): reported as content drift,
    /// repaired with the relay's `.edit` through the outbox (this process working the lane as a guest),
    /// after which the comparison is clean.
    @Test func anEditNotAppliedIsRepairedWithAnEdit() async throws {
        let target = MemoryBackend(id: "wk2", capabilities: .wukong, clock: SystemClock())
        let routes = [Route(from: try RouteEndpoint(parsing: "wk:group:*"), to: try RouteEndpoint(parsing: "wk2:group:*"))]
        let original = try await h.wk.send(OutgoingMessage(conversation: group, sender: "alice", content: .text("draft")))
        let copy = try await target.send(OutgoingMessage(conversation: group, sender: "wk_alice", content: .text("draft")))
        try h.store.transaction { tx in try tx.map(source: ("wk", original.id, group), target: ("wk2", copy.id, group), at: 1) }
        try await h.wk.edit(original.id, in: group, by: "alice", content: .text("final"))

        let verifier = Verifier(store: h.store, backends: [h.wk, target], routes: routes)
        var report = try await verifier.run(VerifyScope(conversation: ("wk", group), settleMs: 0))
        let item = try #require(report.conversations.first?.items.first)
        #expect(item.kind == .content && item.sourceMessage == original.id.rawValue && item.targetMessage == copy.id.rawValue, "\(report.table)")
        #expect(item.fix == [.edit(source: original.id, by: "wk_alice", content: .text("final"))])
        try await verifier.repair(&report, retry: RetryPolicy(baseMs: 5, maxMs: 50), timeoutMs: 20_000)
        #expect(report.conversations.first?.items.first?.repair == "repaired", "\(report.table)")
        let edited = try await target.history(HistoryQuery(conversation: group, limit: 10)).messages.first { $0.id == copy.id }
        #expect(edited?.currentContent == .text("final"))
        let after = try await verifier.run(VerifyScope(conversation: ("wk", group)))
        #expect(after.exitCode == 0, "\(after.table)")
        #expect(try h.store.read { try $0.count(state: .done) } == 1, "one outbox entry carried it out")
    }

    /// A target that cannot edit (RongCloud rules): a copy sent after the message's first edit (from history,
    /// showing it) whose later edit was relayed as a notice is current for its readers, not content drift —
    /// and `--repair` neither recalls nor resends it. Before the notice is there (the later edit lost, or
    /// not relayed yet and not queued) the same copy is content drift, repaired by recall and resend.
    @Test func aCopySentAfterAnEditWhoseLaterEditCameAsANoticeIsNotDrift() async throws {
        let original = try await h.wk.send(OutgoingMessage(conversation: group, sender: "alice", content: .text("v0")))
        try await h.wk.edit(original.id, in: group, by: "alice", content: .text("v1"))
        let copy = try await h.rcMemory.send(OutgoingMessage(conversation: group, sender: "wk_alice", content: .text("v1")))
        try h.store.transaction { tx in try tx.map(source: ("wk", original.id, group), target: ("rc", copy.id, group), at: 1) }
        try await h.wk.edit(original.id, in: group, by: "alice", content: .text("v2"))
        // A notice of the latest edit quoting another message vouches for nothing.
        let other = try await h.rcMemory.send(OutgoingMessage(conversation: group, sender: "carol", content: .text("unrelated")))
        _ = try await h.rcMemory.send(OutgoingMessage(conversation: group, sender: "wk_alice", content: .notice(NoticeContent(text: "✎ v2")),
                                                      reply: ReplyRef(messageID: other.id, sender: "carol", digest: "unrelated")))

        let lost = try await verify()
        let item = try #require(lost.conversations.first?.items.first)
        #expect(lost.conversations.first?.items.count == 1 && item.kind == .content && item.targetMessage == copy.id.rawValue, "\(lost.table)")
        #expect(item.fix.first == .recall(source: original.id, by: "wk_alice"), "no notice of v2 for this copy: \(lost.table)")

        // The relay carries the later edit out: a notice replying to the copy (RongCloud cannot edit).
        let engine = h.engine()
        let edited = IMEvent(eventID: EventID("edit:\(original.id):2"), backend: "wk",
                             kind: .edited(messageID: original.id, conversation: group, by: "alice", content: .text("v2"), at: 2))
        #expect(try engine.ingest([edited]).queued == 1)
        await engine.start()
        #expect(await engine.waitUntilIdle())
        await engine.stop()
        let notice = try #require(try await h.history(h.rc, "g").last)
        #expect(notice.currentContent.digest == "✎ v2" && notice.reply?.messageID == copy.id)

        let verifier = Verifier(store: h.store, backends: [h.wk, h.rc], routes: h.routes)
        var report = try await verifier.run(VerifyScope(conversation: ("wk", group), settleMs: 0))
        #expect(report.exitCode == 0 && report.driftCount == 0, "the copy shows v1, the notice v2: \(report.table)")
        try await verifier.repair(&report, retry: RetryPolicy(baseMs: 5, maxMs: 50), timeoutMs: 5_000)
        let after = try await h.history(h.rc, "g")
        #expect(after.first { $0.id == copy.id }?.isRecalled == false, "the copy is not recalled")
        #expect(after.filter { $0.sender == "wk_alice" && $0.currentContent.digest.hasPrefix("v") }.count == 1, "nor sent again")
    }

    /// A message the bridge has not queued yet, sent within the settle horizon, is settling (not drift);
    /// with no horizon it is missing.
    @Test func aMessageNotTakenInYetIsSettlingWithinTheHorizon() async throws {
        _ = try await relay(["one"])
        let fresh = try await h.wk.send(OutgoingMessage(conversation: group, sender: "alice", content: .text("just sent")))
        let settling = try await verify(settle: true)
        let conversation = try #require(settling.conversations.first)
        #expect(settling.exitCode == 0 && conversation.settling == 1 && conversation.items.isEmpty, "\(settling.table)")
        #expect(settling.table.contains("1 settling"), "\(settling.table)")
        let judged = try await verify()
        #expect(judged.conversations.first?.items.map(\.kind) == [.missing] && judged.conversations.first?.settling == 0, "\(judged.table)")
        #expect(judged.conversations.first?.items.first?.sourceMessage == fresh.id.rawValue)
    }

    /// The same with the source's clock two minutes behind the bridge's: send times are the source's
    /// clock, so a message just sent looks two minutes old. The horizon is moved by the offset the bridge's
    /// last copies show (`sourceClockLead`): the message is settling, not missing (and not repaired beside
    /// the bridge that may still be taking it in).
    @Test func theSettleHorizonFollowsASourceClockBehindTheBridges() async throws {
        let wk = MemoryBackend(id: "wk", capabilities: .wukong, clock: ClockBehind(ms: 120_000))
        let relayed = try await wk.send(OutgoingMessage(conversation: group, sender: "alice", content: .text("one")))
        let copy = try await h.rcMemory.send(OutgoingMessage(conversation: group, sender: "wk_alice", content: .text("one")))
        try h.store.transaction { tx in
            try tx.map(source: ("wk", relayed.id, group), target: ("rc", copy.id, group), sentAt: relayed.sentAt, at: SystemClock().nowMs())
        }
        let fresh = try await wk.send(OutgoingMessage(conversation: group, sender: "alice", content: .text("just sent")))
        let verifier = Verifier(store: h.store, backends: [wk, h.rc], routes: h.routes)
        let report = try await verifier.run(VerifyScope(conversation: ("wk", group), settleMs: 30_000))
        let conversation = try #require(report.conversations.first)
        #expect(report.exitCode == 0 && conversation.settling == 1 && conversation.items.isEmpty, "\(report.table)")
        let judged = try await verifier.run(VerifyScope(conversation: ("wk", group), settleMs: 0))
        #expect(judged.conversations.first?.items.first?.sourceMessage == fresh.id.rawValue, "with no horizon it is missing: \(judged.table)")
    }

    /// `--repair` of a missing copy: the bridge took the message in between the comparison and the repair
    /// (its ledger row and `.send` committed) — nothing is queued; otherwise the repair's transaction
    /// records the message's intake event, so the bridge's callback for it afterwards relays nothing.
    @Test func aRepairDoesNotSendWhatTheBridgeTookInAndKeepsTheBridgeFromSendingItAgain() async throws {
        let taken = try await h.wk.send(OutgoingMessage(conversation: group, sender: "alice", content: .text("taken in meanwhile")))
        let verifier = Verifier(store: h.store, backends: [h.wk, h.rc], routes: h.routes)
        var report = try await verifier.run(VerifyScope(conversation: ("wk", group), settleMs: 0))
        #expect(report.conversations.first?.items.map(\.kind) == [.missing], "\(report.table)")
        // The bridge's intake records it now (ledger row and `.send`, one transaction), before the repair.
        let engine = h.engine()
        let event = IMEvent(eventID: EventID("msg:\(taken.id)"), backend: "wk", kind: .message(taken))
        #expect(try engine.ingest([event]).queued == 1)
        try await verifier.repair(&report, retry: RetryPolicy(baseMs: 5, maxMs: 50), timeoutMs: 5_000)
        #expect(report.conversations.first?.items.first?.repair?.hasPrefix("not needed") == true, "\(report.table)")
        let lane = LaneKey(backend: "rc", conversation: group)
        #expect(try h.store.read { try $0.pendingEntries(of: lane, limit: 10).filter { $0.kind == "send" }.count } == 1,
                "only the bridge's own `.send`")

        let unseen = try await h.wk.send(OutgoingMessage(conversation: group, sender: "alice", content: .text("not heard of yet")))
        try h.store.transaction { tx in
            for entry in try tx.pendingEntries(of: lane, limit: 10) { try tx.complete(entry.id, at: 1) }
        }
        var second = try await verifier.run(VerifyScope(conversation: ("wk", group), settleMs: 0))
        let missing = second.conversations.first?.items.filter { $0.kind == .missing }.map(\.sourceMessage)
        #expect(missing == [taken.id.rawValue, unseen.id.rawValue], "the first's entry is done without a copy (no lane ran it): \(second.table)")
        try await verifier.repair(&second, retry: RetryPolicy(baseMs: 5, maxMs: 50), timeoutMs: 20_000)
        #expect(second.conversations.first?.items.allSatisfy { $0.repair?.hasPrefix("repaired") == true } == true, "\(second.table)")
        // The callback for the message arrives after the repair sent it: a duplicate, nothing queued.
        let late = try engine.ingest([IMEvent(eventID: EventID("msg:\(unseen.id)"), backend: "wk", kind: .message(unseen))])
        #expect(late.duplicates == 1 && late.queued == 0)
        let copies = try await h.history(h.rcMemory, "g").filter { $0.currentContent == .text("not heard of yet") }
        #expect(copies.count == 1)
    }
}
