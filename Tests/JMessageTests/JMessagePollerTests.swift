import Foundation
import IMAdapterKit
import IMCore
import IMHTTP
import IMTesting
import JMessage
import Synchronization
import Testing

/// Collects what a poller emits.
final class Sink: Sendable {
    let events = Mutex<[IMEvent]>([])
    var emit: @Sendable ([IMEvent]) async -> Void { { batch in self.events.withLock { $0 += batch } } }
    var texts: [String] {
        events.withLock { $0 }.compactMap { event in
            if case .message(let message) = event.kind, case .text(let text) = message.content { text.text } else { nil }
        }
    }
}

@Suite struct JMessagePollerTests {
    let time = TestClock(startMs: 1_767_225_600_000)

    func poller(_ sandbox: SandboxHarness, storage: any CheckpointStorage, sink: Sink, clock: (any IMClock)? = nil) -> JMessagePoller {
        let config = sandbox.config
        return JMessagePoller(client: JMessageClient(config: config),
                              codec: JMessageCodec(identity: JMessageIdentity(appKey: config.appKey, admin: config.admin)),
                              backend: "jm", storage: storage, clock: clock ?? sandbox.clock,
                              settings: .init(pageSize: 2, overlapMs: 5000, startLookbackMs: 60_000), emit: sink.emit)
    }

    func send(_ sandbox: SandboxHarness, _ texts: [String]) async throws {
        for text in texts {
            try await sandbox.sendText(text)
            time.advance(byMs: 700)
        }
    }

    @Test func aRestartNeitherMissesNorRepeats() async throws {
        let sandbox = try await SandboxHarness.start(baseClock: time)
        defer { Task { await sandbox.stop() } }
        try await sandbox.seedUsers()
        let storage = InMemoryCheckpointStorage()
        try await send(sandbox, ["a1", "a2", "a3", "a4", "a5"])

        let first = Sink()
        let a = poller(sandbox, storage: storage, sink: first)
        #expect(try await a.pollPage(), "more pages wait behind the first")
        #expect(first.texts == ["a1", "a2"])
        let saved = try #require(try await storage.checkpoint(named: "jmessage.jm.poller"))
        #expect(saved.contains("fromMs"))

        // A new process on the same checkpoint: resumes mid-window without repeating a1, a2.
        let second = Sink()
        let b = poller(sandbox, storage: storage, sink: second)
        try await b.pollOnce()
        #expect(second.texts == ["a3", "a4", "a5"])

        try await send(sandbox, ["b1", "b2", "b3"])
        time.advance(byMs: 10_000)
        let third = Sink()
        let c = poller(sandbox, storage: storage, sink: third)
        try await c.pollOnce()
        try await c.pollOnce()
        #expect(third.texts == ["b1", "b2", "b3"])
        let ids = (first.events.withLock { $0 } + second.events.withLock { $0 } + third.events.withLock { $0 }).map(\.eventID)
        #expect(Set(ids).count == 8 && ids.allSatisfy { $0.rawValue.hasPrefix("jmessage:msg:") })
    }

    @Test func anExpiredCursorRestartsTheWindowWithoutRepeats() async throws {
        let sandbox = try await SandboxHarness.start(baseClock: time)
        defer { Task { await sandbox.stop() } }
        try await sandbox.seedUsers()
        try await send(sandbox, ["c1", "c2", "c3", "c4", "c5"])
        let sink = Sink()
        let p = poller(sandbox, storage: InMemoryCheckpointStorage(), sink: sink)
        try await p.pollPage()
        #expect(sink.texts == ["c1", "c2"])
        time.advance(byMs: 121_000)
        try await p.pollOnce()
        #expect(sink.texts == ["c1", "c2", "c3", "c4", "c5"])
        #expect(await p.windowRestarts == 1)
    }

    @Test func aCursorTheServerRefusesRestartsTheWindow() async throws {
        let sandbox = try await SandboxHarness.start(baseClock: time)
        defer { Task { await sandbox.stop() } }
        try await sandbox.seedUsers()
        try await send(sandbox, ["d1", "d2", "d3", "d4", "d5"])
        // The poller's clock stays put, so it believes its cursor is fresh; the sandbox's moves on.
        let frozen = TestClock(startMs: time.nowMs())
        let sink = Sink()
        let p = poller(sandbox, storage: InMemoryCheckpointStorage(), sink: sink, clock: frozen)
        try await p.pollPage()
        sandbox.clock.advance(byMs: 121_000)
        try await p.pollOnce()
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
