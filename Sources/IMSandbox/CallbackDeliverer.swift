import Foundation
import IMCore
import IMHTTP

/// Delivers a vendor's callbacks to the configured URL the way vendors do: in order, retried until the
/// receiver answers 2xx, optionally batched.
///
/// Contract:
/// - Items leave in the order they were enqueued; a batch holds at most `maxBatch` items and is sent
///   `interval` after its first item arrived (0: at once), so several quick items share one request.
/// - A batch that gets a non-2xx answer or a transport failure is retried (backoff from `retryBase`
///   doubling up to `retryMax`) and blocks the items behind it — the same batch is sent again, rendered
///   afresh (new timestamp and signature), which is what makes receivers dedupe.
/// - `isSuccess` decides which answer status ends the retries (default: any 2xx; WuKongIM: exactly 200).
/// - `render` turns a batch into the HTTP request (the vendor's path, body and signature headers).
public actor CallbackDeliverer<Item: Sendable> {
    public typealias Render = @Sendable ([Item]) -> OutboundRequest

    public struct Stats: Sendable, Equatable {
        public var delivered: Int = 0
        public var attempts: Int = 0
        public var failures: Int = 0
        public var pending: Int = 0
    }

    private let render: Render
    private let maxBatch: Int
    private let intervalMs: Int64
    private let retryBaseMs: Int64
    private let retryMaxMs: Int64
    private let client: HTTPClientWrapper
    private let isSuccess: @Sendable (Int) -> Bool
    private var queue: [Item] = []
    private var inFlight = 0
    private var stats = Stats()
    private var worker: Task<Void, Never>?
    private var doorbell: AsyncStream<Void>.Continuation?
    private var idleWaiters: [CheckedContinuation<Void, Never>] = []

    public init(maxBatch: Int = 1, intervalMs: Int64 = 0, retryBaseMs: Int64 = 100, retryMaxMs: Int64 = 5000,
                timeoutSeconds: Int64 = 5, isSuccess: @escaping @Sendable (Int) -> Bool = { (200..<300).contains($0) },
                render: @escaping Render) {
        self.isSuccess = isSuccess
        self.render = render
        self.maxBatch = max(1, maxBatch)
        self.intervalMs = intervalMs
        self.retryBaseMs = retryBaseMs
        self.retryMaxMs = retryMaxMs
        self.client = HTTPClientWrapper(timeoutSeconds: timeoutSeconds)
    }

    public func enqueue(_ item: Item) {
        enqueue([item])
    }

    public func enqueue(_ items: [Item]) {
        guard !items.isEmpty else { return }
        queue.append(contentsOf: items)
        startIfNeeded()
        doorbell?.yield()
    }

    public var currentStats: Stats {
        var current = stats
        current.pending = queue.count
        return current
    }

    /// Returns once everything enqueued so far was delivered (or `timeoutMs` passed; then false).
    @discardableResult
    public func waitUntilIdle(timeoutMs: Int64 = 10_000) async -> Bool {
        if queue.isEmpty && inFlight == 0 { return true }
        let deadline = Task { [weak self] in
            try? await Task.sleep(nanoseconds: UInt64(timeoutMs) * 1_000_000)
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
            if intervalMs > 0 { try? await Task.sleep(nanoseconds: UInt64(intervalMs) * 1_000_000) }
            let batch = Array(queue.prefix(maxBatch))
            inFlight = batch.count
            var attempt = 0
            while !Task.isCancelled {
                stats.attempts += 1
                if await deliver(batch) { break }
                stats.failures += 1
                let delay = min(retryMaxMs, retryBaseMs << min(attempt, 20))
                attempt += 1
                try? await Task.sleep(nanoseconds: UInt64(delay) * 1_000_000)
            }
            if Task.isCancelled { return }
            queue.removeFirst(min(batch.count, queue.count))
            inFlight = 0
            stats.delivered += batch.count
        }
        if queue.isEmpty { releaseIdleWaiters() }
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
