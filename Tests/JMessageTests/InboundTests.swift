import Foundation
import IMAdapterKit
import IMCore
import IMHTTP
import IMTesting
import JMessage
import Logging
import Synchronization
import Testing

/// Log lines a poller wrote (message and metadata).
final class RecordedLines: Sendable {
    let lines = Mutex<[(message: String, metadata: Logger.Metadata)]>([])
    var messages: [String] { lines.withLock { $0.map(\.message) } }
}

struct PollerLogRecorder: LogHandler {
    let recorded: RecordedLines
    var logLevel: Logger.Level = .debug
    var metadata: Logger.Metadata = [:]
    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }
    func log(event: LogEvent) {
        let merged = metadata.merging(event.metadata ?? [:]) { _, new in new }
        recorded.lines.withLock { $0.append((event.message.description, merged)) }
    }
}

/// The routing push through `handle(_:sink:)` and the report v2 poller into a sink.
@Suite struct JMessageInboundTests {
    let backend = JMessageBackend(id: "jm", settings: JMessageSettings(
        appKey: appKey, masterSecret: masterSecret, admin: "bridge_admin", apiURL: "http://127.0.0.1:9", reportURL: "http://127.0.0.1:9"))
    let time = TestClock(startMs: 1_767_225_600_000)

    func push(_ body: String, authorization: String? = "Basic " + Data("\(appKey):\(masterSecret)".utf8).base64EncodedString()) -> HTTPRequestData {
        HTTPRequestData(method: "POST", path: "/callbacks/jm", headers: authorization.map { [("Authorization", $0), ("Content-Type", "application/json; charset=utf-8")] } ?? [],
                        body: Array(body.utf8))
    }

    /// `admit`'s decision as (status of an early answer, or nil; the cap when the body is to be read).
    static func decision(_ admission: BodyAdmission) -> (answer: Int?, cap: Int?) {
        switch admission {
        case .answer(let response): (response.status, nil)
        case .read(let cap): (nil, cap)
        }
    }

    /// The Basic credentials are checked from the head (docs/adapters/jmessage.md, "Callback limits").
    @Test func theHeadIsCheckedBeforeTheBody() async {
        let sink = CollectingSink()
        #expect(Self.decision(await backend.admit(push(""), sink: sink)).cap == JMessageInbound.maxBodyBytes)
        #expect(sink.refusals.isEmpty)
        let wrong = "Basic " + Data("\(appKey):wrong".utf8).base64EncodedString()
        for authorization in [nil, wrong] {
            #expect(Self.decision(await backend.admit(push("", authorization: authorization), sink: sink)).answer == 401)
        }
        #expect(sink.refusals.count == 2)
    }

    static let body = #"{"total":2,"messages":["# + reportMessage(msgid: 1001) + "," + reportMessage(msgid: 1002, targetType: "group", targetID: "10055201") + "]}"

    // MARK: routing push

    @Test func parsesTheRoutingPushAndAnswers200() async throws {
        let stream = backend.events()
        let sink = CollectingSink()
        let response = await backend.handle(push(Self.body), sink: sink)
        #expect(response.status == 200 && response.body.isEmpty)
        #expect(sink.events.map(\.eventID) == ["jmessage:msg:1001", "jmessage:msg:1002"])
        #expect(sink.events.map(\.conversation) == [.direct("alice", "bobby"), .group("10055201")])
        #expect(sink.refusals.isEmpty)
        var iterator = stream.makeAsyncIterator()
        #expect(await iterator.next()?.eventID == "jmessage:msg:1001")

        let again = CollectingSink()
        #expect(await backend.handle(push(Self.body), sink: again).status == 200)
        #expect(again.events.map(\.eventID) == sink.events.map(\.eventID), "a redelivery keeps the event ids")
    }

    @Test func theParserIsPure() throws {
        let batch = try backend.inbound.batch(from: push(Self.body))
        #expect(batch.setAside.isEmpty)
        let events = batch.events
        #expect(events.map(\.eventID) == ["jmessage:msg:1001", "jmessage:msg:1002"])
        #expect(events.allSatisfy { $0.backend == "jm" })
    }

    @Test(arguments: [
        (nil, "authentication_failed", 401),
        ("Basic " + Data("\(appKey):wrong".utf8).base64EncodedString(), "authentication_failed", 401),
        ("Basic " + Data("otherapp:\(masterSecret)".utf8).base64EncodedString(), "authentication_failed", 401),
        ("Bearer abc", "authentication_failed", 401),
    ] as [(String?, String, Int)])
    func refusesForgedPushes(authorization: String?, code: String, status: Int) async throws {
        #expect(throws: IMError.self) { _ = try backend.inbound.batch(from: push(Self.body, authorization: authorization)) }
        let sink = CollectingSink()
        let response = await backend.handle(push(Self.body, authorization: authorization), sink: sink)
        #expect(response.status == status)
        #expect(sink.events.isEmpty, "a forged push was accepted")
        #expect(sink.refusals.map(\.code.rawValue) == [code])
    }

