import IMCore
import Synchronization

/// What `/healthz` says about each backend: `ok` after a successful call, `degraded` while calls to it
/// fail and are being retried (with the last error), `unknown` before any traffic.
public final class HealthBoard: Sendable {
    public struct Entry: Sendable, Codable, Equatable {
        public var state: String
        public var lastError: String?
        public var lastSuccessMs: Int64?
        public var lastFailureMs: Int64?
        enum CodingKeys: String, CodingKey {
            case state
            case lastError = "last_error"
            case lastSuccessMs = "last_success_ms"
            case lastFailureMs = "last_failure_ms"
        }
    }

    private let entries: Mutex<[String: Entry]>

    public init(backends: [BackendID]) {
        entries = Mutex(Dictionary(uniqueKeysWithValues: backends.map { ($0.rawValue, Entry(state: "unknown")) }))
    }

    public func succeeded(_ backend: BackendID, at now: Int64) {
        entries.withLock { $0[backend.rawValue, default: Entry(state: "ok")].state = "ok"; $0[backend.rawValue]?.lastSuccessMs = now }
    }

    public func failed(_ backend: BackendID, error: IMError, at now: Int64) {
        entries.withLock { table in
            var entry = table[backend.rawValue] ?? Entry(state: "degraded")
            entry.state = "degraded"
            entry.lastError = error.description
            entry.lastFailureMs = now
            table[backend.rawValue] = entry
        }
    }

    public var snapshot: [String: Entry] { entries.withLock { $0 } }
}
