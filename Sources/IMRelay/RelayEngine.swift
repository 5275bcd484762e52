import Foundation
import IMCore
import IMHTTP
import IMStore
import Synchronization

/// The bridge pipeline (ARCHITECTURE §5): ingest → ledger → echo check → routes → translate → outbox,
/// then one FIFO lane per (target backend, target conversation), lanes running concurrently.
///
/// Contract:
/// - `ingest` returns only after the events' ledger rows and outbox rows are committed in one SQLite
///   transaction; a callback receiver answers the vendor 200 only after it returns. A redelivered event
///   (same backend + eventID) is recorded once and relayed once.
/// - Within a lane, work runs strictly in order; a lane whose head waits for a retry (rate limit,
///   outage) holds only itself. Retryable failures back off (`RetryPolicy`) and retry until they
///   succeed; permanent failures become dead letters and the lane moves on.
/// - Sends carry the client id `imb-<outbox id>`, so a vendor that dedupes on it keeps one copy when a
///   crash falls between its accept and our commit; the id map row is written in the same transaction
///   that completes the entry.
/// - Echo suppression: a message carrying our client-id prefix, a message the id map says we created,
///   or an event whose actor is one of our puppets/relay accounts is recorded and not relayed.
/// - `stop()` stops intake, lets each lane finish the entry in hand, and returns.
public actor RelayEngine {
    public static let clientIDPrefix = "imb-"

    public nonisolated let store: BridgeStore
    public nonisolated let metrics: RelayMetrics
    public nonisolated let health: HealthBoard
    nonisolated let backends: [BackendID: any IMBackend]
    nonisolated let routes: RouteTable
    nonisolated let clock: any IMClock
    nonisolated let retry: RetryPolicy
    nonisolated let maxConcurrentLanes: Int
    nonisolated let doorbell: AsyncStream<Void>.Continuation
    private let bell: AsyncStream<Void>
    private var running: Set<LaneKey> = []
    private var laneTasks: [LaneKey: Task<Void, Never>] = [:]
    private var pumps: [Task<Void, Never>] = []
    private var scheduler: Task<Void, Never>?
    private var stopping = false
    private var lastDepthGaugeMs: Int64 = .min / 2
    nonisolated let provisioned = Mutex<Set<String>>([])
    public nonisolated let customFallbacks: CustomTypeFallbacks?

    public init(store: BridgeStore, backends: [any IMBackend], routes: [Route], clock: any IMClock = SystemClock(),
                metrics: RelayMetrics = RelayMetrics(), retry: RetryPolicy = RetryPolicy(), maxConcurrentLanes: Int = 256,
                customFallbacks: CustomTypeFallbacks? = nil) {
        self.store = store
        self.customFallbacks = customFallbacks
        self.backends = Dictionary(backends.map { ($0.id, $0) }, uniquingKeysWith: { first, _ in first })
        self.routes = RouteTable(routes)
        self.clock = clock
        self.metrics = metrics
        self.health = HealthBoard(backends: backends.map(\.id))
        self.retry = retry
        self.maxConcurrentLanes = maxConcurrentLanes
        (bell, doorbell) = AsyncStream<Void>.makeStream(bufferingPolicy: .bufferingNewest(1))
    }

    // MARK: lifecycle

    /// Starts the lane scheduler and, when `pumpEvents`, a task per backend that ingests its `events()` —
    /// except backends that receive HTTP callbacks (`CallbackReceiving`): `BridgeListener` ingests those
    /// before answering the vendor.
    public func start(pumpEvents: Bool = true) {
        guard scheduler == nil else { return }
        stopping = false
        if pumpEvents {
            for backend in backends.values where !(backend is any CallbackReceiving) {
                let stream = backend.events()
                pumps.append(Task { [weak self] in
                    for await event in stream {
                        guard let self else { return }
                        await self.ingestUntilStored([event])
                    }
                })
            }
        }
        scheduler = Task { [weak self] in await self?.scheduleLoop() }
        doorbell.yield()
    }

    /// Stops intake, lets running lanes finish the entry they hold, and returns when they have.
    public func stop() async {
        stopping = true
        pumps.forEach { $0.cancel() }
        pumps.removeAll()
        scheduler?.cancel()
        scheduler = nil
        let tasks = Array(laneTasks.values)
        for task in tasks { await task.value }
    }

    /// Makes the scheduler look at the outbox now (after dead letters were put back, for instance).
    public nonisolated func wake() { doorbell.yield() }

    /// Waits until no outbox entry is pending (or `timeoutMs` passes); true when idle.
    public nonisolated func waitUntilIdle(timeoutMs: Int64 = 30_000) async -> Bool {
        let deadline = clock.nowMs() + timeoutMs
        while clock.nowMs() < deadline {
            if (try? store.read({ try $0.count(state: .pending) })) == 0 { return true }
            try? await Task.sleep(nanoseconds: 20_000_000)
        }
        return false
    }

    // MARK: intake

    public struct IngestResult: Sendable, Equatable {
        public var accepted = 0
        public var duplicates = 0
        public var echoes = 0
        public var queued = 0
    }

    /// Records events and queues their relays in one transaction (see the type's contract).
    @discardableResult
    public nonisolated func ingest(_ events: [IMEvent]) throws -> IngestResult {
        let now = clock.nowMs()
        var fallbacks: [(String, FallbackPolicy)] = []
        let result = try store.transaction { tx -> IngestResult in
            var result = IngestResult()
            for event in events {
                guard try tx.recordEvent(event.backend, event.eventID, kind: event.kindName, at: now) else {
                    result.duplicates += 1
                    continue
                }
                if try isEcho(event, tx) {
                    result.echoes += 1
                    continue
                }
                result.accepted += 1
                for leg in routes.legs(from: event.backend, conversation: event.conversation) {
                    guard let target = backends[leg.target] else { continue }
                    var translator = Translator(capabilities: target.capabilities, sourceCapabilities: backends[event.backend]?.capabilities)
                    if let table = customFallbacks {
                        let targetID = leg.target
                        translator.customFallback = { table.text(for: $0, expansion: $1, target: targetID) }
                    }
                    let planned = translator.plan(event, leg: leg)
                    fallbacks += planned.fallbacks
                    for action in planned.actions {
                        let payload = OutboxPayload(action: action, route: leg.route, eventTimeMs: Self.eventTime(event) ?? now,
                                                    sourceConversation: event.conversation)
                        try tx.enqueue(lane: LaneKey(backend: leg.target, conversation: leg.targetConversation),
                                       sourceBackend: event.backend, sourceEventID: event.eventID, kind: action.kindName,
                                       payload: payload.encoded(), at: now)
                        result.queued += 1
                    }
                }
            }
            return result
        }
        for event in events { metrics.increment("imbridge_events_in_total", ["backend": event.backend.rawValue, "kind": event.kindName]) }
        for (feature, policy) in fallbacks { metrics.increment("imbridge_fallbacks_total", ["feature": feature, "policy": policy.rawValue]) }
        if result.duplicates > 0 { metrics.increment("imbridge_duplicates_total", by: Double(result.duplicates)) }
        if result.echoes > 0 { metrics.increment("imbridge_echoes_total", by: Double(result.echoes)) }
        if result.queued > 0 { doorbell.yield() }
        return result
    }

    /// For event streams with no redelivery: keep trying until the store takes the events.
    private func ingestUntilStored(_ events: [IMEvent]) async {
        var attempt = 0
        while !Task.isCancelled {
            do {
                try ingest(events)
                return
            } catch {
                metrics.increment("imbridge_ingest_errors_total")
                try? await Task.sleep(nanoseconds: UInt64(retry.delayMs(attempt: attempt, retryAfterMs: nil)) * 1_000_000)
                attempt += 1
            }
        }
    }

    nonisolated func isEcho(_ event: IMEvent, _ tx: StoreTransaction) throws -> Bool {
        func bridge(_ user: UserID?) -> Bool { user.map { routes.isBridgeIdentity($0, on: event.backend) } ?? false }
        switch event.kind {
        case .message(let message):
            if message.clientMessageID?.rawValue.hasPrefix(Self.clientIDPrefix) == true { return true }
            if bridge(message.sender) { return true }
            return try tx.isBridgeCreated(message.id, on: event.backend)
        case .edited(_, _, let by, _, _), .recalled(_, _, let by, _):
            return bridge(by)
        case .expansionChanged(_, _, let by, _):
            return bridge(by)
        case .reaction(_, _, let user, _, _, _), .read(_, let user, _, _):
            return bridge(user)
        case .command(_, let sender, _, _):
            return bridge(sender)
        }
    }

    static func eventTime(_ event: IMEvent) -> Int64? {
        switch event.kind {
        case .message(let message): message.sentAt
        case .edited(_, _, _, _, let at), .recalled(_, _, _, let at), .reaction(_, _, _, _, _, let at), .read(_, _, _, let at),
             .command(_, _, _, let at): at
        case .expansionChanged: nil
        }
    }

    // MARK: lanes

    private func scheduleLoop() async {
        var iterator = bell.makeAsyncIterator()
        while !Task.isCancelled && !stopping {
            let now = clock.nowMs()
            let due = (try? store.read { try $0.dueLanes(at: now) }) ?? []
            for entry in due where !running.contains(entry.lane) && running.count < maxConcurrentLanes {
                running.insert(entry.lane)
                let lane = entry.lane
                laneTasks[lane] = Task { [weak self] in await self?.runLane(lane) }
            }
            // The depth gauge scans every pending entry: refresh it at most once a second, not on
            // every doorbell (under a backlog the bell rings for every callback batch).
            if now - lastDepthGaugeMs >= 1000, let depths = try? store.read({ try $0.laneDepths() }) {
                metrics.setGauge("imbridge_lane_depth", depths.mapValues(Double.init), label: "lane")
                lastDepthGaugeMs = now
            }
            // Only heads waiting for a later time set the timer: a due head is running (its lane rings
            // the bell when it finishes) or waits for a free lane slot (a finishing lane rings too).
            // Counting due heads here made the loop rescan the outbox every 5 ms under load.
            let next = (try? store.read { try $0.nextWakeUp(after: clock.nowMs()) }) ?? nil
            let waitMs = next.map { max(5, min(1000, $0 - clock.nowMs())) } ?? 1000
            let sleeper = Task { [doorbell] in
                try? await Task.sleep(nanoseconds: UInt64(waitMs) * 1_000_000)
                doorbell.yield()
            }
            _ = await iterator.next()
            sleeper.cancel()
        }
    }

    private func laneFinished(_ lane: LaneKey) {
        running.remove(lane)
        laneTasks[lane] = nil
        doorbell.yield()
    }

    private var isStopping: Bool { stopping }

    private nonisolated func runLane(_ lane: LaneKey) async {
        while await !isStopping {
            guard let entry = try? store.read({ try $0.head(of: lane) }), entry.nextAttemptAt <= clock.nowMs() else { break }
            let keepGoing = await process(entry)
            if !keepGoing { break }
        }
        await laneFinished(lane)
    }

    /// A change that refers to a message not relayed yet goes back to the end of its lane (after the
    /// message, if that is queued behind it), with a growing pause; after `maxRequeues` it is a dead letter.
    private nonisolated func requeueOrBury(_ entry: OutboxEntry, _ error: IMError) -> Bool {
        let now = clock.nowMs()
        do {
            var payload = try OutboxPayload.decode(entry.payload)
            let count = (payload.requeues ?? 0) + 1
            guard count <= Self.maxRequeues else { throw error }
            payload.requeues = count
            try store.transaction { tx in
                try tx.complete(entry.id, at: now)
                let id = try tx.enqueue(lane: entry.lane, sourceBackend: entry.sourceBackend, sourceEventID: entry.sourceEventID,
                                        kind: entry.kind, payload: payload.encoded(), at: now)
                try tx.reschedule(id, at: now + min(2000, 50 * Int64(count)), error: "waiting for the message it refers to")
            }
            metrics.increment("imbridge_requeued_total", ["target": entry.lane.backend.rawValue])
        } catch {
            try? store.transaction { try $0.markDead(entry.id, error: "\(error)", at: now) }
            metrics.increment("imbridge_dead_letters_total", ["target": entry.lane.backend.rawValue])
        }
        return true
    }

    /// How many times a change may wait for its message (≈ 2 minutes in all with the pauses above).
    static let maxRequeues = 80

    /// Runs one entry and records the outcome; false when the lane must wait (retry scheduled).
    private nonisolated func process(_ entry: OutboxEntry) async -> Bool {
        let target = entry.lane.backend.rawValue
        do {
            let payload = try OutboxPayload.decode(entry.payload)
            try store.transaction { try $0.claim(entry.id) }
            let created = try await execute(payload, entry: entry)
            let now = clock.nowMs()
            try store.transaction { tx in
                if let created, case .send(_, let source, _) = payload.action {
                    try tx.map(source: (entry.sourceBackend, source, payload.sourceConversation ?? created.conversation),
                               target: (entry.lane.backend, created.id, created.conversation), at: now)
                }
                try tx.complete(entry.id, at: now)
            }
            health.succeeded(entry.lane.backend, at: now)
            metrics.increment("imbridge_relayed_total", ["target": target, "action": entry.kind])
            metrics.observeLatency(seconds: Double(max(0, now - payload.eventTimeMs)) / 1000)
            return true
        } catch let error as IMError where error.details["unmapped"] != nil {
            return requeueOrBury(entry, error)
        } catch let error as IMError where error.isRetryable {
            let delay = retry.delayMs(attempt: max(0, entry.attempts), retryAfterMs: error.retryAfterMs)
            try? store.transaction { try $0.reschedule(entry.id, at: clock.nowMs() + delay, error: "\(error)") }
            health.failed(entry.lane.backend, error: error, at: clock.nowMs())
            metrics.increment("imbridge_retries_total", ["target": target])
            return false
        } catch {
            try? store.transaction { try $0.markDead(entry.id, error: "\(error)", at: clock.nowMs()) }
            metrics.increment("imbridge_dead_letters_total", ["target": target])
            return true
        }
    }
}
