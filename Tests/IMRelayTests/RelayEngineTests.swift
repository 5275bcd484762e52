import Foundation
import IMCore
@_spi(Testing) import IMRelay
import IMStore
import IMTesting
import Testing
import IMOutbox

@Suite struct RelayEngineTests {
    @Test func everyEventKindRelaysBothWaysWithoutEchoes() async throws {
        let h = try RelayHarness()
        let engine = h.engine()
        try await engine.start(feeding: [h.wk, h.rc])
        let g1 = ConversationRef.group("g1")

        let hello = try await h.wk.send(OutgoingMessage(conversation: g1, sender: "alice", content: .text("你好")))
        let order = try await h.wk.send(OutgoingMessage(conversation: g1, sender: "alice", content: .text("订单 42"),
                                                        expansion: ["status": "unpaid"]))
        #expect(try await eventually { try await h.history(h.rc, "g1").count == 2 })
        var rcMessages = try await h.history(h.rc, "g1")
        #expect(rcMessages.map(\.sender) == ["wk_alice", "wk_alice"])
        #expect(rcMessages[0].content == .text("你好"))
        #expect(rcMessages[1].expansion?.values == ["status": "unpaid"])

        _ = try await h.wk.updateExpansion(of: order.id, in: g1, by: "bob", .set(["status": "paid", "paid_at": "1700"]))
        #expect(try await eventually { try await h.rcMemory.expansion(of: rcMessages[1].id, in: g1).values == ["status": "paid", "paid_at": "1700"] })

        try await h.wk.edit(hello.id, in: g1, by: "alice", content: .text("你好呀"))
        _ = try await h.wk.toggleReaction("👍", on: hello.id, in: g1, by: "bob")
        let reply = try await h.wk.send(OutgoingMessage(conversation: g1, sender: "bob", content: .text("收到"),
                                                        reply: ReplyRef(messageID: hello.id, sender: "alice", digest: "你好")))
        try await h.wk.recall(order.id, in: g1, by: "alice")
        #expect(try await eventually { try await h.history(h.rc, "g1").count == 5 })
        rcMessages = try await h.history(h.rc, "g1")
        #expect(rcMessages[2].content == .notice(NoticeContent(text: "✎ 你好呀")), "RongCloud has no edit: a notice replying to the original")
        #expect(rcMessages[2].reply?.messageID == rcMessages[0].id)
        #expect(rcMessages[3].content == .notice(NoticeContent(text: "👍 +1")))
        #expect(rcMessages[4].content == .text("收到") && rcMessages[4].reply?.messageID == rcMessages[0].id)
        #expect(try await eventually { try await h.history(h.rc, "g1")[1].isRecalled })
        _ = reply

        // RongCloud → WuKong
        let fromBob = try await h.rcMemory.send(OutgoingMessage(conversation: g1, sender: "bob", content: .text("hi from rc"),
                                                                expansion: ["votes": "0"]))
        #expect(try await eventually { try await h.history(h.wk, "g1").contains { $0.sender == "rc_bob" } })
        let mirrored = try await h.history(h.wk, "g1").first { $0.sender == "rc_bob" }!
        _ = try await h.rcMemory.updateExpansion(of: fromBob.id, in: g1, by: "carol", .set(["votes": "1"]))
        #expect(try await eventually { try await h.wk.expansion(of: mirrored.id, in: g1).values == ["votes": "1"] })
        try await h.rcMemory.recall(fromBob.id, in: g1, by: "bob")
        #expect(try await eventually { try await h.history(h.wk, "g1").first { $0.id == mirrored.id }?.isRecalled == true })

        #expect(await engine.waitUntilIdle())
        try await Task.sleep(nanoseconds: 100_000_000)
        #expect(try await h.history(h.wk, "g1").count == 4, "3 originals + 1 mirrored; nothing echoed back")
        #expect(try await h.history(h.rc, "g1").count == 6, "5 relayed + 1 original")
        #expect(try h.store.read { try $0.count(state: .dead) } == 0)
        #expect(engine.metrics.total("imbridge_echoes_total") > 0)
        #expect(engine.metrics.value("imbridge_fallbacks_total", ["feature": "edit", "policy": "notice"]) == 1)
        await engine.stop()
    }

    @Test func redeliveredEventsRelayOnce() async throws {
        let h = try RelayHarness()
        let engine = h.engine()
        let message = Message(id: "w1", conversation: .group("g1"), sender: "alice", sentAt: 1, content: .text("once"))
        let event = IMEvent(eventID: "msg:w1", backend: "wk", kind: .message(message))
        let first = try engine.ingest([event])
        let second = try engine.ingest([event, event])
        #expect(first.accepted == 1 && first.queued == 1)
        #expect(second.duplicates == 2 && second.queued == 0)
        try await engine.start(feeding: [h.wk, h.rc])
        #expect(await engine.waitUntilIdle())
        #expect(try await h.history(h.rc, "g1").map(\.content) == [.text("once")])
        await engine.stop()
    }

