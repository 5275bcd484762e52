import IMAdapterKit
import IMCore
import Synchronization
import IMPositions

/// The seam between live intake and catch-up (docs/architecture.md, "Catch-up"): every batch a source's
/// callback delivers passes `admit` before the engine records it.
///
/// - While a conversation is being caught up (or its backend's start-up catch-up has not yet listed its
///   conversations), its live messages are **held**, not recorded: the history read that is under way (or
///   one more, started because something was held) returns them in source order, and catch-up records
///   them in that order. So a live message never overtakes older messages catch-up is still reading.
///   What is held is recorded after the catch-up (the ledger drops those the read already took), so a
///   failed read loses nothing the callback brought.
/// - For a `.sequence` source (WuKongIM), a live message whose `seq` is more than one past the last one
///   recorded in its conversation shows a gap: it is held and a catch-up of that conversation is asked for.
/// - The last recorded message of each conversation, and the sender seen (a member, for reading history
///   as and for listing a user's conversations), are kept for catch-up's checkpoints (`drainObserved`).
///   A conversation seen for the first time gets its checkpoint in the transaction that records its
///   message (`unknownConversations`), not a second later: a SIGKILL in between would leave the next start
///   unaware of it, and what its vendor then gave up delivering would never be read back.
public final class CatchUpGate: Sendable {
    public typealias Key = CatchUpKey

    /// What live traffic showed about a conversation since the last `drainObserved`.
    package struct Observed: Sendable {
        package var sender: UserID?
        /// The newest message recorded in order (`.sequence` sources only).
        package var last: Message?
    }

    struct Lane: Sendable {
        var lastSeq: Int64?
        var running = false
        /// Something was held since the running read began: read again before finishing.
        var missed = false
        var held: [IMEvent] = []
    }

    struct State: Sendable {
        var signals: [BackendID: CatchUpGapSignal] = [:]
        /// Backends whose start-up catch-up has not listed their conversations yet: all their live
        /// messages are held.
        var starting: Set<BackendID> = []
        var lanes: [Key: Lane] = [:]
        var observed: [Key: Observed] = [:]
        /// Conversations asked for (a gap, or held while starting) and not yet taken by the runner.
        var requested: [Key: String] = [:]
        /// Conversations with a checkpoint in the store (so a restart knows them).
        var known: Set<Key> = []
        /// Conversations whose live messages this instance refused because another instance holds them
        /// (`SharedHolds`), to be checked once that hold is gone.
        var elsewhere: Set<Key> = []
        /// The last message a catch-up read of each conversation confirmed (its time and id).
        var confirmed: [Key: (at: Int64, id: String)] = [:]
    }

    let state = Mutex(State())

    public init() {}

    /// Whether any source is watched (an engine without catch-up admits everything untouched).
    var isActive: Bool { state.withLock { !$0.signals.isEmpty } }

    package func watch(_ backend: BackendID, signal: CatchUpGapSignal, starting: Bool) {
        state.withLock {
            $0.signals[backend] = signal
            if starting { $0.starting.insert(backend) }
        }
    }

    package func seed(_ key: Key, lastSeq: Int64?) {
        state.withLock { state in
            if let lastSeq { state.lanes[key, default: Lane()].lastSeq = max(lastSeq, state.lanes[key]?.lastSeq ?? lastSeq) }
        }
    }

    /// The events to record now; the others are held for the running (or requested) catch-up.
    public func admit(_ events: [IMEvent]) -> [IMEvent] {
        state.withLock { state -> [IMEvent] in
            guard !state.signals.isEmpty else { return events }
            var admitted: [IMEvent] = []
            var expected: [Key: Int64] = [:]
            for event in events {
                guard case .message(let message) = event.kind, let signal = state.signals[event.backend] else {
                    admitted.append(event)
                    continue
                }
                let key = Key(backend: event.backend, conversation: message.conversation)
                var lane = state.lanes[key] ?? Lane()
                state.observed[key, default: Observed()].sender = message.sender
                if state.starting.contains(event.backend) || lane.running {
                    // Beyond the bound a held message is let go: it is in the source's history after the
                    // conversation's checkpoint (which cannot move while it is held), so the read brings it.
                    if lane.held.count < Self.maxHeld { lane.held.append(event) }
                    lane.missed = true
                    if !lane.running, state.requested[key] == nil { state.requested[key] = "held" }
                    state.lanes[key] = lane
                    continue
                }
                if signal == .sequence, let seq = message.seq, let last = expected[key] ?? lane.lastSeq, seq > last + 1 {
                    if lane.held.count < Self.maxHeld { lane.held.append(event) }
                    lane.missed = true
                    lane.running = true
                    state.requested[key] = "gap"
                    state.lanes[key] = lane
                    continue
                }
                if signal == .sequence, let seq = message.seq { expected[key] = max(expected[key] ?? seq, seq) }
                admitted.append(event)
            }
            return admitted
        }
    }

