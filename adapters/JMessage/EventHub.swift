import Foundation
import IMCore
import Synchronization

/// Fans events out to every `events()` subscription, dropping an event whose `eventID` was published
/// recently (the poller and the routing push may both see one message; the bridge's ledger dedupes
/// durably, this only keeps one process's stream clean). Remembers the last `memory` ids.
final class EventHub: Sendable {
    private struct State {
        var subscribers: [UUID: AsyncStream<IMEvent>.Continuation] = [:]
        var recent: Set<EventID> = []
        var order: [EventID] = []
    }
    private let state = Mutex(State())
    private let memory: Int

    init(memory: Int = 10_000) { self.memory = memory }

    func stream() -> AsyncStream<IMEvent> {
        let (stream, continuation) = AsyncStream<IMEvent>.makeStream(bufferingPolicy: .bufferingNewest(10_000))
        let key = UUID()
        state.withLock { $0.subscribers[key] = continuation }
        continuation.onTermination = { [weak self] _ in
            _ = self?.state.withLock { $0.subscribers.removeValue(forKey: key) }
        }
        return stream
    }

    /// Publishes the events not seen recently; returns them.
    @discardableResult
    func publish(_ events: [IMEvent]) -> [IMEvent] {
        let (fresh, subscribers) = state.withLock { state -> ([IMEvent], [AsyncStream<IMEvent>.Continuation]) in
            var fresh: [IMEvent] = []
            for event in events where !state.recent.contains(event.eventID) {
                state.recent.insert(event.eventID)
                state.order.append(event.eventID)
                fresh.append(event)
            }
            if state.order.count > memory {
                let drop = state.order.count - memory
                for id in state.order.prefix(drop) { state.recent.remove(id) }
                state.order.removeFirst(drop)
            }
            return (fresh, Array(state.subscribers.values))
        }
        for continuation in subscribers {
            for event in fresh { continuation.yield(event) }
        }
        return fresh
    }

    func finish() {
        let subscribers = state.withLock { state -> [AsyncStream<IMEvent>.Continuation] in
            defer { state.subscribers.removeAll() }
            return Array(state.subscribers.values)
        }
        for continuation in subscribers { continuation.finish() }
    }
}
