import IMConfig

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

extension RetryPolicy {
    /// `retry:` — `base`, `max` (≥ `base`), `max_age` (0s: retry for ever).
    package static func decode(_ section: ConfigSection) -> RetryPolicy {
        var retry = RetryPolicy()
        let base = section.duration("base", range: .positive, legacy: .init("base_ms", .milliseconds))
        if let base { retry.baseMs = base.value.milliseconds }
        if let max = section.duration("max", range: .positive, legacy: .init("max_ms", .milliseconds)) {
            if max.value.milliseconds < retry.baseMs {
                let baseKey = base.flatMap { $0.node.path.split(separator: ".").last.map(String.init) } ?? "base"
                let shownBase = base.map { $0.node.shown(ConfigDuration(milliseconds: retry.baseMs)) } ?? "\(ConfigDuration(milliseconds: retry.baseMs))"
                section.add(max.node.error("expected at least \(baseKey) (\(shownBase)), got \(max.node.shown(max.value))"))
            } else {
                retry.maxMs = max.value.milliseconds
            }
        }
        if let age = section.duration("max_age", range: DurationRange(minimum: .seconds(1), zero: "retries for ever"),
                                      legacy: .init("max_age_minutes", .minutes)) {
            retry.maxAgeMs = age.value == .zero ? nil : age.value.milliseconds
        }
        return retry
    }
}
