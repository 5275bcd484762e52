import IMStore
import Synchronization

/// The leases this engine holds, as far as it can know without asking the store: when each tenure
/// (`LeaseFence`) was last confirmed — taken or renewed — on the process's monotonic clock, which a
/// pause (SIGSTOP, a frozen VM) does not fool: after the pause the time has passed.
///
/// The store's expiry of a lease is at least `ttl` after the renewal statement was sent (the renewal
/// sets it from the server's clock when it runs, later than the moment recorded here). So while
/// `mayWrite` holds, no other instance can have taken the lease over: a lane asks it right before each
/// vendor call (docs/high-availability.md, "Fenced deliveries"). `margin` covers the time between that
/// check and the request reaching the vendor.
final class HeldLeases: Sendable {
    private struct Held {
        var token: Int64
        /// When the last confirmation was asked for (its statement sent): what the lease's validity counts from.
        var confirmedAt: ContinuousClock.Instant
        /// When this engine learnt of the tenure (after its transaction committed). Only a renewal sent
        /// after that moment ran after the commit, so only its silence says the lease was taken over.
        var knownSince: ContinuousClock.Instant
    }

    private let held = Mutex<[String: Held]>([:])
    let ttl: Duration
    let margin: Duration

    init(ttlMs: Int64) {
        ttl = .milliseconds(ttlMs)
        margin = .milliseconds(min(ttlMs / 4, 2_000))
    }

    /// `fence` was taken by a statement sent at `askedAt`.
    func took(_ fence: LeaseFence, askedAt: ContinuousClock.Instant, now: ContinuousClock.Instant = .now) {
        held.withLock { held in
            if let known = held[fence.name], known.token == fence.token {
                held[fence.name]?.confirmedAt = max(known.confirmedAt, askedAt)
                return
            }
            held[fence.name] = Held(token: fence.token, confirmedAt: askedAt, knownSince: now)
        }
    }

    /// A renewal sent at `askedAt` extended `renewed`. A lease known here but not among them, known
    /// (committed) before the renewal was sent, was taken over meanwhile: it is forgotten. One taken by a
    /// transaction that committed while the renewal was under way may be missing from its answer without
    /// having been lost (a lane's claim queued behind other writes, the renewal on its own session).
    func renewed(_ renewed: [LeaseFence], askedAt: ContinuousClock.Instant) {
        let tokens = Dictionary(renewed.map { ($0.name, $0.token) }, uniquingKeysWith: { first, _ in first })
        held.withLock { held in
            for (name, known) in held {
                if tokens[name] == known.token {
                    if known.confirmedAt < askedAt { held[name]?.confirmedAt = askedAt }
                } else if known.knownSince < askedAt {
                    held[name] = nil
                }
            }
        }
    }

    func released(_ name: String) {
        held.withLock { _ = $0.removeValue(forKey: name) }
    }

    /// Whether a call guarded by `fence` may start now: the tenure is the one known here and its last
    /// confirmation is recent enough that the lease cannot have lapsed before the call arrives.
    func mayWrite(_ fence: LeaseFence, now: ContinuousClock.Instant = .now) -> Bool {
        guard let known = held.withLock({ $0[fence.name] }), known.token == fence.token else { return false }
        return now + margin < known.confirmedAt + ttl
    }

    var count: Int { held.withLock { $0.count } }
}

/// A lane's lease lapsed (not confirmed for longer than the lease minus the margin) before a vendor
/// call: the call is not made, and the lane stops (`HeldLeases.mayWrite`).
struct LeaseLapsed: Error, CustomStringConvertible {
    var fence: LeaseFence
    var description: String { "the lease \(fence.name) was not confirmed in time: no call started under it" }
}
