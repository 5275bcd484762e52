import Foundation
import IMCore
import Synchronization

/// Fans events out to every `events()` subscription, with pull-based acknowledgement, so the report
/// poller saves its position only once the events were taken in.
///
/// Contract:
/// - Each subscription is an `AsyncStream` built by unfolding: it hands out one event per `next()`.
///   When a subscriber asks for the next event, every event it received before counts as consumed
///   (the bridge's pump stores each event before asking again).
/// - `waitUntilConsumed(upTo:)` returns once every current subscriber consumed events up to that
///   sequence number (or left), or after `ackTimeoutMs` — never blocking the poller forever on a
///   subscriber that stopped reading without cancelling.
/// - An event whose `eventID` was published recently is dropped (the poller and the routing push may
///   both see one message); the last `memory` ids are remembered.
final class EventHub: Sendable {
    private struct Subscriber {
        var queue: [(seq: Int64, event: IMEvent)] = []
        var waiting: CheckedContinuation<IMEvent?, Never>?
        var handedOut: Int64 = 0
        var consumed: Int64 = 0
        var finished = false
    }
    private struct State {
        var subscribers: [UUID: Subscriber] = [:]
        var nextSeq: Int64 = 0
        var recent: Set<EventID> = []
        var order: [EventID] = []
        var ackWaiters: [(seq: Int64, continuation: CheckedContinuation<Void, Never>)] = []
        var subscriberWaiters: [CheckedContinuation<Void, Never>] = []
        var finished = false
    }
    private let state = Mutex(State())
    private let memory: Int
    let ackTimeoutMs: Int64

    init(memory: Int = 10_000, ackTimeoutMs: Int64 = 10_000) {
        self.memory = memory
        self.ackTimeoutMs = ackTimeoutMs
    }

    var subscriberCount: Int { state.withLock { $0.subscribers.count } }

    func stream() -> AsyncStream<IMEvent> {
        let key = UUID()
        let waiters = state.withLock { state -> [CheckedContinuation<Void, Never>] in
            // A newcomer never receives what was published before it, so it has "consumed" all of that.
            state.subscribers[key] = Subscriber(handedOut: state.nextSeq, consumed: state.nextSeq, finished: state.finished)
            defer { state.subscriberWaiters.removeAll() }
            return state.subscriberWaiters
        }
        for waiter in waiters { waiter.resume() }
        // The token lives as long as the stream's closure: dropping the stream unsubscribes, as does cancelling.
        let token = SubscriptionToken { [weak self] in self?.remove(key) }
        return AsyncStream(unfolding: { [self, token] in
            _ = token
            return await self.next(key)
        }, onCancel: { [self] in self.remove(key) })
    }

    private func next(_ key: UUID) async -> IMEvent? {
        await withCheckedContinuation { (continuation: CheckedContinuation<IMEvent?, Never>) in
            let (immediate, acks) = state.withLock { state -> (IMEvent??, [CheckedContinuation<Void, Never>]) in
                guard var subscriber = state.subscribers[key] else { return (.some(nil), []) }
                subscriber.consumed = subscriber.handedOut
                var result: IMEvent?? = nil
                if !subscriber.queue.isEmpty {
                    let item = subscriber.queue.removeFirst()
                    subscriber.handedOut = item.seq
                    result = .some(item.event)
                } else if subscriber.finished {
                    result = .some(nil)
                } else {
                    subscriber.waiting = continuation
                }
                state.subscribers[key] = subscriber
                return (result, Self.releasedAcks(&state))
            }
            for ack in acks { ack.resume() }
            if let immediate { continuation.resume(returning: immediate) }
        }
    }

    private func remove(_ key: UUID) {
        let (waiting, acks) = state.withLock { state -> (CheckedContinuation<IMEvent?, Never>?, [CheckedContinuation<Void, Never>]) in
            let removed = state.subscribers.removeValue(forKey: key)
            return (removed?.waiting, Self.releasedAcks(&state))
        }
        waiting?.resume(returning: nil)
        for ack in acks { ack.resume() }
    }

    /// Acks whose sequence every subscriber has consumed (removes them from the state).
    private static func releasedAcks(_ state: inout State) -> [CheckedContinuation<Void, Never>] {
        let floor = state.subscribers.values.map(\.consumed).min() ?? Int64.max
        let released = state.ackWaiters.filter { $0.seq <= floor }
        state.ackWaiters.removeAll { $0.seq <= floor }
        return released.map(\.continuation)
    }

