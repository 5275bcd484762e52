import Foundation
import IMCore
import IMHTTP
import Synchronization

/// How a sandbox delivers its callbacks: batching, how often a refused batch is tried, and when it is
/// given up. Vendors do not redeliver for ever (docs/operations.md, "When the bridge is down: catch-up"); each sandbox starts
/// from its vendor's policy (`WuKongSandbox`: WuKongIM's) and takes the same `--option` keys to change it:
///
/// | option | meaning |
/// |---|---|
/// | `callback_attempts=N` | attempts in total before a batch is dropped; `0` tries until it succeeds |
/// | `callback_retry_ms=N` | the pause after a failed attempt |
/// | `callback_retry_max_ms=N` | when larger than `callback_retry_ms`, the pause doubles per failure up to it |
public struct CallbackPolicy: Sendable, Equatable {
    /// Most items in one request.
    public var maxBatch: Int
    /// A batch is sent this long after its first item arrived (0: at once).
    public var intervalMs: Int64
    /// Attempts in total before the batch is dropped; nil: until it succeeds.
    public var maxAttempts: Int?
    /// The pause after a failed attempt (the first one when `retryMaxMs` is larger: it doubles up to it).
    public var retryMs: Int64
    public var retryMaxMs: Int64

    public init(maxBatch: Int = 1, intervalMs: Int64 = 0, maxAttempts: Int?, retryMs: Int64, retryMaxMs: Int64? = nil) {
        self.maxBatch = max(1, maxBatch)
        self.intervalMs = max(0, intervalMs)
        self.maxAttempts = maxAttempts.flatMap { $0 > 0 ? $0 : nil }
        self.retryMs = max(0, retryMs)
        self.retryMaxMs = max(self.retryMs, retryMaxMs ?? retryMs)
    }

    /// Tries until the receiver answers success; the pause doubles from `retryMs` to `retryMaxMs`.
    public static func untilDelivered(maxBatch: Int = 1, intervalMs: Int64 = 0, retryMs: Int64 = 100, retryMaxMs: Int64 = 5000) -> CallbackPolicy {
        CallbackPolicy(maxBatch: maxBatch, intervalMs: intervalMs, maxAttempts: nil, retryMs: retryMs, retryMaxMs: retryMaxMs)
    }

    public static let optionKeys = ["callback_attempts", "callback_retry_ms", "callback_retry_max_ms"]

    /// This policy changed by the `--option` keys above; a value that is not a number ≥ 0 is an
    /// `invalid_argument` naming the option.
    public func applying(_ options: [String: String]) throws -> CallbackPolicy {
        func number(_ key: String) throws -> Int64? {
            guard let text = options[key] else { return nil }
            guard let value = Int64(text.trimmingCharacters(in: .whitespaces)), value >= 0 else {
                throw IMError(.invalidArgument, "--option \(key)=\(text): expected a whole number ≥ 0", details: ["option": key])
            }
            return value
        }
        var policy = self
        if let attempts = try number("callback_attempts") { policy.maxAttempts = attempts == 0 ? nil : Int(attempts) }
        if let retry = try number("callback_retry_ms") {
            policy.retryMs = retry
            policy.retryMaxMs = max(retry, options["callback_retry_max_ms"] == nil ? retry : policy.retryMaxMs)
        }
        if let cap = try number("callback_retry_max_ms") { policy.retryMaxMs = max(policy.retryMs, cap) }
        return policy
    }

    /// The pause after failed attempt number `attempt` (1-based).
    func pauseMs(after attempt: Int) -> Int64 {
        min(retryMaxMs, retryMs << Int64(min(max(0, attempt - 1), 20)))
    }
}

