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
///   may arrive out of order (docs/reliability.md, "Fault kinds").
///
/// Each count is consumed one batch at a time; `armed` shows what is left.
public final class CallbackMisbehaviour: Sendable {
    public struct Armed: Sendable, Equatable {
        public var redeliver = 0
        public var twice = 0
        public var swap = 0
        public init(redeliver: Int = 0, twice: Int = 0, swap: Int = 0) {
            self.redeliver = redeliver
            self.twice = twice
            self.swap = swap
        }
    }

    public enum Kind: Sendable { case redeliver, twice, swap }

    /// How long a swapped batch waits for one behind it.
    public let swapWaitMs: Int64
    private let state = Mutex(Armed())
    /// Batches that met each kind so far.
    private let carried = Mutex(Armed())

    public init(swapWaitMs: Int64 = 1_000) {
        self.swapWaitMs = swapWaitMs
    }

    /// Adds to the counts: `{"redeliver":N,"twice":N,"swap":N}` (each ≥ 0, at least one given).
    public func arm(_ body: JSONValue) throws {
        var add = Armed()
        var given = false
        for (key, path) in [("redeliver", \Armed.redeliver), ("twice", \Armed.twice), ("swap", \Armed.swap)] {
            guard let value = body[key] else { continue }
            guard let count = value.int64Value, count >= 0 else { throw IMError(.invalidArgument, "\(key) must be a whole number ≥ 0") }
            add[keyPath: path] = Int(count)
            given = true
        }
        guard given else { throw IMError(.invalidArgument, "expected one of redeliver, twice, swap (batches)") }
        arm(add)
    }

    public func arm(_ add: Armed) {
        state.withLock {
            $0.redeliver += add.redeliver
            $0.twice += add.twice
            $0.swap += add.swap
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
