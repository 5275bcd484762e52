import Foundation
import Synchronization

/// What every adapter's `events()` is built on: fans events out to each subscriber in the order they
/// were published, and drops a repeat of a recently published `eventID` (a redelivered callback, or a
/// change seen both in a callback and in a sync), so subscribers see each event once while the caller
/// of an adapter's `receive` still gets every parsed event back. Remembers the last `memory` ids.
public final class EventFanout: Sendable {
    private struct State {
        var subscribers: [UUID: AsyncStream<IMEvent>.Continuation] = [:]
        var seen: RecentSet<EventID>
    }

    private let state: Mutex<State>
    public let memory: Int

    public init(memory: Int = 10_000) {
        self.memory = memory
        state = Mutex(State(seen: RecentSet(capacity: memory)))
    }

    /// A new subscription; it ends when the subscriber stops iterating or `finish()` is called.
    public func subscribe() -> AsyncStream<IMEvent> {
        let (stream, continuation) = AsyncStream<IMEvent>.makeStream(bufferingPolicy: .unbounded)
        let key = UUID()
        state.withLock { $0.subscribers[key] = continuation }
        continuation.onTermination = { [weak self] _ in
            _ = self?.state.withLock { $0.subscribers.removeValue(forKey: key) }
        }
        return stream
    }

    /// Publishes the events not seen recently; returns how many were new.
    @discardableResult
    public func publish(_ events: [IMEvent]) -> Int {
        state.withLock { state in
            var fresh = 0
            for event in events where state.seen.insert(event.eventID).inserted {
                fresh += 1
                for continuation in state.subscribers.values { continuation.yield(event) }
            }
            return fresh
        }
    }

    /// Ends every subscription.
    public func finish() {
        let subscribers = state.withLock { state in
            defer { state.subscribers.removeAll() }
            return Array(state.subscribers.values)
        }
        for continuation in subscribers { continuation.finish() }
    }
}