    @Test func aRateLimitedLaneWaitsAloneAndKeepsOrder() async throws {
        let h = try RelayHarness(rcWrapper: { FlakyBackend($0) })
        let flaky = h.rc as! FlakyBackend
        // The slow conversation is refused until the fast one is through (however long a loaded machine
        // takes) and has been retried a while; then it is let through.
        flaky.failing.withLock { $0[.group("slow")] = .max }
        let engine = h.engine()
        try await engine.start(feeding: [h.wk, h.rc])
        for n in 1...5 {
            _ = try await h.wk.send(OutgoingMessage(conversation: .group("slow"), sender: "a", content: .text("s\(n)")))
            _ = try await h.wk.send(OutgoingMessage(conversation: .group("fast"), sender: "a", content: .text("f\(n)")))
        }
        #expect(try await eventually { try await h.history(h.rc, "fast").count == 5 })
        // (However long a loaded machine takes to retry 25 times: a count, not a speed.)
        #expect(try await eventually(180) { engine.metrics.value("imbridge_retries_total", ["target": "rc"]) >= 25 })
        #expect(try await h.history(h.rc, "slow").isEmpty, "the slow lane is still backing off")
        flaky.failing.withLock { $0[.group("slow")] = 0 }
        #expect(try await eventually { try await h.history(h.rc, "slow").count == 5 })
        #expect(try await h.history(h.rc, "slow").map(\.content) == (1...5).map { .text("s\($0)") })
        #expect(engine.metrics.value("imbridge_retries_total", ["target": "rc"]) >= 25)
        await engine.stop()
    }

    /// An edit whose notice the target refuses once (429) arrives on the retry: the retry's earlier-attempt
    /// search finds no copy of the notice and sends it, and nothing gives the change up (docs/reliability.md,
    /// "Planted bugs": *an edit lost on retry*).
    @Test func anEditNoticeRefusedOnceArrivesOnTheRetry() async throws {
        let h = try RelayHarness(rcWrapper: { FlakyBackend($0) })
        let flaky = h.rc as! FlakyBackend
        let engine = h.engine()
        try await engine.start(feeding: [h.wk, h.rc])
        let g = ConversationRef.group("edits")
        let hello = try await h.wk.send(OutgoingMessage(conversation: g, sender: "alice", content: .text("draft")))
        #expect(try await eventually { try await h.history(h.rc, "edits").count == 1 })
        #expect(await engine.waitUntilIdle())
        // The next send in this conversation — the edit's notice — is refused once.
        flaky.failing.withLock { $0[g] = 1 }
        try await h.wk.edit(hello.id, in: g, by: "alice", content: .text("final"))
        #expect(try await eventually { try await h.history(h.rc, "edits").contains { $0.content == .notice(NoticeContent(text: "✎ final")) } },
                "the notice arrives on the retry")
        #expect(flaky.failing.withLock { $0[g] } == 0, "the notice's first attempt was refused")
        #expect(engine.metrics.value("imbridge_retries_total", ["target": "rc"]) >= 1)
        #expect(try await h.history(h.rc, "edits").count == 2, "the copy and one notice")
        await engine.stop()
    }

    @Test func permanentFailuresBecomeDeadLettersAndCanBeRetried() async throws {
        let h = try RelayHarness(rcWrapper: { FlakyBackend($0) })
        let flaky = h.rc as! FlakyBackend
        flaky.permanent.withLock { $0.insert("poison") }
        let engine = h.engine()
        try await engine.start(feeding: [h.wk, h.rc])
        for text in ["before", "poison", "after"] {
            _ = try await h.wk.send(OutgoingMessage(conversation: .group("g"), sender: "a", content: .text(text)))
        }
        #expect(try await eventually { try await h.history(h.rc, "g").count == 2 })
        #expect(await engine.waitUntilIdle())
        let dead = try h.store.read { try $0.deadLetters() }
        #expect(dead.count == 1 && dead[0].lastError?.contains("1002") == true)
        flaky.permanent.withLock { $0.removeAll() }
        try h.store.transaction { try $0.retryDeadLetters() }
        engine.wake()
        #expect(try await eventually { try await h.history(h.rc, "g").count == 3 })
        #expect(try await h.history(h.rc, "g").map(\.content) == [.text("before"), .text("after"), .text("poison")])
        await engine.stop()
    }

    @Test func aRestartNeitherLosesNorRepeats() async throws {
        let h = try RelayHarness()
        let first = h.engine()
        for n in 1...20 {
            let message = Message(id: MessageID("w\(n)"), conversation: .group("g"), sender: "a", sentAt: Int64(n), content: .text("\(n)"))
            try first.ingest([IMEvent(eventID: EventID("msg:w\(n)"), backend: "wk", kind: .message(message))])
        }
        await first.start()
        #expect(try await eventually { try await h.history(h.rc, "g").count >= 5 })
        await first.stop()
        let reopened = try BridgeStore(path: h.path)
        let second = h.engine(store: reopened)
        for n in 1...20 {   // the vendor redelivers everything after the restart
            let message = Message(id: MessageID("w\(n)"), conversation: .group("g"), sender: "a", sentAt: Int64(n), content: .text("\(n)"))
            try second.ingest([IMEvent(eventID: EventID("msg:w\(n)"), backend: "wk", kind: .message(message))])
        }
        await second.start()
        #expect(await second.waitUntilIdle())
        #expect(try await h.history(h.rc, "g").map(\.content) == (1...20).map { .text("\($0)") })
        await second.stop()
    }

    @Test func aCrashBetweenTheTargetsAcceptAndOurCommitWritesNothingTwice() async throws {
        let h = try RelayHarness()
        let engine = h.engine()
        let message = Message(id: "w1", conversation: .group("g"), sender: "alice", sentAt: 1, content: .text("only once"))
        try engine.ingest([IMEvent(eventID: "msg:w1", backend: "wk", kind: .message(message))])
        // What a killed bridge leaves behind: the entry claimed, the target holding the message, no commit.
        // (The lane's head is the group's set-up entry, docs/architecture.md "Groups"; the send follows it.)
        let entry = try #require(try h.store.read { try $0.pendingEntries(of: LaneKey(backend: "rc", conversation: .group("g")), limit: 10) }
            .first { $0.kind == "send" })
        try h.store.transaction { try $0.claim(entry.id) }
        _ = try await h.rc.send(OutgoingMessage(conversation: .group("g"), sender: "wk_alice", content: .text("only once"),
                                                clientMessageID: ClientMessageID("imb-\(entry.id)")))
        let restarted = h.engine(store: try BridgeStore(path: h.path))
        try await restarted.start(feeding: [h.wk, h.rc])
        #expect(await restarted.waitUntilIdle())
        #expect(try await h.history(h.rc, "g").map(\.content) == [.text("only once")])
        #expect(try h.store.read { try $0.mapped("w1", from: "wk", to: "rc") } != nil, "the id map learned the earlier copy")
        await restarted.stop()
    }
}

