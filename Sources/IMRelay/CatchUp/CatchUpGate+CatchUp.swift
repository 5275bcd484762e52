import IMAdapterKit
import IMCore
import Synchronization
import IMPositions

/// The catch-up's side of the gate: a conversation held after a failed read, a catch-up beginning and
/// reading, and its end, which hands back what was held (docs/architecture.md, "Order across the seam").
extension CatchUpGate {
    /// Catch-up of `key` failed: it holds its live messages (and its position) until it is read again.
    package func hold(_ key: Key) {
        state.withLock { state in
            state.lanes[key, default: Lane()].running = true
            state.lanes[key]?.missed = true
            state.requested[key] = nil
        }
    }

    /// Catch-up of `key` begins (it may already be marked running by a gap).
    package func begin(_ key: Key) {
        state.withLock { state in
            state.lanes[key, default: Lane()].running = true
            state.requested[key] = nil
        }
    }

    /// Before each read: whether anything was held since the previous call (and clears the mark).
    package func takeMissed(_ key: Key) -> Bool {
        state.withLock { state in
            let missed = state.lanes[key]?.missed ?? false
            state.lanes[key]?.missed = false
            return missed
        }
    }

    /// Catch-up of `key` read up to `seq` (`.sequence` sources): later live messages compare with it. A read
    /// that found the conversation empty passes 0: its first live message then has to be `seq` 1, and one
    /// further on shows that the ones before it were lost.
    package func caughtUp(_ key: Key, seq: Int64?) {
        guard let seq else { return }
        state.withLock { state in
            if seq > (state.lanes[key]?.lastSeq ?? -1) { state.lanes[key, default: Lane()].lastSeq = seq }
        }
    }

    /// Ends the catch-up of `key`: returns what was held, to be recorded now, or nil (and the lane stays
    /// held) when something was held after the last read and not `force`: the caller reads again. While
    /// what it returned is being recorded the conversation goes on holding its live messages; the caller
    /// calls again (with `force`) once they are recorded, for what came meanwhile, until none came — only
    /// an empty answer lets live messages through. Released with the first answer, a live message
    /// arriving while the held ones were recorded was recorded before them (seed 192, docs/reliability.md).
    ///
    /// On a `.sequence` source a `force`d answer stops at a gap when something was held after the last read
    /// began: the messages before the gap were sent after that read too, so no read has shown whether they
    /// exist. What lies past the gap stays held and a catch-up is asked for (`gap`), as for a live message
    /// that shows a gap. Without this, messages another instance or a lost callback missed were recorded
    /// after newer ones held here (seed 21, docs/reliability.md). A gap in what was held *before* the last
    /// read began is the read's answer (history has nothing between): those are handed back whole.
    package func finish(_ key: Key, force: Bool) -> [IMEvent]? {
        state.withLock { state in
            guard var lane = state.lanes[key] else { return [] }
            if lane.missed && !force { return nil }
            var held = lane.held
            var rest: [IMEvent] = []
            if lane.missed, state.signals[key.backend] == .sequence, let last = lane.lastSeq {
                (held, rest) = Self.upToGap(held, after: last)
            }
            lane.held = rest
            if held.isEmpty && rest.isEmpty { lane.running = false }
            lane.missed = !rest.isEmpty
            if !rest.isEmpty { state.requested[key] = "gap" }
            state.lanes[key] = lane
            return held
        }
    }

    /// `held` in `seq` order up to the first gap after `last`, and the rest (messages without a `seq` go
    /// with the first part).
    static func upToGap(_ held: [IMEvent], after last: Int64) -> (held: [IMEvent], rest: [IMEvent]) {
        func seq(_ event: IMEvent) -> Int64? { if case .message(let message) = event.kind { message.seq } else { nil } }
        let ordered = held.enumerated().sorted { (seq($0.element) ?? .min, $0.offset) < (seq($1.element) ?? .min, $1.offset) }.map(\.element)
        var next = last + 1
        for (index, event) in ordered.enumerated() {
            guard let seq = seq(event) else { continue }
            if seq > next { return (Array(ordered[..<index]), Array(ordered[index...])) }
            next = max(next, seq + 1)
        }
        return (ordered, [])
    }

    /// The start-up catch-up of `backend` has listed its conversations: from now on only conversations
    /// being caught up hold their live messages. Returns the conversations that held something meanwhile;
    /// they go on holding (marked running) until the caller has caught each up, so a message arriving now
    /// is not recorded before the held ones.
    package func started(_ backend: BackendID) -> [Key] {
        state.withLock { state in
            state.starting.remove(backend)
            let keys = state.lanes.filter { $0.key.backend == backend && !$0.value.held.isEmpty }.map(\.key)
                .sorted { $0.conversation.description < $1.conversation.description }
            for key in keys {
                state.lanes[key]?.running = true
                state.requested[key] = nil
            }
            return keys
        }
    }
}
