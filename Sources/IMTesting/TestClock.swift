import IMCore
import Synchronization

/// A clock that moves only when a test moves it. Starts at 2026-01-01T00:00:00Z unless told otherwise.
public final class TestClock: IMClock {
    private let now = Mutex<Int64>(1_767_225_600_000)

    public init(startMs: Int64? = nil) {
        if let startMs { now.withLock { $0 = startMs } }
    }

    public func nowMs() -> Int64 { now.withLock { $0 } }

    public func advance(byMs milliseconds: Int64) {
        now.withLock { $0 += milliseconds }
    }

    public func advance(bySeconds seconds: Int64) { advance(byMs: seconds * 1000) }

    public func set(ms: Int64) { now.withLock { $0 = ms } }
}
