import Foundation
import Synchronization

/// The decoded payloads of outbox entries this process queued, so that a lane does not read again the
/// JSON that `ingest` wrote a moment before (reading it was ≈ 4 % of the bridge's CPU with `JSONDecoder`,
/// and is a quarter of that with `PayloadJSON`).
///
/// Contract: an entry is used only when its bytes are exactly the row's payload bytes, so a stale entry
/// (its transaction rolled back and the id reused, or the row changed) is never taken for the row. It is
/// bounded (`capacity` entries; when full, new payloads are not cached and the lane decodes the row), and
/// an entry is removed when taken. After a restart it is empty and every row is decoded.
package final class PayloadCache: Sendable {
    private struct Cached {
        var bytes: Data
        var payload: OutboxPayload
    }

    private let entries = Mutex<[Int64: Cached]>([:])
    package let capacity: Int

    package init(capacity: Int = 4096) { self.capacity = capacity }

    package func put(_ id: Int64, bytes: Data, payload: OutboxPayload) {
        entries.withLock { entries in
            if entries.count < capacity || entries[id] != nil { entries[id] = Cached(bytes: bytes, payload: payload) }
        }
    }

    /// The payload of the row `id` with `bytes`: from the cache when it holds those exact bytes, otherwise decoded.
    package func take(_ id: Int64, bytes: Data) throws -> OutboxPayload {
        if let cached = entries.withLock({ $0.removeValue(forKey: id) }), cached.bytes == bytes { return cached.payload }
        return try OutboxPayload.decode(bytes)
    }

    package var count: Int { entries.withLock { $0.count } }
}
