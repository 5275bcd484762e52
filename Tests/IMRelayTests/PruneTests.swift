import Foundation
import IMBridgeApp
import IMCore
import IMMapping
@_spi(Testing) import IMRelay
@_spi(Testing) import IMStore
import IMTesting
import Testing

@Suite struct PruneTests {
    /// Pruning removes finished work past the retention and keeps what dedupe and crash recovery need:
    /// pending entries, the ledger rows of their events, the id map.
    @Test func pruningKeepsWhatDedupeAndRecoveryNeed() async throws {
        let h = try RelayHarness()
        let engine = h.engine()
        try await engine.start(feeding: [h.wk, h.rc])
        for text in ["m1", "m2"] {
            _ = try await h.wk.send(OutgoingMessage(conversation: .group("g"), sender: "alice", content: .text(text)))
        }
        #expect(try await eventually { try await h.history(h.rc, "g").count == 2 })
        #expect(await engine.waitUntilIdle())
        await engine.stop()

        // Work queued while the engine is down (a crash would leave the same).
        let queued = IMEvent(eventID: "msg:x", backend: "wk",
                             kind: .message(Message(id: "x", conversation: .group("g"), sender: "alice", sentAt: 3, content: .text("m3"))))
        #expect(try engine.ingest([queued]).queued == 1)
        #expect(try await engine.prune() == StoreTransaction.Pruned(), "nothing is older than the retention yet")

        let later = SystemClock().nowMs() + RelayEngine.defaultRetentionMs + 60_000
        let pruned = try await engine.prune(now: later)
        #expect(pruned.outbox == 4, "the two done sends, alice's puppet's profile entry and the group's set-up entry (docs/architecture.md, \"Profiles\", \"Groups\")")
        #expect(pruned.ledger >= 2, "the ledger rows of the relayed messages (and their echoes)")
        #expect(try h.store.read { try $0.count(state: .done) } == 0)
        #expect(try h.store.read { try $0.count(state: .pending) } == 1)
        #expect(try h.store.read { try $0.mappingCount() } == 2, "the id map is kept")
        #expect(try engine.ingest([queued]).duplicates == 1, "a redelivery of queued work is still a duplicate")
        #expect(engine.metrics.value("imbridge_pruned_total", ["table": "outbox"]) == 4)

        let restarted = h.engine(store: try BridgeStore(path: h.path))
        try await restarted.start(feeding: [h.wk, h.rc])
        #expect(try await eventually { try await h.history(h.rc, "g").count >= 3 })
        #expect(await restarted.waitUntilIdle())
        #expect(try await h.history(h.rc, "g").map(\.content) == [.text("m1"), .text("m2"), .text("m3")])
        await restarted.stop()
    }

    @Test func retentionIsConfigurable() throws {
        let env = ["WK_TOKEN": "t", "RC_SECRET": "s"]
        #expect(try BridgeConfig.parse(BridgeConfigTests.valid, environment: env).retention == .hours(168))
        #expect(try BridgeConfig.parse(BridgeConfigTests.valid + "\nretention_hours: 24\n", environment: env).retention == .hours(24))
        #expect(try BridgeConfig.parse(BridgeConfigTests.valid + "\nretention_hours: 0\n", environment: env).ledgerRetentionMs == nil)
        #expect(try BridgeConfig.parse(BridgeConfigTests.valid + "\nretention: 24h\n", environment: env).ledgerRetentionMs == 86_400_000)
        #expect(try BridgeConfig.parse(BridgeConfigTests.valid + "\nretention: 0s\n", environment: env).ledgerRetentionMs == nil)
        #expect { try BridgeConfig.parse(BridgeConfigTests.valid + "\nretention_hours: -1\n", environment: env) } throws: {
            "\($0)".contains("retention_hours")
        }
    }
}
