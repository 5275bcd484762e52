import IMConfig
import IMCore
import Logging
import Synchronization

/// What `/healthz` says about each backend: `ok` after a successful call or a sign of life from it (a
/// callback that verified, a poll it answered), `degraded` while calls to it fail and are being retried
/// (with the class of the last error), `unknown` before any traffic.
///
/// `/healthz` is often reachable by more people than the logs: it shows error classes (`timeout`,
/// `connection_refused`, `http_5xx`, `http_429`, `auth` …), never the URLs, host names or vendor
/// response bodies an error's message may carry.
public final class HealthBoard: Sendable {
    /// The store's readiness probe in flight, if any (`RelayEngine.probeStore`).
    package let storeProbe = ProbeSlot()

    /// The readiness probe in flight.
    package final class ProbeSlot: Sendable {
        package let running = Mutex<Task<Bool, Never>?>(nil)
    }
    public struct Entry: Sendable, Codable, Equatable {
        public var state: String
        /// The last failure's class (`HealthBoard.errorClass`).
        public var lastErrorClass: String?
        public var lastSuccessMs: Int64?
        public var lastFailureMs: Int64?
        /// Age of the oldest pending outbox entry for this backend (filled in by `/healthz` from the store).
        public var oldestPendingAgeMs: Int64?
        /// The last sign of life the backend gave on its own: a callback that verified, or a poll it
        /// answered (`heard`). A backend that only sends into the bridge is `ok` by it.
        public var lastHeardMs: Int64?
        /// When the current run of failures began (the first failure after a success, or ever); nil
        /// while the backend is not failing. `/readyz` compares it with `ReadinessPolicy`.
        public var failingSinceMs: Int64?
        package enum CodingKeys: String, CodingKey {
            case state
            case lastErrorClass = "last_error_class"
            case lastSuccessMs = "last_success_ms"
            case lastFailureMs = "last_failure_ms"
            case oldestPendingAgeMs = "oldest_pending_age_ms"
            case failingSinceMs = "failing_since_ms"
            case lastHeardMs = "last_heard_ms"
        }

        /// A backend with no call yet.
        package static let unknown = Entry(state: "unknown")
    }

    private let entries: Mutex<[String: Entry]>
    /// State changes are logged here: `backend failing` (with the error class) when a backend's calls
    /// start failing, `backend recovered` (with how long it failed) at the next success, and
    /// `backend down` once a run of failures has lasted `downAfterMs` (the readiness threshold).
    package let logger: Logger
    package let downAfterMs: Int64?
    private let downLogged = Mutex<Set<String>>([])

    public init(backends: [BackendID], downAfterMs: Int64? = nil, logger: Logger = Logger(label: "imbridge.delivery")) {
        entries = Mutex(Dictionary(uniqueKeysWithValues: backends.map { ($0.rawValue, Entry(state: "unknown")) }))
        self.downAfterMs = downAfterMs
        self.logger = logger
    }

    public func succeeded(_ backend: BackendID, at now: Int64) {
        let failingSince = entries.withLock { table -> Int64? in
            var entry = table[backend.rawValue] ?? Entry(state: "ok")
            let since = entry.state == "degraded" ? entry.failingSinceMs : nil
            entry.state = "ok"
            entry.lastSuccessMs = now
            entry.failingSinceMs = nil
            table[backend.rawValue] = entry
            return since
        }
        if let failingSince {
            downLogged.withLock { _ = $0.remove(backend.rawValue) }
            logger.notice("backend recovered", metadata: ["backend": "\(backend)", "state": "up", "failed_for_ms": "\(max(0, now - failingSince))"])
        }
    }

    /// A sign of life from `backend` (a callback that verified, a poll it answered): a backend with no
    /// call yet becomes `ok`; a failing one stays failing (its sends still fail), its last sign of life noted.
    public func heard(_ backend: BackendID, at now: Int64) {
        entries.withLock { table in
            var entry = table[backend.rawValue] ?? Entry(state: "ok")
            if entry.state == "unknown" { entry.state = "ok" }
            entry.lastHeardMs = max(entry.lastHeardMs ?? now, now)
            table[backend.rawValue] = entry
        }
    }