    /// Near miss: the master secret must match in full — not a prefix of it (empty included),
    /// not one differing only in its last character.
    @Test func onlyTheWholeMasterSecretIsAccepted() async throws {
        let lastChanged = String(masterSecret.dropLast()) + (masterSecret.hasSuffix("0") ? "1" : "0")
        for secret in ["", String(masterSecret.prefix(1)), String(masterSecret.prefix(8)), String(masterSecret.dropLast()), lastChanged,
                       masterSecret + "x"] {
            let sink = CollectingSink()
            let response = await backend.handle(push(Self.body, authorization: "Basic " + Data("\(appKey):\(secret)".utf8).base64EncodedString()),
                                                sink: sink)
            #expect(response.status == 401 && sink.events.isEmpty, "secret of \(secret.count) characters")
            #expect(sink.refusals.map(\.code) == [.authenticationFailed])
            #expect(sink.heard.isEmpty, "a forged push is no sign of life")
        }
        let sink = CollectingSink()
        #expect(await backend.handle(push(Self.body), sink: sink).status == 200 && sink.events.count == 2)
        #expect(sink.heard == [backend.id], "a push that verified is the backend's sign of life")
    }

    @Test func refusesMalformedBodies() async throws {
        for body in ["not json", #"{"total":1}"#, #"{"total":1,"messages":{}}"#] {
            let sink = CollectingSink()
            let response = await backend.handle(push(body), sink: sink)
            #expect(response.status == 400 && sink.events.isEmpty)
            #expect(sink.refusals.map(\.code) == [.malformedPayload])
        }
    }

