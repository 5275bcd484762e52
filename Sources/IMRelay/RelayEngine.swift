import Foundation
import IMAdapterKit
import IMCore
import IMHTTP
import IMStore
import Logging
import Synchronization
import IMOutbox
import IMTelemetry

/// The bridge pipeline (docs/architecture.md, "The path of one message"): ingest → ledger → echo check → routes → translate → outbox,
/// then one FIFO lane per (target backend, target conversation), lanes running concurrently.
///
/// Contract:
/// - `ingest` returns only after the events' ledger rows and outbox rows are committed in one SQLite
///   transaction; a callback receiver answers the vendor 200 only after it returns. A redelivered event
///   (same backend + eventID) is recorded once and relayed once.
/// - Within a lane, work runs strictly in order; a lane whose head waits for a retry (rate limit,
///   outage) holds only itself. Retryable failures back off (`RetryPolicy`) and retry until they
///   succeed or use up `RetryPolicy.maxAgeMs` (then: dead letter, the lane moves on);
///   permanent failures become dead letters and the lane moves on.
/// - Sends carry the client id `imb-<outbox id>`, so a vendor that dedupes on it keeps one copy when a
///   crash falls between its accept and our commit; the id map row is written in the same transaction
///   that completes the entry.
/// - Echo suppression: a message carrying our client-id prefix, a message the id map says we created,
///   or an event whose actor is one of our puppets/relay accounts is recorded and not relayed.
/// - `stop()` stops intake, lets each lane finish the entry in hand, and returns.
/// - Several engines may share one store (PostgreSQL, docs/high-availability.md): a lane is worked only
///   while this engine holds its lease (`LaneKey.leaseName`, taken with the lane's first claim, renewed
///   every third of `lease.ttlMs`, released when the lane runs dry); every claim is fenced by it. Pruning
///   and the pollers run only while this engine holds the leader lease (`leadership`).
public actor RelayEngine {
    public static let clientIDPrefix = "imb-"

    public nonisolated let store: BridgeStore
    public nonisolated let metrics: RelayMetrics
    public nonisolated let health: HealthBoard
    /// The backends, the routes and how an event is planned for a route leg (`Translator`), shared with
    /// migration and verify.
    package nonisolated let planner: Planner
    package nonisolated let clock: any IMClock
    nonisolated let policy: Policy
    /// The one delivery path per target (shared with migration), each with its migration pacing.
    package nonisolated let deliveries: [BackendID: Delivery]
    nonisolated let payloads = PayloadCache()
    nonisolated let logs = Logs()
    nonisolated let signals = Signals()
    nonisolated let leases: Leases
    package nonisolated let intake: IntakeState
    nonisolated let people: PeopleSync
    var book = LaneBook()
    var loops = Loops()

    nonisolated var backends: [BackendID: any IMBackend] { planner.backends }
    package nonisolated var routes: RouteTable { planner.routes }
    public nonisolated var customFallbacks: CustomTypeFallbacks? { planner.customFallbacks }
    /// How long finished outbox entries and ledger rows are kept (nil: for ever); see `prune`.
    public nonisolated var retentionMs: Int64? { policy.retentionMs }
    /// This engine's lease owner name and lease length.
    public nonisolated var lease: LeaseSettings { leases.settings }
    /// Whether this engine holds the leader lease (kept by `leaseLoop`).
    public nonisolated var leadership: Leadership { leases.leadership }
    /// Where live intake meets catch-up (`CatchUpRunner`); admits everything while no source is watched.
    public nonisolated var catchUpGate: CatchUpGate { intake.gate }
    static let maxWaiting = 100_000

    public init(store: BridgeStore, backends: [any IMBackend], routes: [Route], clock: any IMClock = SystemClock(),
                metrics: RelayMetrics = RelayMetrics(), retry: RetryPolicy = RetryPolicy(), maxConcurrentLanes: Int = 256,
                retentionMs: Int64? = RelayEngine.defaultRetentionMs, customFallbacks: CustomTypeFallbacks? = nil,
                lease: LeaseSettings = LeaseSettings(), leadership: Leadership = Leadership(),
                backendDownAfterMs: Int64? = ReadinessPolicy().backendFailingMs, migrationSendsPerSecond: Double? = nil,
                profiles: ProfileSettings = ProfileSettings(), groups: GroupSettings = GroupSettings()) {
        self.store = store
        self.people = PeopleSync(profiles: profiles, groups: groups)
        self.leases = Leases(settings: lease, leadership: leadership)
        self.intake = IntakeState(holds: SharedHolds(enabled: store.kind == .postgres, owner: lease.owner, ttlMs: lease.ttlMs))
        let byID = Dictionary(backends.map { ($0.id, $0) }, uniquingKeysWith: { first, _ in first })
        self.planner = Planner(backends: byID, routes: RouteTable(routes), customFallbacks: customFallbacks)
        self.deliveries = byID.mapValues {
            Delivery(target: $0, store: store, retry: retry,
                     migrationPacing: MigrationPacing(capabilities: $0.capabilities, sendsPerSecond: migrationSendsPerSecond))
        }
        self.clock = clock
        self.metrics = metrics
        metrics.activity.use(clock: clock)
        // The outbox gauges are read from the store at scrape time (`RelayMetrics.scrape`).
        let targets = routes.flatMap { $0.direction == .both ? [$0.to.backend, $0.from.backend] : [$0.to.backend] }
        let configured = Set(backends.map(\.id))
        metrics.prepare(backends: backends.map(\.id), targets: Set(targets).filter(configured.contains).sorted { $0.rawValue < $1.rawValue })
        self.health = HealthBoard(backends: backends.map(\.id), downAfterMs: backendDownAfterMs)
        self.policy = Policy(retry: retry, maxConcurrentLanes: maxConcurrentLanes, retentionMs: retentionMs)
    }

    // MARK: lifecycle

    /// Starts the lane scheduler. Intake is separate: callbacks reach the engine through
    /// `BridgeListener`, and `startIntake` starts the sources that fetch on their own (pollers, event
    /// streams), all pushing into the engine as their `EventSink`.
    /// `pruning: false` leaves pruning to the caller (`imbridge run` runs `pruneLoop` as a service of
    /// its own).
    public func start(pruning: Bool = true) {
        guard loops.scheduler == nil else { return }
        signals.stopping.store(false, ordering: .releasing)
        book.only = nil
        signals.wakes.withLock { $0.scan = true }
        loops.scheduler = Task { [weak self] in await self?.scheduleLoop() }
        loops.leaseKeeper = Task { [weak self] in await self?.leaseLoop(sole: true) }
        if pruning && retentionMs != nil { loops.pruner = Task { [weak self] in await self?.pruneLoop() } }
        loops.profiler = Task { [weak self] in await self?.profileLoop() }
        loops.groupSyncer = Task { [weak self] in await self?.groupLoop() }
        signals.doorbell.yield()
    }

    /// Starts the lane scheduler for `lanes` only, as a guest on a store a bridge may be running on
    /// (`imbridge migrate`, docs/migration.md): the lanes are leased like any instance's, but no lease
    /// of another instance is dropped (not even on SQLite), the leader lease is not sought and nothing is
    /// pruned. A running bridge may work the same lanes; whoever holds a lane's lease runs it.
    public func start(lanes: Set<LaneKey>) {
        guard loops.scheduler == nil else { return }
        signals.stopping.store(false, ordering: .releasing)
        book.only = lanes
        signals.wakes.withLock { $0.scan = true }
        loops.scheduler = Task { [weak self] in await self?.scheduleLoop() }
        loops.leaseKeeper = Task { [weak self] in await self?.leaseLoop(sole: false) }
        signals.doorbell.yield()
    }

    /// Lets a guest engine (`start(lanes:)`) run `lanes` too.
    public func admit(lanes: Set<LaneKey>) {
        guard book.only != nil else { return }
        book.only?.formUnion(lanes)
        wakeLanes(lanes)
    }

    /// Returns once each of the entries `ids` is done or dead, whoever runs its lane: woken by this
    /// engine's lanes as they end entries, and looking again every second for the entries another
    /// instance on the store runs. `progress` gets how many are ended each time it looks.
    package nonisolated func waitUntilFinished(_ ids: [Int64], progress: (Int) -> Void = { _ in }) async throws {
        while true {
            let open = try await store.reading { try $0.entries(ids: ids) }.count { $0.state == .pending }
            progress(ids.count - open)
            if open == 0 { return }
            try Task.checkCancellation()
            await signals.finishes.wait(upToMs: 1000)
        }
    }

    /// Returns after this engine's lanes end an entry, or after `ms` at the latest (a migration's page
    /// that waits for room in its lane).
    package nonisolated func entryFinished(upToMs ms: Int64) async {
        await signals.finishes.wait(upToMs: ms)
    }

    /// Stops the sources `startIntake` started (pollers, streams), and returns once they have.
    public func stopIntake() async {
        let sources = loops.intakes
        loops.intakes.removeAll()
        for source in sources { await source.stopIntake() }
    }

    /// Starts each source's own intake (`InboundHandling.startIntake`) into this engine; `stop()`
    /// stops them before the lanes.
    public func startIntake(_ sources: [any InboundHandling]) async throws {
        for source in sources {
            try await source.startIntake(into: self)
            loops.intakes.append(source)
        }
    }

    /// What `stop` did: how many lanes were sending when it began, how many it cut off at the drain
    /// deadline (their entries stay in the outbox, claimed, and run again at the next start), and how
    /// long it took.
    public struct StopReport: Sendable, Equatable {
        public var lanesInFlight = 0
        public var lanesCutOff = 0
        public var elapsedMs: Int64 = 0
    }

    /// Stops intake, lets running lanes finish the entry they hold, and returns when they have — or,
    /// with `drainMs`, when that long has passed: the lanes still sending are then cancelled (their
    /// calls are abandoned, their entries stay in the outbox). Cancelling the calling task cuts the
    /// drain short the same way. The leader lease is released either way.
    @discardableResult
    public func stop(drainMs: Int64? = nil) async -> StopReport {
        let started = clock.nowMs()
        signals.stopping.store(true, ordering: .releasing)
        await stopIntake()
        loops.scheduler?.cancel()
        loops.scheduler = nil
        loops.pruner?.cancel()
        loops.pruner = nil
        loops.profiler?.cancel()
        loops.profiler = nil
        loops.groupSyncer?.cancel()
        loops.groupSyncer = nil
        loops.leaseKeeper?.cancel()
        loops.leaseKeeper = nil
        let tasks = Array(book.tasks.values)
        var report = StopReport(lanesInFlight: tasks.count)
        // Waits for the lanes, or for the deadline (or the caller's cancellation), whichever comes first;
        // at the deadline the lanes still running are cancelled, and the group then sees them end.
        report.lanesCutOff = await withTaskGroup(of: Bool.self) { group -> Int in
            group.addTask { for task in tasks { await task.value }; return true }
            if let drainMs {
                group.addTask { try? await Task.sleep(nanoseconds: UInt64(max(0, drainMs)) * 1_000_000); return false }
            }
            let drained = await group.next() ?? true
            var cutOff = 0
            if !drained || Task.isCancelled {
                cutOff = book.tasks.count
                for task in tasks { task.cancel() }
            }
            group.cancelAll()
            return cutOff
        }
        leadership.set(false)
        let owner = lease.owner
        // In a task of its own: a cancelled caller's store call would be refused.
        await Task { [store] in _ = try? await store.groupedTransaction { try $0.releaseLease(LeaseSettings.leaderLease, owner: owner) } }.value
        report.elapsedMs = clock.nowMs() - started
        return report
    }

    /// Makes the scheduler look at the outbox now (after dead letters were put back, for instance).
    public nonisolated func wake() {
        signals.wakes.withLock { $0.scan = true }
        signals.doorbell.yield()
    }

    /// Waits until no outbox entry is pending (or `timeoutMs` passes); true when idle.
    public nonisolated func waitUntilIdle(timeoutMs: Int64 = 30_000) async -> Bool {
        let deadline = clock.nowMs() + timeoutMs
        while clock.nowMs() < deadline {
            if (try? await store.reading({ try $0.count(state: .pending) })) == 0 { return true }
            try? await Task.sleep(nanoseconds: 20_000_000)
        }
        return false
    }
}
