import Foundation
import IMAdapterKit
import IMCore
import IMStore
import Logging
import Synchronization

/// The lane scheduler: which lanes run, which wait for a slot, and the leases the engine keeps.
extension RelayEngine {
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
    func scheduleLoop() async {
        var iterator = signals.bell.makeAsyncIterator()
        var scanDueAt: Int64 = .min
        var timer: Task<Void, Never>?
        var timerAt: Int64 = .max
        while !Task.isCancelled && !isStopping {
            let now = clock.nowMs()
            let wakes = signals.wakes.withLock { wakes -> Wakes in
                defer { wakes = Wakes(touched: [], scan: false) }
                return wakes
            }
            if wakes.scan || now >= scanDueAt {
                let owner = lease.owner
                signals.scans.add(1, ordering: .relaxed)
                let due = (try? await store.reading { try $0.dueLaneKeys(at: now, leaseOwner: owner) }) ?? []
                if isStopping { break }   // stopped while the store answered: start nothing more
                book.overflowed = false
                for lane in due { startOrNotice(lane) }
                // Only heads waiting for a later time set the timer: a due head is running (its lane looks
                // at its head once more as it ends, or causes a scan) or waits in line for a free slot.
                let after = clock.nowMs()
                let next = (try? await store.reading { try $0.nextWakeUp(after: after) }) ?? nil
                scanDueAt = clock.nowMs() + (next.map { max(5, min(1000, $0 - clock.nowMs())) } ?? 1000)
            }
            for lane in wakes.touched where (book.heldElsewhere[lane] ?? .min) <= now { startOrNotice(lane) }
            // One timer at a time, replaced only by an earlier one: a timer per wake-up (cancelled at
            // the next) left thousands of dead entries in the dispatch timer heap under load.
            if scanDueAt < timerAt {
                timer?.cancel()
                timerAt = scanDueAt
                let waitMs = max(1, scanDueAt - clock.nowMs())
                timer = Task { [doorbell = signals.doorbell] in
                    try? await Task.sleep(nanoseconds: UInt64(waitMs) * 1_000_000)
                    signals.doorbell.yield()
                }
            }
            _ = await iterator.next()
            if clock.nowMs() >= timerAt { (timer, timerAt) = (nil, .max) }   // it rang (or is ringing)
        }
        timer?.cancel()
    }

    /// Starts a lane unless it is running or the engine is stopping; when all slots are taken, the lane
    /// waits in line for the next one that frees up (`waiting`). A lane whose head is not due ends at once.
    func startLane(_ lane: LaneKey) {
        guard !book.running.contains(lane), !isStopping, book.only?.contains(lane) ?? true else { return }
        guard book.running.count < policy.maxConcurrentLanes else {
            if !book.waiting.append(lane, limit: Self.maxWaiting) { book.overflowed = true }
            return
        }
        book.running.insert(lane)
        book.tasks[lane] = Task { [weak self] in await self?.runLane(lane) }
    }

    /// Starts `lane`, which has work due; a running one is noted, to be started again if it ends drained.
    func startOrNotice(_ lane: LaneKey) {
        if book.running.contains(lane) {
            book.noticedWhileRunning[lane] = signals.noticeClock.add(1, ordering: .sequentiallyConsistent).newValue
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
    func laneFinished(_ lane: LaneKey, drained: Bool, lookedAt: UInt64) {
        book.running.remove(lane)
        book.tasks[lane] = nil
        book.heldElsewhere[lane] = nil
        if let noticed = book.noticedWhileRunning.removeValue(forKey: lane), noticed > lookedAt { book.waiting.prepend(lane) }
        while book.running.count < policy.maxConcurrentLanes, let next = book.waiting.popFirst() { startLane(next) }
        if drained && !book.overflowed { return }
        signals.wakes.withLock { $0.scan = true }
        signals.doorbell.yield()
    }

    /// The lane's lease is another instance's: nothing changed here, so no scan; its slot goes to the
    /// first lane waiting for one.
    func laneRefused(_ lane: LaneKey) {
        book.running.remove(lane)
        book.tasks[lane] = nil
        book.noticedWhileRunning[lane] = nil
        while book.running.count < policy.maxConcurrentLanes, let next = book.waiting.popFirst() { startLane(next) }
        book.heldElsewhere[lane] = clock.nowMs() + min(lease.ttlMs / 2, 1000)
        if book.heldElsewhere.count > 10_000 {
            let now = clock.nowMs()
            book.heldElsewhere = book.heldElsewhere.filter { $0.value > now }
        }
    }

    /// Renews this engine's leases every third of the lease length and tries for the leader lease.
    /// When renewing has failed for a whole lease length (store unreachable), leadership is given up.
    /// `sole: false` (a guest engine, `start(lanes:)`) only renews.
    nonisolated func leaseLoop(sole: Bool) async {
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
                leases.held.renewed(renewed, askedAt: asked)
                let left = catchUpGate.holdsLeft(renewed.compactMap { SharedHolds.key(fromName: $0.name) })
                if !left.isEmpty {
                    logs.relay.notice("a conversation's hold in the store outlived its catch-up: caught up again, which gives the hold up",
                                      metadata: ["conversations": "\(left.map { "\($0.backend)/\($0.conversation)" })"])
                }
                leadership.set(leader)
                lastRenewal = now
            } catch {
                if clock.nowMs() - lastRenewal >= ttl { leadership.set(false) }
            }
            try? await Task.sleep(nanoseconds: UInt64(max(50, ttl / 3)) * 1_000_000)
        }
    }

    /// The first claim of a lane run: take (or renew) the lane's lease and claim its head together.
}
