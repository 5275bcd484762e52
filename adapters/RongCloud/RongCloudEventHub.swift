import Foundation
import IMCore
import Synchronization

/// Fans events out to every `events()` subscriber, in the order they were published, and drops a
/// repeat of a recently published `eventID` (a redelivered callback), so subscribers see each event
/// once while the caller of `RongCloudBackend.receive` still gets every parsed event back.
/// Remembers the last `memory` event ids.
final class RongCloudEventHub: Sendable {
    private struct State {
        var subscribers: [UUID: AsyncStream<IMEvent>.Continuation] = [:]
        var seen: RecentSet<EventID>
    }

    private let state: Mutex<State>
    let memory: Int

    init(memory: Int = 10_000) {
        self.memory = memory
        state = Mutex(State(seen: RecentSet(capacity: memory)))
    }

    func subscribe() -> AsyncStream<IMEvent> {
        let (stream, continuation) = AsyncStream<IMEvent>.makeStream(bufferingPolicy: .unbounded)
        let key = UUID()
        state.withLock { $0.subscribers[key] = continuation }
        continuation.onTermination = { [weak self] _ in
            _ = self?.state.withLock { $0.subscribers.removeValue(forKey: key) }
        }
        return stream
    }

    func publish(_ events: [IMEvent]) {
        state.withLock { state in
            for event in events where state.seen.insert(event.eventID).inserted {
                for continuation in state.subscribers.values { continuation.yield(event) }
            }
        }
    }

    func finish() {
        let subscribers = state.withLock { state in
            defer { state.subscribers.removeAll() }
            return Array(state.subscribers.values)
        }
        for continuation in subscribers { continuation.finish() }
    }
}
