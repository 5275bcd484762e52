import IMAdapterKit
import IMCore
import IMStore

/// Change-feed positions in the store (docs/architecture.md, "Catch-up of changes"): written in the
/// transaction that records the events read up to them, so a restart reads a feed on from where what was
/// recorded ends — never from its start again (which would bring back changes whose ledger rows were
/// pruned, and relay them a second time), never past a change that was not recorded.
package enum FeedPositions {
    /// The stored position is behind the one the read started from: the read skipped changes an
    /// earlier read returned but never recorded. The batch is refused (the vendor delivers it again, or
    /// catch-up tries again) and the source reads from the stored position (`ChangeFeedSource.forgetPositions`).
    package struct Behind: Error, CustomStringConvertible {
        package var name: String
        package var stored: Int64?
        package var from: Int64
        package var description: String {
            "the change feed position \(name) is stored at \(stored.map(String.init) ?? "none"), behind \(from) where the read began: read again"
        }
    }

    /// Moves each position forward to where its read reached (never back); throws `Behind` when a read
    /// began past the stored position.
    package static func store(_ positions: [FeedPosition], _ tx: StoreTransaction, at now: Int64) throws {
        for position in positions {
            let name = position.checkpointName
            let stored = try tx.checkpoint(name).flatMap { Int64($0) }
            if let stored, stored >= position.to { continue }
            if let from = position.from, from > (stored ?? 0) { throw Behind(name: name, stored: stored, from: from) }
            try tx.setCheckpoint(name, String(position.to), at: now)
        }
    }

    /// Of a batch read from a feed's start (a position with no `from`: nothing was stored for it yet),
    /// the edits and reactions older than `retention` are left out: their ledger rows may be gone, and
    /// they would be relayed a second time as if new. Changes that carry no time (a revoke, an `extra`
    /// change) stay (docs/limits.md).
    package static func withoutStale(_ events: [IMEvent], positions: [FeedPosition], retentionMs: Int64?, now: Int64) -> [IMEvent] {
        guard let retentionMs else { return events }
        let fresh = Set(positions.filter { $0.from == nil }.map(\.conversation))
        guard !fresh.isEmpty else { return events }
        return events.filter { event in
            guard fresh.contains(event.conversation) else { return true }
            switch event.kind {
            case .edited(_, _, _, _, let at), .reaction(_, _, _, _, _, let at): return at >= now - retentionMs
            default: return true
            }
        }
    }

    /// Reads stored positions for a source (`ChangeFeedSource.useStoredPositions`) on every instance,
    /// leader or not: each takes callbacks that ask for feed reads.
    package struct Reader: CheckpointStorage {
        package let store: BridgeStore
        package init(store: BridgeStore) { self.store = store }
        package func checkpoint(named name: String) async throws -> String? {
            try await store.reading { try $0.checkpoint(name) }
        }
        package func setCheckpoint(named name: String, to value: String) async throws {
            try await store.writing { try $0.setCheckpoint(name, value, at: SystemClock().nowMs()) }
        }
    }
}
