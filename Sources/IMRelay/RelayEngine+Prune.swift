import IMStore

extension RelayEngine {
    /// Finished work older than the retention is deleted so that the store does not grow with every
    /// relayed message (≈ 1 kB each): done outbox entries and ledger rows; callback marks go as soon as
    /// they expire. What the engine needs is
    /// kept whatever its age: pending entries (crash recovery resumes them, claimed or not), dead letters
    /// (an operator decides), the id map and checkpoints.
    ///
    /// The trade-off: a ledger row older than the retention no longer dedupes — a vendor that redelivers
    /// an event later than that would have it relayed again (echoes stay suppressed by the id map). The
    /// default of 7 days is far beyond any vendor's redelivery window.
    public static let defaultRetentionMs: Int64 = 7 * 24 * 3_600_000

    /// Rows per pruning transaction: short transactions, so lanes and callbacks wait little for the writer.
    static let pruneBatch = 2_000

    /// Deletes finished outbox entries and ledger rows older than `retentionMs` before `now` (default:
    /// the engine's clock), in short transactions until none is left; returns how many. Does nothing
    /// when the engine keeps everything (`retentionMs` nil).
    @discardableResult
    public nonisolated func prune(now: Int64? = nil) async throws -> StoreTransaction.Pruned {
        // Callback marks whose timestamp left its freshness window (kept whatever `retention` says).
        let markCutoff = now ?? clock.nowMs()
        while !Task.isCancelled {
            let forgotten = try await store.groupedTransaction { try $0.forgetCallbackMarks(expiredBefore: markCutoff, limit: Self.pruneBatch) }
            if forgotten > 0 { metrics.increment("imbridge_pruned_total", ["table": "callback_marks"], by: forgotten) }
            if forgotten < Self.pruneBatch { break }
        }
        guard let retentionMs else { return StoreTransaction.Pruned() }
        let cutoff = (now ?? clock.nowMs()) - retentionMs
        var total = StoreTransaction.Pruned()
        while !Task.isCancelled {
            let pruned = try await store.groupedTransaction { try $0.prune(before: cutoff, limit: Self.pruneBatch) }
            total.outbox += pruned.outbox
            total.ledger += pruned.ledger
            total.attempts += pruned.attempts
            if pruned.outbox < Self.pruneBatch && pruned.ledger < Self.pruneBatch && pruned.attempts < Self.pruneBatch { break }
        }
        if total.outbox > 0 { metrics.increment("imbridge_pruned_total", ["table": "outbox"], by: total.outbox) }
        if total.ledger > 0 { metrics.increment("imbridge_pruned_total", ["table": "ledger"], by: total.ledger) }
        if total.attempts > 0 { metrics.increment("imbridge_pruned_total", ["table": "attempts"], by: total.attempts) }
        return total
    }

    /// Prunes once a minute (and once at start) while the engine runs and holds the leader lease (with
    /// several instances on one store, one of them prunes). Returns when the task is cancelled.
    public func pruneLoop() async {
        while !Task.isCancelled {
            if leadership.isLeader { _ = try? await prune() } else {
                try? await Task.sleep(nanoseconds: 1_000_000_000)
                continue
            }
            try? await Task.sleep(nanoseconds: 60_000_000_000)
        }
    }
}