@Suite struct MediaRehostTests {
    @Test func rehostMovesTheBytesToTheTarget() async throws {
        let source = MemoryBackend(id: "a", capabilities: .nim, clock: SystemClock())
        let target = MemoryBackend(id: "b", capabilities: .nim, clock: SystemClock())
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("rehost-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        FileManager.default.createFile(atPath: directory + "/cat.jpg", contents: Data([0xFF, 0xD8, 1, 2, 3]))
        let uploaded = try await source.upload(.local(directory + "/cat.jpg", mimeType: "image/jpeg"))
        // NIM sends into teams that exist, from their members: the group on both sides first.
        source.world.seedGroup(GroupProfile(id: "g", owner: "alice"))
        target.world.seedGroup(GroupProfile(id: "g", owner: "a_alice"))
        let store = try BridgeStore(path: directory + "/bridge.sqlite")
        let route = Route(from: try RouteEndpoint(parsing: "a:group:*"), to: try RouteEndpoint(parsing: "b:group:*"), media: .rehost)
        let engine = RelayEngine(store: store, backends: [source, target], routes: [route], retry: RetryPolicy(baseMs: 5, maxMs: 50))
        try await engine.start(feeding: [source, target])
        _ = try await source.send(OutgoingMessage(conversation: .group("g"), sender: "alice",
                                                  content: .image(ImageContent(uploaded.rehosted(at: uploaded.remoteURL!)))))
        #expect(try await eventually { try await target.history(HistoryQuery(conversation: .group("g"))).messages.count == 1 })
        let copy = try #require(try await target.history(HistoryQuery(conversation: .group("g"))).messages.first)
        guard case .image(let image) = copy.content else { Issue.record("copy is \(copy.content)"); return }
        #expect(image.attachment.remoteURL != uploaded.remoteURL, "the copy points at the target's own store")
        let back = try await target.download(image.attachment, into: directory)
        #expect(FileManager.default.contents(atPath: back.localPath!) == Data([0xFF, 0xD8, 1, 2, 3]))
        await engine.stop()
    }
}
