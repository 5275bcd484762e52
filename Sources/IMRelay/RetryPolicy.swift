/// Backoff for retryable failures: `base · 2^attempt`, capped at `max`, with ±`jitter` spread so that
/// lanes failing together do not retry together; a vendor's `Retry-After` (or rate-limit block) wins
/// when it is longer. Retryable failures retry until they succeed (a vendor outage only delays);
/// permanent ones go to the dead letters at once.
public struct RetryPolicy: Sendable, Hashable {
    public var baseMs: Int64
    public var maxMs: Int64
    public var jitter: Double

    public init(baseMs: Int64 = 200, maxMs: Int64 = 60_000, jitter: Double = 0.2) {
        self.baseMs = baseMs
        self.maxMs = maxMs
        self.jitter = jitter
    }

    /// Delay before attempt number `attempt + 1` (attempt counts failures so far, from 0).
    public func delayMs(attempt: Int, retryAfterMs: Int64?, random: Double = Double.random(in: 0...1)) -> Int64 {
        let exponential = min(maxMs, baseMs << min(attempt, 30))
        let spread = Double(exponential) * jitter * (random * 2 - 1)
        let jittered = max(0, Int64(Double(exponential) + spread))
        return max(jittered, retryAfterMs ?? 0)
    }
}