    /// One pushed message that does not decode is set aside; the push is answered 200.
    @Test func aMessageThatDoesNotDecodeIsSetAsideAndThePushAcknowledged() async throws {
        let sink = CollectingSink()
        let response = await backend.handle(push(#"{"total":1,"messages":[{"msgid":1}]}"#), sink: sink)
        #expect(response.status == 200 && sink.events.isEmpty && sink.refusals.isEmpty)
        #expect(sink.setAside.map(\.key) == ["jmessage:msg:1"])
        #expect(sink.setAside.first?.raw == Array(#"{"msgid":1}"#.utf8))
    }

    @Test func aSinkThatCannotTakeTheEventsGetsThePushRedelivered() async throws {
        let sink = CollectingSink()
        sink.fail(with: IMError(.unavailable, "store down"))
        let stream = backend.events()
        let response = await backend.handle(push(Self.body), sink: sink)
        #expect(response.status == 503, "JMessage retries a 5xx")
        #expect(sink.events.isEmpty && sink.refusals.isEmpty)
        sink.fail(with: nil)
        #expect(await backend.handle(push(Self.body), sink: sink).status == 200)
        var iterator = stream.makeAsyncIterator()
        #expect(await iterator.next()?.eventID == "jmessage:msg:1001", "events() shows only what was accepted")
    }

    // MARK: report v2 poller

    func poller(_ sandbox: JMessageSandboxHelper, storage: any CheckpointStorage, clock: (any IMClock)? = nil) -> JMessagePoller {
        let settings = sandbox.backendSettings
        return JMessagePoller(client: JMessageClient(settings: settings),
                              codec: JMessageCodec(identity: JMessageIdentity(appKey: settings.appKey, admin: settings.admin)),
                              backend: "jm", storage: storage, clock: clock ?? sandbox.clock,
                              settings: .init(pageSize: 2, overlapMs: 5000, startLookbackMs: 60_000))
    }

    func send(_ sandbox: JMessageSandboxHelper, _ texts: [String]) async throws {
        for text in texts {
            try await sandbox.sendText(text)
            time.advance(byMs: 700)
        }
    }

    @Test func aRestartNeitherMissesNorRepeats() async throws {
        let sandbox = try await JMessageSandboxHelper.start(.init(baseClock: time))
        defer { Task { await sandbox.stop() } }
        try await sandbox.seedUsers()
        let storage = InMemoryCheckpointStorage()
        try await send(sandbox, ["a1", "a2", "a3", "a4", "a5"])

        let first = CollectingSink()
        let a = poller(sandbox, storage: storage)
        #expect(try await a.pollPage(into: first), "more pages wait behind the first")
        #expect(first.texts == ["a1", "a2"])
        #expect(first.heard == ["jm"], "a poll JMessage answered is the backend's sign of life")
        let saved = try #require(try await storage.checkpoint(named: "jmessage.jm.poller"))
        #expect(saved.contains("fromMs"))

        // A new process on the same checkpoint: resumes mid-window without repeating a1, a2.
        let second = CollectingSink()
        let b = poller(sandbox, storage: storage)
        try await b.pollOnce(into: second)
        #expect(second.texts == ["a3", "a4", "a5"])

        try await send(sandbox, ["b1", "b2", "b3"])
        time.advance(byMs: 10_000)
        let third = CollectingSink()
        let c = poller(sandbox, storage: storage)
        try await c.pollOnce(into: third)
        try await c.pollOnce(into: third)
        #expect(third.texts == ["b1", "b2", "b3"])
        #expect(third.heard.count >= 3 && Set(third.heard) == ["jm"], "every answered poll counts, an empty one too")
        let ids = (first.events + second.events + third.events).map(\.eventID)
        #expect(Set(ids).count == 8 && ids.allSatisfy { $0.rawValue.hasPrefix("jmessage:msg:") })
    }

    /// The poller's log lines (`imbridge.poller.<backend>`): started, each round at debug with its
    /// messages, a progress line once a minute of the poller's clock, stopped with the total.
    @Test func thePollerLogsItsProgress() async throws {
        let sandbox = try await JMessageSandboxHelper.start(.init(baseClock: time))
        defer { Task { await sandbox.stop() } }
        try await sandbox.seedUsers()
        try await send(sandbox, ["p1", "p2", "p3"])
        let recorded = RecordedLines()
        let logger = Logger(label: "imbridge.poller.jm") { _ in PollerLogRecorder(recorded: recorded) }
        let sink = CollectingSink()
        let polling = poller(sandbox, storage: InMemoryCheckpointStorage())
        let task = Task { await polling.run(intervalMs: 20, into: sink, logger: logger) }
        #expect(await Self.eventually { sink.texts == ["p1", "p2", "p3"] })
        time.advance(byMs: 61_000)
        #expect(await Self.eventually { recorded.messages.contains("report poller progress") })
        task.cancel()
        await task.value
        let all = recorded.lines.withLock { $0 }
        #expect(all.first?.message == "report poller started" && all.first?.metadata["backend"] == "jm")
        let rounds = all.filter { $0.message == "report poll" }
        #expect(rounds.compactMap { Int("\($0.metadata["messages"] ?? "0")") }.reduce(0, +) == 3, "each round counts what it delivered")
        let progress = try #require(all.first { $0.message == "report poller progress" })
        #expect(progress.metadata["messages"] == "3")
        #expect(all.last?.message == "report poller stopped" && all.last?.metadata["messages_total"] == "3")
    }

    static func eventually(_ seconds: Double = 10, _ condition: () async -> Bool) async -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline {
            if await condition() { return true }
            try? await Task.sleep(nanoseconds: 10_000_000)
        }
        return await condition()
    }

    @Test func anExpiredCursorRestartsTheWindowWithoutRepeats() async throws {
        let sandbox = try await JMessageSandboxHelper.start(.init(baseClock: time))
        defer { Task { await sandbox.stop() } }
        try await sandbox.seedUsers()
        try await send(sandbox, ["c1", "c2", "c3", "c4", "c5"])
        let sink = CollectingSink()
        let p = poller(sandbox, storage: InMemoryCheckpointStorage())
        try await p.pollPage(into: sink)
        #expect(sink.texts == ["c1", "c2"])
        time.advance(byMs: 121_000)
        try await p.pollOnce(into: sink)
        #expect(sink.texts == ["c1", "c2", "c3", "c4", "c5"])
        #expect(await p.windowRestarts == 1)
    }

    @Test func aCursorTheServerRefusesRestartsTheWindow() async throws {
        let sandbox = try await JMessageSandboxHelper.start(.init(baseClock: time))
        defer { Task { await sandbox.stop() } }
        try await sandbox.seedUsers()
        try await send(sandbox, ["d1", "d2", "d3", "d4", "d5"])
        // The poller's clock stays put, so it believes its cursor is fresh; the sandbox's moves on.
        let frozen = TestClock(startMs: time.nowMs())
        let sink = CollectingSink()
        let p = poller(sandbox, storage: InMemoryCheckpointStorage(), clock: frozen)
        try await p.pollPage(into: sink)
        sandbox.clock.advance(byMs: 121_000)
        try await p.pollOnce(into: sink)
        #expect(sink.texts == ["d1", "d2", "d3", "d4", "d5"])
        #expect(await p.windowRestarts == 1)
    }

    @Test func checkpointsLiveInTheGivenStorage() async throws {
        let storage = InMemoryCheckpointStorage()
        #expect(try await storage.checkpoint(named: "x") == nil)
        try await storage.setCheckpoint(named: "x", to: "1")
        try await storage.setCheckpoint(named: "x", to: "2")
        #expect(try await storage.checkpoint(named: "x") == "2")
    }
}

extension CollectingSink {
    /// The texts of the message events taken, in order.
    var texts: [String] {
        events.compactMap { event in
            if case .message(let message) = event.kind, case .text(let text) = message.content { text.text } else { nil }
        }
    }
}
