import IMCore
import IMHTTP
import Synchronization
import RongCloud

/// The documented per-endpoint rates (docs/adapters/rongcloud.md), enforced by the sandbox when started with
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

    static let documented: [String: Rule] = [
        RCPaths.getToken: Rule(limit: 200, windowMs: 1000),
        RCPaths.privatePublish: Rule(limit: 6000, windowMs: 60_000),
        RCPaths.groupPublish: Rule(limit: 20, windowMs: 1000),
        RCPaths.recall: Rule(limit: 100, windowMs: 1000),
        RCPaths.expansionSet: Rule(limit: 100, windowMs: 1000),
        RCPaths.expansionDelete: Rule(limit: 100, windowMs: 1000),
        RCPaths.expansionQuery: Rule(limit: 100, windowMs: 1000),
        RCSandboxPaths.systemPublish: Rule(limit: 100, windowMs: 1000),
        RCPaths.userInfo: Rule(limit: 100, windowMs: 1000),
        RCPaths.userRefresh: Rule(limit: 100, windowMs: 1000),
        RCSandboxPaths.userCheckOnline: Rule(limit: 100, windowMs: 1000),
    ].merging(RCPaths.groupPaths.map { ($0, Rule(limit: 100, windowMs: 1000)) }) { first, _ in first }

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
