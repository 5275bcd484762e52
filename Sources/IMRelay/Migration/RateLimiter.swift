import Foundation
import IMCore

/// A token bucket: at most `perSecond` acquisitions per second on average, bursts up to `burst`.
/// Used by migration to stay under a target's documented send rate (`Capabilities.rateLimits`).
public actor RateLimiter {
    let perSecond: Double
    let burst: Double
    var tokens: Double
    var last: Date

    public init(perSecond: Double, burst: Double? = nil) {
        self.perSecond = max(0.001, perSecond)
        self.burst = max(1, burst ?? perSecond)
        self.tokens = self.burst
        self.last = Date()
    }

    /// The send rate a target documents: the tightest limit on a send/publish API (or a global one).
    public static func sendRate(of capabilities: Capabilities) -> Double? {
        let relevant = capabilities.rateLimits.filter { limit in
            ["send", "publish", "messages", "*"].contains { limit.api.contains($0) }
        }
        return relevant.map(\.perSecond).min()
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