    /// Publishes the events not seen recently; returns them and the sequence number of the last one.
    @discardableResult
    func publish(_ events: [IMEvent]) -> (events: [IMEvent], lastSeq: Int64) {
        var handOff: [(CheckedContinuation<IMEvent?, Never>, IMEvent)] = []
        let result = state.withLock { state -> ([IMEvent], Int64) in
            var fresh: [(Int64, IMEvent)] = []
            for event in events where !state.recent.contains(event.eventID) {
                state.recent.insert(event.eventID)
                state.order.append(event.eventID)
                state.nextSeq += 1
                fresh.append((state.nextSeq, event))
            }
            if state.order.count > memory {
                let drop = state.order.count - memory
                for id in state.order.prefix(drop) { state.recent.remove(id) }
                state.order.removeFirst(drop)
            }
            for key in Array(state.subscribers.keys) {
                guard var subscriber = state.subscribers[key], !subscriber.finished else { continue }
                subscriber.queue += fresh.map { (seq: $0.0, event: $0.1) }
                if let waiting = subscriber.waiting, !subscriber.queue.isEmpty {
                    let item = subscriber.queue.removeFirst()
                    subscriber.handedOut = item.seq
                    subscriber.waiting = nil
                    handOff.append((waiting, item.event))
                }
                state.subscribers[key] = subscriber
            }
            return (fresh.map(\.1), state.nextSeq)
        }
        for (continuation, event) in handOff { continuation.resume(returning: event) }
        return result
    }

    /// Returns when every subscriber consumed up to `seq`, or after `ackTimeoutMs`.
    func waitUntilConsumed(upTo seq: Int64) async {
        let timeout = Task { [weak self, ackTimeoutMs] in
            try? await Task.sleep(nanoseconds: UInt64(ackTimeoutMs) * 1_000_000)
            self?.releaseAcks(upTo: seq)
        }
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let ready = state.withLock { state -> Bool in
                let floor = state.subscribers.values.map(\.consumed).min() ?? Int64.max
                if floor >= seq { return true }
                state.ackWaiters.append((seq, continuation))
                return false
            }
            if ready { continuation.resume() }
        }
        timeout.cancel()
    }

    private func releaseAcks(upTo seq: Int64) {
        let released = state.withLock { state -> [CheckedContinuation<Void, Never>] in
            let matching = state.ackWaiters.filter { $0.seq <= seq }
            state.ackWaiters.removeAll { $0.seq <= seq }
            return matching.map(\.continuation)
        }
        for continuation in released { continuation.resume() }
    }

    /// Returns once at least one subscriber exists.
    func waitForSubscriber() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let ready = state.withLock { state -> Bool in
                if !state.subscribers.isEmpty || state.finished { return true }
                state.subscriberWaiters.append(continuation)
                return false
            }
            if ready { continuation.resume() }
        }
    }

    /// Ends every subscription (after it has drained what it holds) and releases every waiter.
    func finish() {
        let (waiting, waiters) = state.withLock { state -> ([CheckedContinuation<IMEvent?, Never>], [CheckedContinuation<Void, Never>]) in
            state.finished = true
            let acks = state.ackWaiters.map(\.continuation)
            state.ackWaiters.removeAll()
            state.subscriberWaiters += acks
            var waiting: [CheckedContinuation<IMEvent?, Never>] = []
            for key in Array(state.subscribers.keys) {
                state.subscribers[key]?.finished = true
                if let continuation = state.subscribers[key]?.waiting {
                    waiting.append(continuation)
                    state.subscribers[key]?.waiting = nil
                }
            }
            defer { state.subscriberWaiters.removeAll() }
            return (waiting, state.subscriberWaiters)
        }
        for continuation in waiting { continuation.resume(returning: nil) }
        for waiter in waiters { waiter.resume() }
    }
}

/// Runs `onRelease` when the last reference goes away.
private final class SubscriptionToken: Sendable {
    let onRelease: @Sendable () -> Void
    init(_ onRelease: @escaping @Sendable () -> Void) { self.onRelease = onRelease }
    deinit { onRelease() }
}
