import Foundation
import IMCore

/// A token bucket: at most `perSecond` acquisitions per second on average, bursts up to `burst`.
/// Used by migration to stay under a target's documented send rate (`Capabilities.rateLimits`).
public actor RateLimiter {
    package let perSecond: Double
    package let burst: Double
    package var tokens: Double
    package var last: Date

    public init(perSecond: Double, burst: Double? = nil) {
        self.perSecond = max(0.001, perSecond)
        self.burst = max(1, burst ?? perSecond)
        self.tokens = self.burst
        self.last = Date()
    }

    /// The send rate a target documents for single sends into `kind` (any kind when nil): the tightest
    /// limit on a send/publish API (or a global one), batch APIs left out.
    public static func sendRate(of capabilities: Capabilities, for kind: ConversationRef.Kind? = nil) -> Double? {
        capabilities.rateLimits.filter { MigrationPacing.limitsSends($0, in: kind) }.map(\.perSecond).min()
    }

    /// Waits until a token is available, then takes it.
    public func acquire() async {
        while true {
            let now = Date()
            tokens = min(burst, tokens + now.timeIntervalSince(last) * perSecond)
            last = now
            if tokens >= 1 {
                tokens -= 1
                return
            }
            let wait = (1 - tokens) / perSecond
            try? await Task.sleep(nanoseconds: UInt64(wait * 1_000_000_000))
        }
    }
}

/// A migration's pacing: one token bucket per documented limit of the target, shared by every lane, so
/// that parallel conversations together stay under each limit. A send into a conversation takes a token
/// from each limit that applies to single sends of its kind (RongCloud: `message/private/publish` 100/s
/// for direct, `message/group/publish` 20/s for group conversations; NIM `msg/sendMsg` 100/s; JMessage's
/// global 600/min); any other call (recall, profiles, groups) from the global limits only ("*").
/// Batch APIs (`msg/sendBatchMsg`) are not used and do not count.
public struct MigrationPacing: Sendable {
    package let buckets: [(limit: RateLimit, limiter: RateLimiter)]
    /// One bucket for everything (`sendsPerSecond` given), or nil.
    package let single: RateLimiter?

    public init(capabilities: Capabilities, sendsPerSecond: Double? = nil) {
        if let sendsPerSecond {
            single = RateLimiter(perSecond: sendsPerSecond)
            buckets = []
        } else {
            single = nil
            buckets = capabilities.rateLimits.filter { Self.limitsSends($0, in: nil) || $0.api == "*" }
                .map { ($0, RateLimiter(perSecond: $0.perSecond)) }
        }
    }

    package static func limitsSends(_ limit: RateLimit, in kind: ConversationRef.Kind?) -> Bool {
        let api = limit.api.lowercased()
        guard !api.contains("batch"), ["send", "publish", "messages", "*"].contains(where: { api.contains($0) }) else { return false }
        switch kind {
        case .direct?: return !api.contains("group")
        case .group?: return !api.contains("private")
        default: return true
        }
    }

    /// Waits for a token of every limit that applies to a send into a conversation of `kind`.
    public func send(in kind: ConversationRef.Kind) async {
        if let single { return await single.acquire() }
        for bucket in buckets where Self.limitsSends(bucket.limit, in: kind) { await bucket.limiter.acquire() }
    }

    /// Waits for a token of the global limits (a call that is not a send).
    public func call() async {
        if let single { return await single.acquire() }
        for bucket in buckets where bucket.limit.api == "*" { await bucket.limiter.acquire() }
    }
}
