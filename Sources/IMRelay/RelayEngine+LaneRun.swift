import Foundation
import IMAdapterKit
import IMCore
import IMStore
import Logging
import Synchronization

/// One lane's run: its first claim under the lane's lease, then its entries in order.
extension RelayEngine {
    enum FirstClaim: Sendable {
        case claimed(OutboxEntry, LeaseFence)
        case empty
        case refused
    }

    nonisolated var isStopping: Bool { signals.stopping.load(ordering: .acquiring) }

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
    nonisolated func runLane(_ lane: LaneKey) async {
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
                lookedAt = signals.noticeClock.load(ordering: .sequentiallyConsistent)
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
                    leases.held.took(taken, askedAt: asked)
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
                lookedAt = signals.noticeClock.load(ordering: .sequentiallyConsistent)
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
                logs.relay.warning("lane lease lapsed or taken over: this instance stops working the lane (another one goes on)",
                               metadata: ["lane": "\(lane)", "backend": "\(lane.backend)"])
                break lanes
            }
        }
        leases.held.released(lane.leaseName)
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
