import IMCore
import NIM
import Synchronization

/// NIM's documented per-app rate limits (docs/adapters/nim.md), off unless the sandbox is started with
/// `--option rate_limits=on`: `msg/sendMsg` and `msg/recall` 100/s, then the app is blocked for 10 s;
/// `msg/sendBatchMsg` 120/min. A refused call answers `{"code":416}` (HTTP 200). Windows are fixed,
/// measured on the sandbox clock, starting at the first call.
final class NIMSandboxRateLimiter: Sendable {
    struct Window {
        var start: Int64
        var count: Int
        var blockedUntil: Int64
    }

    let limits: [String: RateLimit]
    private let windows = Mutex<[String: Window]>([:])

    /// `limits` keyed by API name as in `Capabilities.rateLimits` (`msg/sendMsg` …).
    init(limits: [RateLimit]) {
        self.limits = Dictionary(limits.map { ($0.api, $0) }, uniquingKeysWith: { first, _ in first })
    }

    /// Counts one call to `path` (`/msg/sendMsg.action`) at `now`; false when it must be refused.
    func admit(path: String, now: Int64) -> Bool {
        let api = String(path.dropFirst().replacingOccurrences(of: ".action", with: ""))
        guard let limit = limits[api] else { return true }
        return windows.withLock { windows in
            var window = windows[api] ?? Window(start: now, count: 0, blockedUntil: 0)
            defer { windows[api] = window }
            if now < window.blockedUntil { return false }
            if now - window.start >= limit.perMs { window = Window(start: now, count: 0, blockedUntil: 0) }
            window.count += 1
            guard window.count > limit.requests else { return true }
            window.blockedUntil = now + (limit.blockMs ?? (limit.perMs - (now - window.start)))
            return false
        }
    }

    func reset() { windows.withLock { $0.removeAll() } }
}
