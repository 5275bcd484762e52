import IMAdapterKit
import IMCore
import IMHTTP
import IMMapping
import IMTesting
import NIM
import Testing

/// The freshness window on a message copy's `CurTime` is bound to the ledger's retention
/// (docs/adapters/nim.md §5): a copy older than half the retention is refused, so a captured copy
/// replayed after the ledger forgot its msgid cannot relay again.
@Suite struct NIMFreshnessTests {
    static let hour: Int64 = 3_600_000
    static let now: Int64 = 1_790_000_000_000

    static func backend(retentionHours: Int64?, settings extra: [String: String] = [:]) async throws -> NIMBackend {
        let context = AdapterContext(mapping: MappingSet.shipped.table("nim"), clock: TestClock(startMs: now),
                                     ledgerRetentionMs: retentionHours.map { $0 * hour })
        let built = try await NIMAdapter.descriptor.makeBackend(
            id: "yx", settings: ["app_key": "key", "app_secret": NIMInboundTests.secret].merging(extra) { _, given in given }, context: context)
        return try #require(built as? NIMBackend)
    }

    @Test func aCopyOlderThanHalfTheRetentionIsRefusedAFreshOneAccepted() async throws {
        let backend = try await Self.backend(retentionHours: 168)
        #expect(backend.inbound.maxSkewMs == 84 * Self.hour, "the default window is half of retention_hours")
        // A copy captured 85 hours ago: past the window. Its ledger row would be pruned after 168 hours; by
        // then it is 83 hours further past the window.
        let replay = await NIMInboundTests.exchange(NIMInboundTests.request(NIMInboundTests.docBody, curTime: String(Self.now - 85 * Self.hour)),
                                                    with: backend)
        #expect(replay.answer.status == 401 && replay.sink.events.isEmpty && replay.sink.refusals.first?.code == .authenticationFailed)
        let fresh = await NIMInboundTests.exchange(NIMInboundTests.request(NIMInboundTests.docBody, curTime: String(Self.now - Self.hour)),
                                                   with: backend)
        #expect(fresh.answer.status == 200 && fresh.sink.events.count == 1)
        // Seconds (≤ 10 digits) are read as seconds, and judged by the same window.
        let oldSeconds = await NIMInboundTests.exchange(
            NIMInboundTests.request(NIMInboundTests.docBody, curTime: String((Self.now - 100 * Self.hour) / 1000)), with: backend)
        #expect(oldSeconds.answer.status == 401 && oldSeconds.sink.events.isEmpty)
    }

    @Test func theWindowFollowsTheRetentionAndCannotExceedHalfOfIt() async throws {
        #expect(try await Self.backend(retentionHours: 24).inbound.maxSkewMs == 12 * Self.hour)
        #expect(try await Self.backend(retentionHours: 24, settings: ["callback_max_skew_ms": "600000"]).inbound.maxSkewMs == 600_000)
        #expect(try await Self.backend(retentionHours: 24, settings: ["callback_max_skew": "10m"]).inbound.maxSkewMs == 600_000)
        #expect(try await Self.backend(retentionHours: nil).inbound.maxSkewMs == nil, "a ledger kept for ever needs no window")
        do {
            _ = try await Self.backend(retentionHours: 24, settings: ["callback_max_skew_ms": String(13 * Self.hour)])
            Issue.record("a window wider than half the retention was accepted")
        } catch let error as IMError {
            #expect(error.details["setting"] == "callback_max_skew_ms" && error.message.contains("expected at most 12h (half of retention), got 13h"),
                    "\(error.message)")
        }
        for zero in ["0", "-1"] {
            await #expect(throws: IMError.self) { try await Self.backend(retentionHours: 24, settings: ["callback_max_skew_ms": zero]) }
        }
        await #expect(throws: IMError.self) { try await Self.backend(retentionHours: 24, settings: ["timeout_seconds": "0"]) }
    }
}
