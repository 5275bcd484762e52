import IMCore
import Synchronization

/// Ways a vendor's callbacks misbehave that a receiver must survive, armed from outside
/// (`POST /_sandbox/callbacks`, `SandboxServer`) for the next batches a `CallbackDeliverer` sends:
///
/// - `redeliver`: a batch that was answered success is sent once more right after (rendered afresh: new
///   timestamp and signature), as a vendor does whose own request timed out after the receiver took it;
/// - `twice`: a batch is sent as two requests at the same time (a vendor retrying while its first
///   attempt is still open); it counts as delivered when either is answered success;
/// - `swap`: a batch is held back and sent after the one queued behind it (if another arrives within
///   `swapWaitMs`; else alone). Only a receiver that can put a conversation back in order (WuKongIM's
///   `message_seq`) can be sent this: none of the vendors documents a window within which its callbacks
///   may arrive out of order (docs/reliability.md, "Fault kinds");
/// - `delay`: a batch waits `delay_ms` (default 5,000) before its first attempt, and every batch behind it
///   with it: a vendor whose callback queue runs behind, as WuKongIM's webhook queue does under load.
///   Whatever the receiver reads from the vendor's APIs meanwhile is newer than what its callbacks said;
/// - `drop_ms`: for that long, every batch that comes up is given up on unsent, as after the vendor's last
///   attempt (WuKongIM drops a `msg.notify` batch after 5 failed attempts and keeps its queue in memory):
///   callbacks lost while the receiver is up — what an instance paused and then killed leaves behind. A
///   sandbox whose vendor also pushes once, without retries (WuKongIM's `msg.offline`), loses those pushes
///   meanwhile too.
///
/// Each count is consumed one batch at a time; `armed` shows what is left.
public final class CallbackMisbehaviour: Sendable {
    public struct Armed: Sendable, Equatable {
        public var redeliver = 0
        public var twice = 0
        public var swap = 0
        public var delay = 0
        public init(redeliver: Int = 0, twice: Int = 0, swap: Int = 0, delay: Int = 0) {
            self.redeliver = redeliver
            self.twice = twice
            self.swap = swap
            self.delay = delay
        }
    }

    public enum Kind: Sendable { case redeliver, twice, swap, delay }

    /// How long a swapped batch waits for one behind it.
    public let swapWaitMs: Int64
    private let state = Mutex(Armed())
    /// How long a delayed batch waits (`delay_ms`, the last one armed).
    private let delayMsState = Mutex<Int64>(5_000)
    public var delayMs: Int64 { delayMsState.withLock { $0 } }
    /// Until when batches are dropped (`drop_ms`).
    private let dropUntil = Mutex<ContinuousClock.Instant?>(nil)
    /// Whether a batch coming up now is dropped (a sandbox's pushes sent once, outside the deliverer,
    /// consult it too: WuKongIM's `msg.offline`).
    public var dropping: Bool { dropUntil.withLock { $0.map { ContinuousClock.now < $0 } ?? false } }
    /// Batches that met each kind so far.
    private let carried = Mutex(Armed())

    public init(swapWaitMs: Int64 = 1_000) {
        self.swapWaitMs = swapWaitMs
    }

    /// Adds to the counts: `{"redeliver":N,"twice":N,"swap":N,"delay":N}` (each ≥ 0, at least one given;
    /// `delay_ms` ≥ 0 with `delay`), or starts a time of dropping: `{"drop_ms":M}`.
    public func arm(_ body: JSONValue) throws {
        var add = Armed()
        var given = false
        if let value = body["drop_ms"] {
            guard let ms = value.int64Value, ms >= 0 else { throw IMError(.invalidArgument, "drop_ms must be a whole number ≥ 0") }
            dropUntil.withLock { $0 = ContinuousClock.now + .milliseconds(ms) }
            given = true
        }
        if let value = body["delay_ms"] {
            guard let ms = value.int64Value, ms >= 0 else { throw IMError(.invalidArgument, "delay_ms must be a whole number ≥ 0") }
            delayMsState.withLock { $0 = ms }
        }
        for (key, path) in [("redeliver", \Armed.redeliver), ("twice", \Armed.twice), ("swap", \Armed.swap), ("delay", \Armed.delay)] {
            guard let value = body[key] else { continue }
            guard let count = value.int64Value, count >= 0 else { throw IMError(.invalidArgument, "\(key) must be a whole number ≥ 0") }
            add[keyPath: path] = Int(count)
            given = true
        }
        guard given else { throw IMError(.invalidArgument, "expected one of redeliver, twice, swap, delay (batches) or drop_ms") }
        arm(add)
    }

    public func arm(_ add: Armed) {
        state.withLock {
            $0.redeliver += add.redeliver
            $0.twice += add.twice
            $0.swap += add.swap
            $0.delay += add.delay
        }
    }

    public var armed: Armed { state.withLock { $0 } }
    /// Batches each kind was applied to.
    public var applied: Armed { carried.withLock { $0 } }

    /// Consumes one of `kind`; true when it was armed.
    func take(_ kind: Kind) -> Bool {
        let path: WritableKeyPath<Armed, Int> = switch kind {
        case .redeliver: \.redeliver
        case .twice: \.twice
        case .swap: \.swap
        case .delay: \.delay
        }
        let taken = state.withLock { armed -> Bool in
            guard armed[keyPath: path] > 0 else { return false }
            armed[keyPath: path] -= 1
            return true
        }
        if taken { carried.withLock { $0[keyPath: path] += 1 } }
        return taken
    }
}
