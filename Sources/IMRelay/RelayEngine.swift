import Foundation
import IMAdapterKit
import IMCore
import IMHTTP
import IMStore
import Logging
import Synchronization

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
    nonisolated let logger = Logger(label: "imbridge.relay")
    /// Sends: retries (throttled), dead letters. Backend state changes are logged by `HealthBoard`.
    nonisolated let deliveryLogger = Logger(label: "imbridge.delivery")
    nonisolated let storeLogger = Logger(label: "imbridge.store")
    /// A retry storm (a target answering 500 to every lane) logs at most one retry line per target
    /// backend every 5 s, carrying how many were held back; store errors one per operation every 5 s.
    nonisolated let retryLines = LogThrottle(intervalMs: 5_000)
    nonisolated let storeErrorLines = LogThrottle(intervalMs: 5_000)
    nonisolated let listenerLogger = Logger(label: "imbridge.listener")
    nonisolated let refusalLines = LogThrottle(intervalMs: 1_000)
    public nonisolated let metrics: RelayMetrics
    public nonisolated let health: HealthBoard
    nonisolated let backends: [BackendID: any IMBackend]
    package nonisolated let routes: RouteTable
    package nonisolated let clock: any IMClock
    nonisolated let retry: RetryPolicy
    nonisolated let maxConcurrentLanes: Int
    /// How long finished outbox entries and ledger rows are kept (nil: for ever); see `prune`.
    public nonisolated let retentionMs: Int64?
    nonisolated let doorbell: AsyncStream<Void>.Continuation
    private let bell: AsyncStream<Void>
    private var running: Set<LaneKey> = []
    private var laneTasks: [LaneKey: Task<Void, Never>] = [:]
    private var intakes: [any InboundHandling] = []
    private var scheduler: Task<Void, Never>?
    private var pruner: Task<Void, Never>?
    /// Set by `stop`, cleared by `start`; read by the lanes between entries without a hop to the actor
    /// (twice per relayed message: an atomic load instead of two executor switches).
    private nonisolated let stopping = Atomic<Bool>(false)
    /// The one delivery path per target (shared with migration).
    nonisolated let deliveries: [BackendID: Delivery]
    public nonisolated let customFallbacks: CustomTypeFallbacks?
    /// Where live intake meets catch-up (`CatchUpRunner`); admits everything while no source is watched.
    public nonisolated let catchUpGate = CatchUpGate()
    nonisolated let wakes = Mutex(Wakes())
    nonisolated let payloads = PayloadCache()
    /// This engine's lease owner name and lease length.
    public nonisolated let lease: LeaseSettings
    /// Whether this engine holds the leader lease (kept by `leaseLoop`).
    public nonisolated let leadership: Leadership
    private var leaseKeeper: Task<Void, Never>?
    /// This engine's leases as confirmed on its monotonic clock: asked before every vendor call.
    nonisolated let heldLeases: HeldLeases
    /// Conversations being caught up, held in the store for the other instances (PostgreSQL only).
    nonisolated let sharedHolds: SharedHolds
    /// Until when (monotonic nanoseconds) a read found no other instance's hold row at all: echo-only
    /// callbacks need no read of their own meanwhile (`noHoldElsewhere`).
    nonisolated let noForeignHoldsUntil = Mutex<UInt64>(0)
    /// The readiness probe in flight (`probeStore`), if any.
    nonisolated let storeProbe = ProbeSlot()
    /// Lanes whose lease another instance held when we last tried, until when not to try again on
    /// ingest's wake-ups alone (a scan, which leaves leased lanes out, starts them when they are free).
    private var heldElsewhere: [LaneKey: Int64] = [:]
    /// Lanes with work noticed while they were running (ingest named them, or a scan found their head
    /// due), with when (`noticeClock`): a lane that then ends drained is started again at once if the
    /// notice came after its last look at its head, since that work may have been queued after it.
    private var noticedWhileRunning: [LaneKey: UInt64] = [:]
    /// Counts notices; a lane reads it right before its last look at its head (`laneFinished`).
    nonisolated let noticeClock = Atomic<UInt64>(0)
    /// Lanes that could not start for want of a free slot, in the order they were turned away: a lane
    /// that ends hands its slot to the first of them (no scan of every lane head). Past `maxWaiting` more
    /// are not kept; the next lane to end causes a scan instead (`overflowed`).
    private var waiting = LaneQueue()
    /// Scans of every lane head so far (tests: a lane's end should not need one).
    nonisolated let scans = Atomic<Int>(0)
    private var overflowed = false
    static let maxWaiting = 100_000
    /// The lanes this engine works when started with `start(lanes:)` (a migration's); nil: every lane.
    private var onlyLanes: Set<LaneKey>?
    /// Each target's documented rate, applied to the entries a migration queued (`OutboxPayload.migration`).
    nonisolated let migrationPacing: [BackendID: MigrationPacing]
    /// `profiles:` (`ProfileSync`), and the puppets and active senders it keeps track of.
    nonisolated let profileSettings: ProfileSettings
    nonisolated let profiles = ProfileSync.Tracker()
    /// Target groups set up or queued for it (`GroupSync`).
    nonisolated let groupsSeen = GroupSync.Seen()
    /// `groups:` (`GroupSync`).
    nonisolated let groupSettings: GroupSettings
    private var groupSyncer: Task<Void, Never>?
    private var profiler: Task<Void, Never>?

    public init(store: BridgeStore, backends: [any IMBackend], routes: [Route], clock: any IMClock = SystemClock(),
                metrics: RelayMetrics = RelayMetrics(), retry: RetryPolicy = RetryPolicy(), maxConcurrentLanes: Int = 256,
                retentionMs: Int64? = RelayEngine.defaultRetentionMs, customFallbacks: CustomTypeFallbacks? = nil,
                lease: LeaseSettings = LeaseSettings(), leadership: Leadership = Leadership(),
                backendDownAfterMs: Int64? = ReadinessPolicy().backendFailingMs, migrationSendsPerSecond: Double? = nil,
                profiles: ProfileSettings = ProfileSettings(), groups: GroupSettings = GroupSettings()) {
        self.store = store
        self.profileSettings = profiles
        self.groupSettings = groups
        self.lease = lease
        self.leadership = leadership
        self.heldLeases = HeldLeases(ttlMs: lease.ttlMs)
        self.sharedHolds = SharedHolds(enabled: store.kind == .postgres, owner: lease.owner, ttlMs: lease.ttlMs)
        self.customFallbacks = customFallbacks
        self.backends = Dictionary(backends.map { ($0.id, $0) }, uniquingKeysWith: { first, _ in first })
        self.deliveries = self.backends.mapValues { Delivery(target: $0, store: store, retry: retry) }
        self.migrationPacing = self.backends.mapValues { MigrationPacing(capabilities: $0.capabilities, sendsPerSecond: migrationSendsPerSecond) }
        self.routes = RouteTable(routes)
        self.clock = clock
        self.metrics = metrics
        metrics.activity.use(clock: clock)
        // The outbox gauges are read from the store at scrape time (`RelayMetrics.scrape`).
        let targets = routes.flatMap { $0.direction == .both ? [$0.to.backend, $0.from.backend] : [$0.to.backend] }
        let configured = Set(backends.map(\.id))
        metrics.prepare(backends: backends.map(\.id), targets: Set(targets).filter(configured.contains).sorted { $0.rawValue < $1.rawValue })
        self.health = HealthBoard(backends: backends.map(\.id), downAfterMs: backendDownAfterMs)
        self.retry = retry
        self.maxConcurrentLanes = maxConcurrentLanes
        self.retentionMs = retentionMs
        (bell, doorbell) = AsyncStream<Void>.makeStream(bufferingPolicy: .bufferingNewest(1))
    }

    // MARK: lifecycle

    /// Starts the lane scheduler. Intake is separate: callbacks reach the engine through
    /// `BridgeListener`, and `startIntake` starts the sources that fetch on their own (pollers, event
    /// streams), all pushing into the engine as their `EventSink`.
    /// `pruning: false` leaves pruning to the caller (`imbridge run` runs `pruneLoop` as a service of
    /// its own).
    public func start(pruning: Bool = true) {
        guard scheduler == nil else { return }
        stopping.store(false, ordering: .releasing)
        onlyLanes = nil
        wakes.withLock { $0.scan = true }
        scheduler = Task { [weak self] in await self?.scheduleLoop() }
        leaseKeeper = Task { [weak self] in await self?.leaseLoop(sole: true) }
        if pruning && retentionMs != nil { pruner = Task { [weak self] in await self?.pruneLoop() } }
        profiler = Task { [weak self] in await self?.profileLoop() }
        groupSyncer = Task { [weak self] in await self?.groupLoop() }
        doorbell.yield()
    }

    /// Starts the lane scheduler for `lanes` only, as a guest on a store a bridge may be running on
    /// (`imbridge migrate`, docs/migration.md): the lanes are leased like any instance's, but no lease
    /// of another instance is dropped (not even on SQLite), the leader lease is not sought and nothing is
    /// pruned. A running bridge may work the same lanes; whoever holds a lane's lease runs it.
    public func start(lanes: Set<LaneKey>) {
        guard scheduler == nil else { return }
        stopping.store(false, ordering: .releasing)
        onlyLanes = lanes
        wakes.withLock { $0.scan = true }
        scheduler = Task { [weak self] in await self?.scheduleLoop() }
        leaseKeeper = Task { [weak self] in await self?.leaseLoop(sole: false) }
        doorbell.yield()
    }

    /// Stops the sources `startIntake` started (pollers, streams), and returns once they have.
    public func stopIntake() async {
        let sources = intakes
        intakes.removeAll()
        for source in sources { await source.stopIntake() }
    }

    /// Starts each source's own intake (`InboundHandling.startIntake`) into this engine; `stop()`
    /// stops them before the lanes.
    public func startIntake(_ sources: [any InboundHandling]) async throws {
        for source in sources {
            try await source.startIntake(into: self)
            intakes.append(source)
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
        stopping.store(true, ordering: .releasing)
        await stopIntake()
        scheduler?.cancel()
        scheduler = nil
        pruner?.cancel()
        pruner = nil
        profiler?.cancel()
        profiler = nil
        groupSyncer?.cancel()
        groupSyncer = nil
        leaseKeeper?.cancel()
        leaseKeeper = nil
        let tasks = Array(laneTasks.values)
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
                cutOff = laneTasks.count
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
        wakes.withLock { $0.scan = true }
        doorbell.yield()
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

    // MARK: lanes

    /// What woke the scheduler: lanes that ingest just queued work for, and whether the outbox must be
    /// scanned (start, `wake()`, a lane finished, which may have left due heads without a lane).
    struct Wakes: Sendable {
        var touched: Set<LaneKey> = []
        var scan = true
    }

    /// Starts lanes. A full scan of the lane heads (`dueLanes`, cost ∝ pending entries) runs only when
    /// asked for (start, `wake()`, a lane finishing — a due head may have been left without a lane, or
    /// without a free slot) or when the timer for retry heads (at most 1 s) fires. Ingest does not ask
    /// for one: it names the lanes it queued work for, and those not running are started directly
    /// (a running lane takes the new entry itself, or finishes and causes a scan). Scanning on every
    /// callback made the scheduler's cost grow with backlog × callback rate.
    private func scheduleLoop() async {
        var iterator = bell.makeAsyncIterator()
        var scanDueAt: Int64 = .min
        var timer: Task<Void, Never>?
        var timerAt: Int64 = .max
        while !Task.isCancelled && !isStopping {
            let now = clock.nowMs()
            let wakes = self.wakes.withLock { wakes -> Wakes in
                defer { wakes = Wakes(touched: [], scan: false) }
                return wakes
            }
            if wakes.scan || now >= scanDueAt {
                let owner = lease.owner
                scans.add(1, ordering: .relaxed)
                let due = (try? await store.reading { try $0.dueLaneKeys(at: now, leaseOwner: owner) }) ?? []
                if isStopping { break }   // stopped while the store answered: start nothing more
                overflowed = false
                for lane in due { startOrNotice(lane) }
                // Only heads waiting for a later time set the timer: a due head is running (its lane looks
                // at its head once more as it ends, or causes a scan) or waits in line for a free slot.
                let after = clock.nowMs()
                let next = (try? await store.reading { try $0.nextWakeUp(after: after) }) ?? nil
                scanDueAt = clock.nowMs() + (next.map { max(5, min(1000, $0 - clock.nowMs())) } ?? 1000)
            }
            for lane in wakes.touched where (heldElsewhere[lane] ?? .min) <= now { startOrNotice(lane) }
            // One timer at a time, replaced only by an earlier one: a timer per wake-up (cancelled at
            // the next) left thousands of dead entries in the dispatch timer heap under load.
            if scanDueAt < timerAt {
                timer?.cancel()
                timerAt = scanDueAt
                let waitMs = max(1, scanDueAt - clock.nowMs())
                timer = Task { [doorbell] in
                    try? await Task.sleep(nanoseconds: UInt64(waitMs) * 1_000_000)
                    doorbell.yield()
                }
            }
            _ = await iterator.next()
            if clock.nowMs() >= timerAt { (timer, timerAt) = (nil, .max) }   // it rang (or is ringing)
        }
        timer?.cancel()
    }

    /// Starts a lane unless it is running or the engine is stopping; when all slots are taken, the lane
    /// waits in line for the next one that frees up (`waiting`). A lane whose head is not due ends at once.
    private func startLane(_ lane: LaneKey) {
        guard !running.contains(lane), !isStopping, onlyLanes?.contains(lane) ?? true else { return }
        guard running.count < maxConcurrentLanes else {
            if !waiting.append(lane, limit: Self.maxWaiting) { overflowed = true }
            return
        }
        running.insert(lane)
        laneTasks[lane] = Task { [weak self] in await self?.runLane(lane) }
    }

    /// Starts `lane`, which has work due; a running one is noted, to be started again if it ends drained.
    private func startOrNotice(_ lane: LaneKey) {
        if running.contains(lane) {
            noticedWhileRunning[lane] = noticeClock.add(1, ordering: .sequentiallyConsistent).newValue
        } else {
            startLane(lane)
        }
    }

    /// `drained`: the lane ended because it had nothing more due (its lease released), with no step of
    /// the run having left work for later (a requeue, a retry). Then no scan is needed: work queued for it
    /// after its last claim was noticed (`noticedWhileRunning`) and starts it again here, or is noticed
    /// once it has ended and starts it then, and the slot it frees goes to the first lane waiting for one.
    /// Any other end causes a scan (a due head may have been left without a lane, a retry needs the
    /// timer), and so does any end while lanes turned away for want of a slot were not all kept. Scans on
    /// the timer (at least one a second) stay the safety net either way.
    /// `lookedAt`: `noticeClock` right before the lane last looked at its head; a notice up to it is
    /// work that look saw (it was queued before its notice was made).
    private func laneFinished(_ lane: LaneKey, drained: Bool, lookedAt: UInt64) {
        running.remove(lane)
        laneTasks[lane] = nil
        heldElsewhere[lane] = nil
        if let noticed = noticedWhileRunning.removeValue(forKey: lane), noticed > lookedAt { waiting.prepend(lane) }
        while running.count < maxConcurrentLanes, let next = waiting.popFirst() { startLane(next) }
        if drained && !overflowed { return }
        wakes.withLock { $0.scan = true }
        doorbell.yield()
    }

    /// The lane's lease is another instance's: nothing changed here, so no scan; its slot goes to the
    /// first lane waiting for one.
    private func laneRefused(_ lane: LaneKey) {
        running.remove(lane)
        laneTasks[lane] = nil
        noticedWhileRunning[lane] = nil
        while running.count < maxConcurrentLanes, let next = waiting.popFirst() { startLane(next) }
        heldElsewhere[lane] = clock.nowMs() + min(lease.ttlMs / 2, 1000)
        if heldElsewhere.count > 10_000 {
            let now = clock.nowMs()
            heldElsewhere = heldElsewhere.filter { $0.value > now }
        }
    }

    /// Renews this engine's leases every third of the lease length and tries for the leader lease.
    /// When renewing has failed for a whole lease length (store unreachable), leadership is given up.
    /// `sole: false` (a guest engine, `start(lanes:)`) only renews.
    private nonisolated func leaseLoop(sole: Bool) async {
        let (owner, ttl) = (lease.owner, lease.ttlMs)
        // An SQLite store has one instance: leases a killed predecessor left are its own to drop.
        if sole && store.kind == .sqlite {
            _ = try? await store.groupedTransaction { try $0.dropAllLeases() }
            wake()
        }
        var lastRenewal = clock.nowMs()
        while !Task.isCancelled {
            let now = clock.nowMs()
            do {
                // On a session of its own (`StoreSideSession.leases`): renewals never queue behind the
                // relay's writes, which a lock held by a frozen instance may keep waiting.
                let asked = ContinuousClock.now
                let (renewed, leader) = try await store.sideTransaction(.leases) { tx in
                    let renewed = try tx.renewLeases(owner: owner, ttlMs: ttl, now: now)
                    let leader = sole ? try tx.takeLease(LeaseSettings.leaderLease, owner: owner, ttlMs: ttl, now: now) != nil : false
                    return (renewed, leader)
                }
                heldLeases.renewed(renewed, askedAt: asked)
                leadership.set(leader)
                lastRenewal = now
            } catch {
                if clock.nowMs() - lastRenewal >= ttl { leadership.set(false) }
            }
            try? await Task.sleep(nanoseconds: UInt64(max(50, ttl / 3)) * 1_000_000)
        }
    }

    /// The first claim of a lane run: take (or renew) the lane's lease and claim its head together.
    enum FirstClaim: Sendable {
        case claimed(OutboxEntry, LeaseFence)
        case empty
        case refused
    }

    nonisolated var isStopping: Bool { stopping.load(ordering: .acquiring) }

    /// What a lane does after an entry: go on (with the next entry when the completing transaction
    /// already claimed it), or stop because its head waits for a retry.
    enum LaneStep: Sendable {
        case next(OutboxEntry?)
        /// The entry was recorded and the lane had nothing more due: its lease was released with it.
        case drained
        case wait
        /// The lane's lease lapsed or was taken over: this engine stops working the lane at once, writing
        /// nothing more for it (`HeldLeases`, `StoreTransaction.LeaseLost`).
        case fenced
    }

    /// Runs a lane's due entries in order. Each entry is claimed before its call leaves the process: the
    /// first in a transaction of its own, the following ones in the transaction that completes their
    /// predecessor (one write per relayed message instead of two).
    private nonisolated func runLane(_ lane: LaneKey) async {
        var claimed: OutboxEntry?
        var fence: LeaseFence?
        var refused = false, failed = false
        // Ended by a finish that claimed nothing, with nothing in the run left for later (`laneFinished`).
        var drained = false, leftWork = false
        var lookedAt: UInt64 = 0
        let (owner, ttl) = (lease.owner, lease.ttlMs)
        lanes: while !isStopping {
            let entry: OutboxEntry
            if let next = claimed, fence != nil {
                entry = next
                claimed = nil
            } else {
                let now = clock.nowMs()
                let outcome: FirstClaim
                let asked = ContinuousClock.now
                lookedAt = noticeClock.load(ordering: .sequentiallyConsistent)
                do {
                    outcome = try await store.groupedTransaction { tx -> FirstClaim in
                        guard let fence = try tx.takeLease(lane.leaseName, owner: owner, ttlMs: ttl, now: now) else { return .refused }
                        if let head = try tx.claimHead(of: lane, dueBy: now) { return .claimed(head, fence) }
                        try tx.releaseLease(lane.leaseName, owner: owner)
                        return .empty
                    }
                } catch {
                    logStoreError("claim", error, lane: lane)
                    failed = true
                    break lanes
                }
                switch outcome {
                case .claimed(let head, let taken):
                    heldLeases.took(taken, askedAt: asked)
                    fence = taken
                    entry = head
                case .empty:
                    drained = true
                    break lanes
                case .refused:
                    refused = true
                    break lanes
                }
            }
            switch await process(entry, fence: fence!) {
            case .next(let next):
                claimed = next
                // A dead letter or a requeue (whose pause the scheduler's timer must learn from a scan).
                if next == nil { leftWork = true }
            case .drained:
                // Another engine on the store (an instance, a migration) that queued work for this lane
                // while it was held here had its own start refused; what it queued after the finish's
                // claim is found by one read now that the lease is released, and claimed as a first claim.
                lookedAt = noticeClock.load(ordering: .sequentiallyConsistent)
                if let head = try? await store.reading({ try $0.head(of: lane) }), head.nextAttemptAt <= clock.nowMs() {
                    claimed = nil
                    continue lanes
                }
                drained = true
                break lanes
            case .wait: break lanes
            case .fenced:
                refused = true
                claimed = nil
                metrics.increment("imbridge_lanes_fenced_total", ["target": lane.backend.rawValue])
                logger.warning("lane lease lapsed or taken over: this instance stops working the lane (another one goes on)",
                               metadata: ["lane": "\(lane)", "backend": "\(lane.backend)"])
                break lanes
            }
        }
        heldLeases.released(lane.leaseName)
        // A lane cut off by a drain deadline gives its lease up too (another instance may take it at once),
        // and so does one that stops holding an entry it claimed but did not start (the stop came between
        // the claim and the call): a guest engine (`start(lanes:)`) stopping while the bridge goes on must
        // not hold the lane for a lease length.
        if failed || Task.isCancelled || claimed != nil {
            await Task { [store] in _ = try? await store.groupedTransaction { try $0.releaseLease(lane.leaseName, owner: owner) } }.value
        }
        if refused { await laneRefused(lane) } else { await laneFinished(lane, drained: drained && !leftWork && !failed, lookedAt: lookedAt) }
    }
}

/// Lanes in the order they were turned away for want of a slot, each at most once (`RelayEngine.waiting`).
struct LaneQueue {
    private var order: [LaneKey] = []
    private var head = 0
    private var members: Set<LaneKey> = []

    /// Adds `lane` at the end unless it is queued; false when `limit` lanes are queued already.
    mutating func append(_ lane: LaneKey, limit: Int) -> Bool {
        guard !members.contains(lane) else { return true }
        guard members.count < limit else { return false }
        members.insert(lane)
        order.append(lane)
        return true
    }

    /// Puts `lane` first (taking it from where it was queued).
    mutating func prepend(_ lane: LaneKey) {
        if members.contains(lane) {
            order.removeFirst(head)
            head = 0
            order.removeAll { $0 == lane }
        } else {
            members.insert(lane)
        }
        if head > 0 {
            head -= 1
            order[head] = lane
        } else {
            order.insert(lane, at: 0)
        }
    }

    mutating func popFirst() -> LaneKey? {
        guard head < order.count else { return nil }
        let lane = order[head]
        head += 1
        members.remove(lane)
        if members.isEmpty {
            order.removeAll(keepingCapacity: true)
            head = 0
        } else if head > 1024 && head * 2 > order.count {
            order.removeFirst(head)
            head = 0
        }
        return lane
    }
}
