import Synchronization

/// At most one line per key and interval, for what can repeat without bound (a retry storm, a store
/// that keeps failing): `admit` says whether to log now and how many lines were held back since the
/// last one. Keys are kept until the next line for that key; the table is bounded by the keys (target
/// backends, operations), not by traffic.
public final class LogThrottle: Sendable {
    package let intervalMs: Int64
    private let state = Mutex<[String: (lastMs: Int64, held: Int)]>([:])

    public init(intervalMs: Int64) { self.intervalMs = intervalMs }

    /// nil: hold this line back. Otherwise the number of lines held back for `key` before it.
    public func admit(_ key: String, now: Int64) -> Int? {
        state.withLock { table in
            if let entry = table[key], now - entry.lastMs < intervalMs {
                table[key] = (entry.lastMs, entry.held + 1)
                return nil
            }
            let held = table[key]?.held ?? 0
            table[key] = (now, 0)
            return held
        }
    }
}
