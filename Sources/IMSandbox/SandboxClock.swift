import IMCore
import Synchronization

/// The sandbox's clock: real time plus an offset that `POST /_sandbox/clock {"advance_ms":N}` grows,
/// so tests can step past a recall window without waiting. Never goes backwards.
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
}