    /// The conversations of `events` (messages of watched sources) that have no checkpoint yet, each with
    /// its first message: the intake writes a first checkpoint for them in the transaction that records
    /// the messages, so a bridge killed right after still knows them on its next start.
    package func unknownConversations(in events: [IMEvent]) -> [Key: Message] {
        state.withLock { state in
            var found: [Key: Message] = [:]
            for event in events {
                guard case .message(let message) = event.kind, state.signals[event.backend] != nil else { continue }
                let key = Key(backend: event.backend, conversation: message.conversation)
                if !state.known.contains(key), found[key] == nil { found[key] = message }
            }
            return found
        }
    }

    /// Conversations of `.sequence` sources in `events` that this instance has no position for (it has
    /// recorded nothing of them and found no checkpoint at start): with other instances on the store,
    /// those may have recorded them up to any point, so the gate cannot tell a gap (`RelayEngine.positionUnseen`).
    package func unpositioned(in events: [IMEvent]) -> [Key] {
        state.withLock { state in
            var keys: [Key] = []
            for event in events {
                guard case .message(let message) = event.kind, state.signals[event.backend] == .sequence, message.seq != nil else { continue }
                let key = Key(backend: event.backend, conversation: message.conversation)
                if state.lanes[key]?.lastSeq == nil, !keys.contains(key) { keys.append(key) }
            }
            return keys
        }
    }

    /// These conversations have a checkpoint in the store now.
    package func markKnown(_ keys: some Sequence<Key>) {
        state.withLock { $0.known.formUnion(keys) }
    }

    /// Called after `events` were recorded: moves the conversations' last positions — each only to the
    /// message right after it (`seq` one past), so a position is always one the source's history has
    /// confirmed (a catch-up read, `caughtUp`) or an unbroken run of messages after one. A message further
    /// on (a held one recorded after a read that did not contain it; a forged `message_seq`) is relayed but
    /// moves nothing: a checkpoint past it would skip whatever the source really sends up to there. A
    /// conversation with no position yet takes its first message's.
    public func recorded(_ events: [IMEvent]) {
        state.withLock { state in
            for event in events {
                guard case .message(let message) = event.kind, state.signals[event.backend] == .sequence, let seq = message.seq else { continue }
                let key = Key(backend: event.backend, conversation: message.conversation)
                let last = state.lanes[key]?.lastSeq
                if last == nil || seq == last! + 1 {
                    state.lanes[key, default: Lane()].lastSeq = seq
                    state.observed[key, default: Observed()].last = message
                }
            }
        }
    }

    /// The intake could not record these admitted events (the store failed and the vendor was told to
    /// retry): the vendor may give up on them, and on a source whose live traffic shows no gap (`.none`:
    /// RongCloud, NIM) nothing else would reveal it before newer messages were relayed. So their
    /// conversations hold their live messages from now on and are caught up from their checkpoints
    /// (`requested`, reason `refused`) before anything newer is recorded. A change to an old message (an
    /// expansion change, a recall, an edit) the vendor gives up on is found the same way: the catch-up is
    /// followed by the read of its conversation's changes (a change window or feed) — without it a change
    /// refused during a store outage was lost (Finding 36, docs/reliability.md).
    package func notRecorded(_ events: [IMEvent]) {
        state.withLock { state in
            for event in events {
                guard state.signals[event.backend] != nil, event.messageID != nil else { continue }
                let key = Key(backend: event.backend, conversation: event.conversation)
                var lane = state.lanes[key] ?? Lane()
                lane.missed = true
                if !lane.running {
                    lane.running = true
                    state.requested[key] = "refused"
                }
                state.lanes[key] = lane
            }
        }
    }

    /// The conversations of `events` a shared hold covers: messages of watched sources (`SharedHolds`).
    package func holdKeys(in events: [IMEvent]) -> [Key] {
        state.withLock { state in
            var keys: [Key] = []
            for event in events {
                guard case .message(let message) = event.kind, state.signals[event.backend] != nil else { continue }
                let key = Key(backend: event.backend, conversation: message.conversation)
                if !keys.contains(key) { keys.append(key) }
            }
            return keys
        }
    }

