/// Backoff for retryable failures: `base · 2^attempt`, capped at `max`, with ±`jitter` spread so that
/// lanes failing together do not retry together; a vendor's `Retry-After` (or rate-limit block) wins
/// when it is longer. Retryable failures retry until they succeed or the entry is older than `maxAgeMs`
/// (then it becomes a dead letter and its lane moves on; nil retries for ever); permanent ones go to the
/// dead letters at once.
public struct RetryPolicy: Sendable, Hashable {
    public var baseMs: Int64
    public var maxMs: Int64
    public var jitter: Double
    /// How long an entry may keep failing with retryable errors before it is given up (`retry.max_age`).
    public var maxAgeMs: Int64?

    public static let defaultMaxAgeMs: Int64 = 24 * 3_600_000

    public init(baseMs: Int64 = 200, maxMs: Int64 = 60_000, jitter: Double = 0.2, maxAgeMs: Int64? = RetryPolicy.defaultMaxAgeMs) {
        self.baseMs = baseMs
        self.maxMs = maxMs
        self.jitter = jitter
        self.maxAgeMs = maxAgeMs
    }

    /// Whether an entry created at `createdAt` has used up its time.
    public func isExhausted(createdAt: Int64, now: Int64) -> Bool {
        maxAgeMs.map { now - createdAt >= $0 } ?? false
    }

    /// Delay before attempt number `attempt + 1` (attempt counts failures so far, from 0).
    public func delayMs(attempt: Int, retryAfterMs: Int64?, random: Double = Double.random(in: 0...1)) -> Int64 {
        let exponential = min(maxMs, baseMs << min(attempt, 30))
        let spread = Double(exponential) * jitter * (random * 2 - 1)
        let jittered = max(0, Int64(Double(exponential) + spread))
        return max(jittered, retryAfterMs ?? 0)
    }
}
