import IMCore
import Synchronization

/// Fans events out to every `events()` subscriber, in the order they were published, and drops an
/// event whose `eventID` was published recently (WuKong redelivers `msg.notify` batches and a change
/// can be seen by both the CMD and an extras sync). The last `memory` ids are remembered.
final class WuKongEventHub: Sendable {
    private struct State {
        var subscribers: [Int: AsyncStream<IMEvent>.Continuation] = [:]
        var next = 0
        var recent: RecentSet<EventID>
    }

    private let state: Mutex<State>

    init(memory: Int = 10_000) {
        state = Mutex(State(recent: RecentSet(capacity: memory)))
    }

    func subscribe() -> AsyncStream<IMEvent> {
        let (stream, continuation) = AsyncStream<IMEvent>.makeStream()
        let key = state.withLock { state in
            state.next += 1
            state.subscribers[state.next] = continuation
            return state.next
        }
        continuation.onTermination = { [weak self] _ in
            _ = self?.state.withLock { $0.subscribers.removeValue(forKey: key) }
        }
        return stream
    }

    /// Publishes the events not seen recently; returns how many were new.
    @discardableResult
    func publish(_ events: [IMEvent]) -> Int {
        state.withLock { state in
            var fresh = 0
            for event in events where state.recent.insert(event.eventID).inserted {
                fresh += 1
                for subscriber in state.subscribers.values { subscriber.yield(event) }
            }
            return fresh
        }
    }
}
