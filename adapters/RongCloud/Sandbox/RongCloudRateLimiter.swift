import IMCore
import IMHTTP
import Synchronization
import RongCloud

/// The documented per-endpoint rates (`Capabilities.rongCloud.rateLimits`, docs/adapters/rongcloud.md), enforced by the sandbox when started with
/// `--option rate_limits=true`: a sliding window per path; a request that would exceed it is answered
/// HTTP 429 `{"code":1008}` with `Retry-After` and does not count.
///
/// Costs follow the vendor: a private publish counts one message per `toUserId` (6000 per minute), a
/// system publish one per `toUserId` (100 per second), a group publish one per `toGroupId` (20 per
/// second), comma-joined values counted after splitting; token, recall, each expansion endpoint and
/// user info/refresh/checkOnline and the group endpoints count one per request (200, 100, 100, 100,
/// 100 per second).
final class RongCloudRateLimiter: Sendable {
    struct Rule: Sendable {
        var limit: Int
        var windowMs: Int64
    }

    /// By path: the preset names each limit by its endpoint's path without `/` and `.json`.
    static let documented: [String: Rule] = Dictionary(
        Capabilities.rongCloud.rateLimits.map { ("/\($0.api).json", Rule(limit: $0.requests, windowMs: $0.perMs)) }) { first, _ in first }

    private let spent = Mutex<[String: [(at: Int64, cost: Int)]]>([:])
    let clock: any IMClock

    init(clock: any IMClock) { self.clock = clock }

    /// The request's cost under the vendor's counting.
    static func cost(path: String, form: FormBody) -> Int {
        switch path {
        case RCPaths.privatePublish, RCSandboxPaths.systemPublish:
            max(1, RongCloudSandboxStore.splitRecipients(form.values("toUserId")).count)
        case RCPaths.groupPublish: max(1, RongCloudSandboxStore.splitRecipients(form.values("toGroupId")).count)
        default: 1
        }
    }

    /// Nil when the request fits; otherwise how long (ms) until it would.
    func admit(path: String, cost: Int) -> Int64? {
        guard let rule = Self.documented[path] else { return nil }
        let now = clock.nowMs()
        return spent.withLock { spent in
            var window = spent[path, default: []].filter { now - $0.at < rule.windowMs }
            defer { spent[path] = window }
            let used = window.reduce(0) { $0 + $1.cost }
            guard used + cost > rule.limit else {
                window.append((now, cost))
                return nil
            }
            return (window.first.map { $0.at + rule.windowMs - now }) ?? rule.windowMs
        }
    }
}
