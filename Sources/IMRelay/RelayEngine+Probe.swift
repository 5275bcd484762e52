import IMStore
import Synchronization

extension RelayEngine {
    /// What the readiness probe found (`probeStore`).
    public enum StoreProbe: Sendable, Equatable {
        case writable
        /// The write failed (read-only file, full disk, server refusing writes or unreachable).
        case unwritable
        /// No answer within the deadline (a lock held by a frozen instance, a server that stopped answering).
        case stuck
    }

    /// A real write to the store — a lease row of this instance's own taken and given back, so no other
    /// instance's lock can hold it — on the probe's own session (`StoreSideSession.probe`), answered
    /// within `withinMs` whatever the store does: a probe still running from an earlier call is waited
    /// for, not repeated, so a stuck store never piles probes up.
    public nonisolated func probeStore(withinMs: Int64 = 900) async -> StoreProbe {
        let probe = health.storeProbe.running.withLock { running -> Task<Bool, Never> in
            if let running { return running }
            let (store, owner, now, slot) = (store, lease.owner, clock.nowMs(), health.storeProbe)
            let started = Task<Bool, Never> {
                let name = "probe:\(owner)"
                let wrote = (try? await store.sideTransaction(.probe) { tx -> Bool in
                    let taken = try tx.takeLease(name, owner: owner, ttlMs: 60_000, now: now) != nil
                    try tx.releaseLease(name, owner: owner)
                    return taken
                }) ?? false
                slot.running.withLock { $0 = nil }
                return wrote
            }
            running = started
            return started
        }
        return await withTaskGroup(of: StoreProbe.self) { group in
            group.addTask { await probe.value ? .writable : .unwritable }
            group.addTask {
                try? await Task.sleep(nanoseconds: UInt64(max(1, withinMs)) * 1_000_000)
                return .stuck
            }
            let first = await group.next() ?? .stuck
            group.cancelAll()
            return first
        }
    }
}