    /// The conversations of `events` (messages of watched sources) of which `admitted` left some out:
    /// held here, so held in the store too before the callback is answered (`SharedHolds`).
    package func heldKeys(_ events: [IMEvent], admitted: [IMEvent]) -> [Key] {
        guard events.count != admitted.count else { return [] }
        let taken = Set(admitted.map(\.eventID))
        return holdKeys(in: events.filter { !taken.contains($0.eventID) })
    }

    /// The intake refused live messages of `keys` because another instance holds them: once that hold
    /// is gone, this instance checks it was given up, not left behind (`CatchUpRunner.checkElsewhere`).
    package func heldElsewhere(_ keys: [Key]) {
        state.withLock { $0.elsewhere.formUnion(keys) }
    }

    /// Of the conversations whose holds in the store (`SharedHolds`) this instance just renewed, those it
    /// neither holds live messages of nor is to catch up: each is marked held and asked for (reason
    /// `hold_left`), so a catch-up reads it and gives the hold up at its end (or reads again if another
    /// instance marked it). Such a hold has outlived the catch-up it was for: the intake holds the store
    /// row for a message the gate held while a catch-up finished, and when that transaction commits after
    /// the catch-up's release, it writes the row anew. Nothing else would give it up: the lease loop
    /// renewed it for as long as the instance ran, every other instance refused the conversation's
    /// callbacks and found its own catch-up of it busy, and a message whose callback the vendor had given
    /// up on was never read back (docs/reliability.md, seed 389). A release still under way when the
    /// lease loop looks costs one more read of the conversation.
    package func holdsLeft(_ keys: [Key]) -> [Key] {
        state.withLock { state in
            var left: [Key] = []
            for key in keys where state.signals[key.backend] != nil && !state.starting.contains(key.backend) {
                var lane = state.lanes[key] ?? Lane()
                guard !lane.running, lane.held.isEmpty, state.requested[key] == nil else { continue }
                lane.running = true
                state.lanes[key] = lane
                state.requested[key] = "hold_left"
                left.append(key)
            }
            return left
        }
    }

    /// The conversations refused because held elsewhere (and forgets them).
    package func takeElsewhere() -> Set<Key> {
        state.withLock { state in
            defer { state.elsewhere = [] }
            return state.elsewhere
        }
    }

    /// Catch-up read `key`'s history up to the message `id` sent at `at` (a checkpoint loaded or saved):
    /// a message sent before it that was not recorded by then was not in history when read.
    package func confirm(_ key: Key, at: Int64, id: String) {
        state.withLock { state in
            if let known = state.confirmed[key], known.at > at { return }
            state.confirmed[key] = (at, id)
        }
    }

    /// The messages of `events` sent before the last message catch-up confirmed in their conversation
    /// (or that message itself): a callback that comes only now for a message the read went past
    /// (`RelayEngine.screenBehind`, docs/architecture.md, "Callbacks behind the catch-up position").
    package func behindConfirmed(_ events: [IMEvent]) -> [IMEvent] {
        state.withLock { state in
            guard !state.confirmed.isEmpty else { return [] }
            return events.filter { event in
                guard case .message(let message) = event.kind,
                      let confirmed = state.confirmed[Key(backend: event.backend, conversation: message.conversation)] else { return false }
                return message.sentAt < confirmed.at || message.id.rawValue == confirmed.id
            }
        }
    }

    /// The most live messages one conversation holds in memory (the rest come from history).
    static let maxHeld = 5_000

    /// Conversations asked for since the last call, with the reason (`gap`, `held`).
    package func takeRequested() -> [Key: String] {
        state.withLock { state in
            defer { state.requested = [:] }
            return state.requested
        }
    }

    /// What `drainObserved` gave that could not be saved yet: kept for the next flush (newer wins).
    package func putBack(_ key: Key, _ observed: Observed) {
        state.withLock { state in
            var merged = state.observed[key] ?? observed
            if merged.sender == nil { merged.sender = observed.sender }
            if (observed.last?.seq ?? .min) > (merged.last?.seq ?? .min) { merged.last = observed.last }
            state.observed[key] = merged
        }
    }

    package func drainObserved() -> [Key: Observed] {
        state.withLock { state in
            defer { state.observed = [:] }
            return state.observed
        }
    }
}
