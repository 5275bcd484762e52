import IMCore
import Synchronization

/// The sandbox's clock: real time plus an offset that `POST /_sandbox/clock {"advance_ms":N}` grows,
/// so tests can step past a recall window without waiting. `advance` never goes backwards; `skew`
/// (`POST /_sandbox/clock {"skew_ms":N}`) moves it either way, for a vendor whose clock is off against
/// the bridge's — set it before the traffic it should stamp: a clock moved back under stored messages
/// stamps new ones before them.
public final class SandboxClock: IMClock {
    private let base: any IMClock
    private let offset = Mutex<Int64>(0)

    public init(base: any IMClock = SystemClock()) {
        self.base = base
    }

    public func nowMs() -> Int64 { base.nowMs() + offset.withLock { $0 } }

    public func advance(byMs milliseconds: Int64) {
        precondition(milliseconds >= 0, "the sandbox clock only moves forward")
        offset.withLock { $0 += milliseconds }
    }

    /// Moves the clock by `milliseconds`, forward or back (a skew against real time).
    public func skew(byMs milliseconds: Int64) {
        offset.withLock { $0 += milliseconds }
    }
}
