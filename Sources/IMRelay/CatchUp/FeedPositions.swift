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
