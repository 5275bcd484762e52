import Foundation
import IMAdapterKit
import IMStore
import Logging
import Synchronization
import IMOutbox
import IMTelemetry

/// The engine's parts, each one concept: what `RelayEngine` holds besides the store, the backends and
/// its metrics (docs/architecture.md, "The engine's parts").
extension RelayEngine {
    /// The loggers and their throttles (docs/architecture.md, "Logging"). A retry storm (a target
    /// answering 500 to every lane) logs at most one retry line per target backend every 5 s, carrying
    /// how many were held back; store errors one per operation every 5 s; refused callbacks one per
    /// backend a second.
    struct Logs: Sendable {
        let relay = Logger(label: "imbridge.relay")
        /// Sends: retries (throttled), dead letters. Backend state changes are logged by `HealthBoard`.
        let delivery = Logger(label: "imbridge.delivery")
        let store = Logger(label: "imbridge.store")
        let listener = Logger(label: "imbridge.listener")
        let retryLines = LogThrottle(intervalMs: 5_000)
        let storeErrorLines = LogThrottle(intervalMs: 5_000)
        let refusalLines = LogThrottle(intervalMs: 1_000)
    }

    /// How the lanes run: retries, how many at once, how long finished work is kept.
    struct Policy: Sendable {
        let retry: RetryPolicy
        let maxConcurrentLanes: Int
        /// How long finished outbox entries and ledger rows are kept (nil: for ever); see `prune`.
        let retentionMs: Int64?
    }

    /// What wakes the lane scheduler, read and written without a hop to the actor.
    final class Signals: Sendable {
        let doorbell: AsyncStream<Void>.Continuation
        let bell: AsyncStream<Void>
        let wakes = Mutex(Wakes())
        /// Set by `stop`, cleared by `start`; read by the lanes between entries (twice per relayed
        /// message: an atomic load instead of two executor switches).
        let stopping = Atomic<Bool>(false)
        /// Counts notices; a lane reads it right before its last look at its head (`laneFinished`).
        let noticeClock = Atomic<UInt64>(0)
        /// Scans of every lane head so far (tests: a lane's end should not need one).
        let scans = Atomic<Int>(0)
        /// Rung when an entry is done or dead (`waitUntilFinished`).
        let finishes = Finishes()

        init() {
            (bell, doorbell) = AsyncStream<Void>.makeStream(bufferingPolicy: .bufferingNewest(1))
        }
    }

    /// The lanes' bookkeeping, the actor's own state.
    struct LaneBook {
        var running: Set<LaneKey> = []
        var tasks: [LaneKey: Task<Void, Never>] = [:]
        /// Lanes whose lease another instance held when we last tried, until when not to try again on
        /// ingest's wake-ups alone (a scan, which leaves leased lanes out, starts them when they are free).
        var heldElsewhere: [LaneKey: Int64] = [:]
        /// Lanes with work noticed while they were running (ingest named them, or a scan found their head
        /// due), with when (`noticeClock`): a lane that then ends drained is started again at once if the
        /// notice came after its last look at its head, since that work may have been queued after it.
        var noticedWhileRunning: [LaneKey: UInt64] = [:]
        /// Lanes that could not start for want of a free slot, in the order they were turned away: a lane
        /// that ends hands its slot to the first of them (no scan of every lane head). Past `maxWaiting`
        /// more are not kept; the next lane to end causes a scan instead (`overflowed`).
        var waiting = LaneQueue()
        var overflowed = false
        /// The lanes this engine works when started with `start(lanes:)` (a migration's); nil: every lane.
        var only: Set<LaneKey>?
    }

    /// The engine's own tasks, and the sources `startIntake` started.
    struct Loops {
        var scheduler: Task<Void, Never>?
        var pruner: Task<Void, Never>?
        var leaseKeeper: Task<Void, Never>?
        var profiler: Task<Void, Never>?
        var groupSyncer: Task<Void, Never>?
        var intakes: [any InboundHandling] = []
    }

    /// This engine's leases: its owner name and lease length, whether it leads, and the leases it holds
    /// as confirmed on its monotonic clock (asked before every vendor call).
    final class Leases: Sendable {
        let settings: LeaseSettings
        /// Kept by `leaseLoop`.
        let leadership: Leadership
        let held: HeldLeases

        init(settings: LeaseSettings, leadership: Leadership) {
            self.settings = settings
            self.leadership = leadership
            self.held = HeldLeases(ttlMs: settings.ttlMs)
        }
    }

    /// Where live intake meets catch-up: the gate, the holds shared with the other instances
    /// (PostgreSQL only), and until when (monotonic nanoseconds) a read found no other instance's hold
    /// row at all, so that echo-only callbacks need no read of their own meanwhile (`noHoldElsewhere`).
    package final class IntakeState: Sendable {
        /// Admits everything while no source is watched (`CatchUpRunner`).
        package let gate = CatchUpGate()
        package let holds: SharedHolds
        let noForeignHoldsUntil = Mutex<UInt64>(0)

        init(holds: SharedHolds) { self.holds = holds }
    }

    /// `profiles:` and `groups:` (`ProfileSync`, `GroupSync`): the puppets and active senders, and the
    /// target groups set up or queued.
    final class PeopleSync: Sendable {
        let profileSettings: ProfileSettings
        let profiles = ProfileSync.Tracker()
        let groupSettings: GroupSettings
        let groupsSeen = GroupSync.Seen()
        /// The conversation map as this process knows it, and the members of the groups it keeps.
        let portals = PortalCache()

        init(profiles: ProfileSettings, groups: GroupSettings) {
            self.profileSettings = profiles
            self.groupSettings = groups
        }
    }
}

/// Wakes those waiting for entries to end (`RelayEngine.waitUntilFinished`): each recorded or buried
/// entry rings it, and a waiter then reads the store. Cheap when nobody waits (one lock, an empty table).
final class Finishes: Sendable {
    private let waiters = Mutex<[UInt64: CheckedContinuation<Void, Never>]>([:])
    private let next = Atomic<UInt64>(0)

    func ring() {
        let woken = waiters.withLock { waiters -> [CheckedContinuation<Void, Never>] in
            guard !waiters.isEmpty else { return [] }
            defer { waiters.removeAll() }
            return Array(waiters.values)
        }
        for waiter in woken { waiter.resume() }
    }

    /// Returns at the next ring, or after `ms` at the latest.
    func wait(upToMs ms: Int64) async {
        let id = next.wrappingAdd(1, ordering: .relaxed).newValue
        await withCheckedContinuation { (waiter: CheckedContinuation<Void, Never>) in
            waiters.withLock { $0[id] = waiter }
            Task { [weak self] in
                try? await Task.sleep(nanoseconds: UInt64(max(1, ms)) * 1_000_000)
                self?.waiters.withLock { $0.removeValue(forKey: id) }?.resume()
            }
        }
    }
}
