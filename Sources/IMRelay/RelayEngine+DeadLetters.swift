import Foundation
import IMAdapterKit
import IMCore
import IMStore
import Logging

/// Inbound dead letters (poison messages): kept at intake, and converted again on `imbridge deadletters retry`.
extension RelayEngine {
    /// Keeps poison messages as inbound dead letters; returns those kept now (not kept before).
    nonisolated func keep(_ setAside: [SetAsideMessage], _ tx: StoreTransaction, at now: Int64) throws -> [SetAsideMessage] {
        try setAside.filter { item in
            try tx.keepInbound(backend: item.backend, key: item.key, format: item.format, payload: Data(item.raw),
                               reason: String(item.reason.prefix(2000)), at: now)
        }
    }

    /// What `retryInboundDeadLetters` did.
    public struct InboundRetryResult: Sendable, Equatable {
        /// Converted and taken (their events are queued like any callback's).
        public var relayed = 0
        /// Still not convertible (kept, with the new reason).
        public var stillPoison = 0
        /// Ids not found, or whose backend is not configured or cannot replay.
        public var skipped = 0
    }

    /// Re-runs inbound dead letters (all, or `ids`) through the normal intake: the backend that received
    /// each converts it again (`InboundHandling.replay`, after a mapping fix), and its events are taken
    /// like a callback's (ledger, echo check, routes, outbox) in the transaction that removes the dead
    /// letter. One that still does not convert stays, with the new reason. The engine need not be
    /// running: a running bridge on the same store picks the queued work up within its scan interval.
    public nonisolated func retryInboundDeadLetters(ids: [Int64]? = nil) async throws -> InboundRetryResult {
        var result = InboundRetryResult()
        let letters = try await store.reading { try $0.inboundDeadLetters(ids: ids, limit: 100_000) }
        result.skipped = (ids?.count ?? letters.count) - letters.count
        for letter in letters {
            guard let receiver = backends[letter.backend] as? any InboundHandling else {
                result.skipped += 1
                continue
            }
            let message = SetAsideMessage(backend: letter.backend, key: letter.key, format: letter.format, raw: Array(letter.payload),
                                          reason: letter.reason)
            let batch: InboundBatch
            do {
                batch = try await receiver.replay(message)
            } catch let error as IMError where error.code == .unsupported {
                result.skipped += 1
                continue
            } catch {
                batch = InboundBatch(setAside: [SetAsideMessage(backend: letter.backend, key: letter.key, format: letter.format,
                                                                raw: message.raw, reason: SetAsideMessage.reason(error))])
            }
            let now = clock.nowMs()
            let still = batch.setAside.first { $0.key == letter.key } ?? batch.setAside.first
            let events = batch.events
            let others = batch.setAside.filter { $0 != still }
            let planned = try await store.groupedTransaction { [self] tx in
                var recorded = try record(events, tx, at: now)
                recorded.kept = try keep(others, tx, at: now)
                if let still {
                    try tx.failedInboundRetry(letter.id, reason: String(still.reason.prefix(2000)))
                } else {
                    try tx.removeInboundDeadLetter(letter.id)
                }
                return recorded
            }
            _ = finishIngest(events, planned)
            if still == nil { result.relayed += 1 } else { result.stillPoison += 1 }
        }
        if result.relayed > 0 { metrics.increment("imbridge_inbound_dead_letters_retried_total", by: result.relayed) }
        return result
    }
}