    public func failed(_ backend: BackendID, error: IMError, at now: Int64) {
        let errorClass = Self.errorClass(error)
        let (began, since) = entries.withLock { table -> (Bool, Int64) in
            var entry = table[backend.rawValue] ?? Entry(state: "degraded")
            let began = entry.state != "degraded" || entry.failingSinceMs == nil
            if began { entry.failingSinceMs = now }
            entry.state = "degraded"
            entry.lastErrorClass = errorClass
            entry.lastFailureMs = now
            table[backend.rawValue] = entry
            return (began, entry.failingSinceMs ?? now)
        }
        if began {
            logger.warning("backend failing", metadata: ["backend": "\(backend)", "state": "failing", "error_class": "\(errorClass)"])
        } else if let downAfterMs, now - since >= downAfterMs, downLogged.withLock({ $0.insert(backend.rawValue).inserted }) {
            logger.error("backend down", metadata: ["backend": "\(backend)", "state": "down", "error_class": "\(errorClass)",
                                                    "failing_for_ms": "\(now - since)"])
        }
    }

    public var snapshot: [String: Entry] { entries.withLock { $0 } }

    /// The backends failing without a success for at least `thresholdMs` at `now`, by name (nil
    /// threshold: none ever counts as down).
    public func down(at now: Int64, thresholdMs: Int64?) -> [String] {
        guard let thresholdMs else { return [] }
        return snapshot.filter { _, entry in entry.failingSinceMs.map { now - $0 >= thresholdMs } ?? false }.keys.sorted()
    }

    /// A failure's class: a fixed word derived from the error's code, its HTTP status and its transport
    /// failure, never from its message (which may name a URL or quote a vendor's body).
    public static func errorClass(_ error: IMError) -> String {
        if let vendorCode = error.vendorCode, vendorCode.hasPrefix("http_"), let status = Int(vendorCode.dropFirst(5)) {
            switch status {
            case 429: return "http_429"
            case 401, 403: return "auth"
            case 500...599: return "http_5xx"
            default: return "http_4xx"
            }
        }
        if let transport = error.details["transport"], transport.allSatisfy({ $0.isLetter || $0 == "_" }) { return transport }
        switch error.code {
        case .timeout: return "timeout"
        case .authenticationFailed, .permissionDenied: return "auth"
        case .rateLimited: return "rate_limited"
        default: return error.code.rawValue
        }
    }
}

/// When `/readyz` says "not ready" because of a backend: after it has failed, with no success in
/// between, for `backendFailingMs` (config `readiness.backend_failing`, default 1m; 0s turns
/// this check off, leaving only the store's). A load balancer then sends callbacks to another instance,
/// and an alert fires on what the vendors' own retries would hide.
public struct ReadinessPolicy: Sendable, Equatable {
    public static let defaultBackendFailingSeconds = 60
    /// nil: a failing backend never makes the bridge unready.
    public var backendFailingMs: Int64?

    public init(backendFailingMs: Int64? = Int64(ReadinessPolicy.defaultBackendFailingSeconds) * 1000) {
        self.backendFailingMs = backendFailingMs
    }
}

extension ReadinessPolicy {
    /// `readiness:` — `backend_failing` (0s: failing backends never make `/readyz` 503).
    package static func decode(_ section: ConfigSection) -> ReadinessPolicy {
        guard let failing = section.duration("backend_failing", range: DurationRange(minimum: .seconds(1), zero: "never"),
                                             legacy: .init("backend_failing_seconds", .seconds)) else { return ReadinessPolicy() }
        return ReadinessPolicy(backendFailingMs: failing.value == .zero ? nil : failing.value.milliseconds)
    }
}