/// Delivers a vendor's callbacks to the configured URL the way vendors do: in order, retried as the
/// `CallbackPolicy` says, optionally batched.
///
/// Contract:
/// - Items leave in the order they were enqueued; a batch holds at most `maxBatch` items and is sent
///   `intervalMs` after its first item arrived (0: at once), so several quick items share one request.
/// - A batch that gets a refused answer or a transport failure is tried again after the policy's pause
///   and blocks the items behind it (head-of-line) — the same batch is sent again, rendered afresh (new
///   timestamp and signature), which is what makes receivers dedupe. After `maxAttempts` attempts in
///   total it is dropped (counted in `Stats.dropped`) and the items behind it go on.
/// - The retry state lives in memory only: a sandbox that stops loses the batches it was retrying.
/// - `isSuccess` decides which answer status ends the retries (default: any 2xx; WuKongIM: exactly 200).
/// - The order of the queue is the order items were handed over. A sandbox that decides its messages'
///   order under a lock of its own (its store's) hands them over under that lock with `submit` and then
///   awaits `takeSubmitted`: an `await enqueue` made after the lock is released does not keep that
///   order, since two requests can reach this actor either way round (docs/reliability.md, Finding 12).
/// - `misbehaviour` can make the next batches arrive twice (after a success, or as two concurrent
///   requests), swapped with the batch behind them, or late (`CallbackMisbehaviour`, `POST /_sandbox/callbacks`).
/// - `render` turns a batch into the HTTP request (the vendor's path, body and signature headers).
public actor CallbackDeliverer<Item: Sendable> {
    public typealias Render = @Sendable ([Item]) -> OutboundRequest

    public struct Stats: Sendable, Equatable {
        public var delivered: Int = 0
        public var attempts: Int = 0
        public var failures: Int = 0
        public var pending: Int = 0
        /// Items given up on after the policy's last attempt.
        public var dropped: Int = 0
    }

    public let policy: CallbackPolicy
    /// Redeliveries, concurrent doubles and swapped batches armed from outside (`CallbackMisbehaviour`).
    public nonisolated let misbehaviour = CallbackMisbehaviour()
    private let render: Render
    private let client: HTTPClientWrapper
    private let isSuccess: @Sendable (Int) -> Bool
    private var queue: [Item] = []
    /// Items handed over with `submit`, in the order of the calls, not yet moved into `queue`.
    private let submitted = Mutex<[Item]>([])
    private var inFlight = 0
    private var stats = Stats()
    private var worker: Task<Void, Never>?
    private var doorbell: AsyncStream<Void>.Continuation?
    private var idleWaiters: [CheckedContinuation<Void, Never>] = []

    public init(policy: CallbackPolicy, timeoutSeconds: Int64 = 5,
                isSuccess: @escaping @Sendable (Int) -> Bool = { (200..<300).contains($0) }, render: @escaping Render) {
        self.policy = policy
        self.isSuccess = isSuccess
        self.render = render
        // A receiver that is down refuses the connection: that is one failed attempt, as for a vendor.
        self.client = HTTPClientWrapper(timeoutSeconds: timeoutSeconds)
    }

    /// Tries until delivered, the pause doubling from `retryBaseMs` to `retryMaxMs`.
    public init(maxBatch: Int = 1, intervalMs: Int64 = 0, retryBaseMs: Int64 = 100, retryMaxMs: Int64 = 5000,
                timeoutSeconds: Int64 = 5, isSuccess: @escaping @Sendable (Int) -> Bool = { (200..<300).contains($0) },
                render: @escaping Render) {
        self.init(policy: .untilDelivered(maxBatch: maxBatch, intervalMs: intervalMs, retryMs: retryBaseMs, retryMaxMs: retryMaxMs),
                  timeoutSeconds: timeoutSeconds, isSuccess: isSuccess, render: render)
    }

    public func enqueue(_ item: Item) {
        enqueue([item])
    }

    public func enqueue(_ items: [Item]) { admit(items) }

    /// Hands `items` over without waiting (so it can be called under the caller's own lock), in the order
    /// of the calls; `takeSubmitted` moves them into the queue.
    public nonisolated func submit(_ items: [Item]) {
        guard !items.isEmpty else { return }
        submitted.withLock { $0.append(contentsOf: items) }
    }

    /// Moves everything submitted so far into the queue, in the order it was submitted. A caller awaits it
    /// after its `submit`, so its items are queued (and `waitUntilIdle` waits for them) when it returns.
    public func takeSubmitted() { admit([]) }

    /// Queues what was submitted so far, then `items` (a recall enqueued after its message was submitted
    /// goes behind it).
    private func admit(_ items: [Item]) {
        let all = submitted.withLock { pending -> [Item] in
            defer { pending.removeAll() }
            return pending
        } + items
        guard !all.isEmpty else { return }
        queue.append(contentsOf: all)
        startIfNeeded()
        doorbell?.yield()
    }

    public var currentStats: Stats {
        var current = stats
        current.pending = queue.count + submitted.withLock { $0.count }
        return current
    }

    /// Returns once everything enqueued so far was delivered or dropped (or `timeoutMs` passed; then false).
    @discardableResult
    public func waitUntilIdle(timeoutMs: Int64 = 10_000) async -> Bool {
        takeSubmitted()
        if queue.isEmpty && inFlight == 0 { return true }
        let deadline = Task { [weak self] in
            try? await Task.sleep(nanoseconds: UInt64(timeoutMs) * 1_000_000)
            // Cancelled: the wait ended on its own; releasing now would end a later caller's wait early.
            if Task.isCancelled { return }
            await self?.releaseIdleWaiters()
        }
        await withCheckedContinuation { idleWaiters.append($0) }
        deadline.cancel()
        return queue.isEmpty && inFlight == 0
    }

    /// Stops delivering; undelivered items are dropped.
    public func stop() {
        worker?.cancel()
        worker = nil
        doorbell?.finish()
        doorbell = nil
        releaseIdleWaiters()
    }

    private func releaseIdleWaiters() {
        let waiters = idleWaiters
        idleWaiters.removeAll()
        for waiter in waiters { waiter.resume() }
    }

    private func startIfNeeded() {
        guard worker == nil else { return }
        let (bell, continuation) = AsyncStream<Void>.makeStream(bufferingPolicy: .bufferingNewest(1))
        doorbell = continuation
        worker = Task { [weak self] in
            for await _ in bell {
                guard let self else { return }
                await self.drain()
            }
        }
    }

    private func drain() async {
        while !queue.isEmpty, !Task.isCancelled {
            if policy.intervalMs > 0 { try? await Task.sleep(nanoseconds: UInt64(policy.intervalMs) * 1_000_000) }
            let batch = Array(queue.prefix(policy.maxBatch))
            if misbehaviour.dropping {
                // Lost, as after the vendor's last attempt.
                queue.removeFirst(batch.count)
                stats.dropped += batch.count
                continue
            }
            if misbehaviour.take(.delay) {
                // The vendor's queue runs behind: this batch and all behind it wait.
                try? await Task.sleep(nanoseconds: UInt64(misbehaviour.delayMs) * 1_000_000)
            }
            if misbehaviour.take(.swap) {
                // Held back: the batch behind it (if one comes in time) goes first.
                let waitUntil = ContinuousClock.now + .milliseconds(misbehaviour.swapWaitMs)
                while queue.count <= batch.count, ContinuousClock.now < waitUntil, !Task.isCancelled {
                    try? await Task.sleep(nanoseconds: 20_000_000)
                }
                let behind = Array(queue.dropFirst(batch.count).prefix(policy.maxBatch))
                if !behind.isEmpty {
                    inFlight = batch.count + behind.count
                    guard let delivered = await attempt(behind) else { return }
                    queue.removeSubrange(batch.count..<min(queue.count, batch.count + behind.count))
                    if delivered { stats.delivered += behind.count } else { stats.dropped += behind.count }
                }
            }
            inFlight = batch.count
            guard let delivered = await attempt(batch) else { return }
            queue.removeFirst(min(batch.count, queue.count))
            inFlight = 0
            if delivered { stats.delivered += batch.count } else { stats.dropped += batch.count }
        }
        if queue.isEmpty { releaseIdleWaiters() }
    }

    /// Sends `batch` until it is answered success (true) or the policy gives up (false); nil when stopped.
    /// Applies the armed `twice` (per attempt) and `redeliver` (after the success) misbehaviour.
    private func attempt(_ batch: [Item]) async -> Bool? {
        var attempt = 0
        while !Task.isCancelled {
            stats.attempts += 1
            attempt += 1
            let success: Bool
            if misbehaviour.take(.twice) {
                stats.attempts += 1
                async let first = deliver(batch)
                async let second = deliver(batch)
                let (one, other) = await (first, second)
                success = one || other
            } else {
                success = await deliver(batch)
            }
            if success {
                if misbehaviour.take(.redeliver) {
                    stats.attempts += 1
                    _ = await deliver(batch)
                }
                return true
            }
            stats.failures += 1
            if let most = policy.maxAttempts, attempt >= most { return false }
            try? await Task.sleep(nanoseconds: UInt64(policy.pauseMs(after: attempt)) * 1_000_000)
        }
        return nil
    }

    private func deliver(_ batch: [Item]) async -> Bool {
        do {
            let response = try await client.send(render(batch))
            return isSuccess(response.status)
        } catch {
            return false
        }
    }
}
