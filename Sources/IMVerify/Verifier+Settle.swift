import Foundation
import IMAdapterKit
import IMCore
import IMStore
import IMOutbox
import IMRelay

/// `verify` beside a running bridge (docs/verify.md, "Beside a running bridge"): what the bridge may still
/// be relaying is neither judged nor repaired.
///
/// - The store is read before the target (`Settle`) and again after it: a source message with an outbox
///   entry pending in the target's lane at either read, or whose copy the id map named only after the
///   target was read, is *in flight*; a message the bridge had not queued (nor relayed) and that was sent
///   within the settle horizon before its conversation was read is *settling* — its callback may still be
///   on its way, batched or retried by the vendor. Neither counts as drift; the next run judges them.
/// - A missing copy's `.send` is queued only in a transaction that first records the message's intake
///   event in the ledger, under the event id the bridge's intake records it by (`intakeEvent`), and then
///   finds neither its copy in the id map nor a pending `.send` for it: the bridge that takes the message
///   in afterwards finds it recorded and relays nothing, and one that took it in first keeps it
///   (`repairGuardHolds`). The id map's order decides, not timing. The `.send` checks the id map again
///   when it runs (`OutboxPayload.firstCopyOnly`): a copy the bridge made after the check is not doubled.
extension Verifier {
    /// What the store said before the target was read.
    struct Settle: Sendable {
        /// Source messages with an outbox entry pending in the target's lane.
        var pending: Set<MessageID> = []
        /// Source messages whose copy the id map named.
        var mapped: Set<MessageID> = []
        /// Source messages sent after this (epoch ms) that the bridge had not queued are settling.
        var horizonMs: Int64 = .min
    }

    /// The source messages with an entry pending in `lane`, and those of `ids` whose copy the id map names;
    /// the settle horizon `settleMs` before `readAt`, in the source's clock.
    func snapshot(_ pair: Pair, lane: LaneKey, ids: [MessageID], readAt: Int64, settleMs: Int64) async throws -> Settle {
        try await store.reading { [from = pair.source, to = pair.leg.target] tx in
            let lead = settleMs > 0 ? try self.clockLead(of: from, tx) : 0
            return Settle(pending: try Self.pendingSources(in: lane, tx), mapped: Set(try ids.filter { try tx.mapped($0, from: from, to: to) != nil }),
                          horizonMs: readAt - lead - settleMs)
        }
    }

    /// `from`'s plausible clock lead, read from the store on this run's first conversation of that source.
    func clockLead(of from: BackendID, _ tx: StoreTransaction) throws -> Int64 {
        if let known = clockLeads.withLock({ $0[from] }) { return known }
        let lead = Self.plausibleLead(try tx.sourceClockLead(of: from))
        clockLeads.withLock { $0[from] = lead }
        return lead
    }

    /// Send times are the source's clock, the horizon the bridge's: a source whose clock is behind (or ahead)
    /// would have its newest messages judged as settled (or its settled ones as settling). The offset is read
    /// from the copies the bridge made last (`StoreTransaction.sourceClockLead`); one beyond an hour either
    /// way is no clock's (copies a migration made of old history) and is not applied.
    static func plausibleLead(_ lead: Int64?) -> Int64 {
        guard let lead, abs(lead) <= 3_600_000 else { return 0 }
        return lead
    }

    /// The source messages the entries pending in `lane` act on: a send, and a change to a copy, a notice
    /// about one or a retraction of a second one — of a message whose copy exists or whose send is pending.
    /// A change to a message the bridge has neither copied nor queued waits for the message to be taken in
    /// (its callback late, or lost to catch-up), and says nothing about the message itself being relayed:
    /// counting it in flight left it out of `--repair` while the messages after it were repaired, ahead of
    /// it in the lane (seed 173, docs/reliability.md).
    static func pendingSources(in lane: LaneKey, _ tx: StoreTransaction) throws -> Set<MessageID> {
        var sent: Set<MessageID> = []
        var changed: [(source: MessageID, backend: BackendID)] = []
        for (entry, payload) in try tx.pendingPayloads(in: lane) {
            guard let source = sourceMessage(of: payload.action) else { continue }
            if case .send = payload.action { sent.insert(source) } else { changed.append((source, entry.sourceBackend)) }
        }
        var pending = sent
        for change in changed where !pending.contains(change.source) {
            if try tx.mapped(change.source, from: change.backend, to: lane.backend) != nil { pending.insert(change.source) }
        }
        return pending
    }

    static func sourceMessage(of action: RelayAction) -> MessageID? {
        switch action {
        case .send(_, let source, _), .edit(let source, _, _), .recall(let source, _), .delete(let source, _, _),
             .expansion(let source, _, _), .reaction(let source, _, _, _), .retract(let source, _, _, _),
             .retractCarrier(let source, _, _, _):
            source
        case .notice(_, let reply): reply
        case .read, .profile, .group, .user, .dissolve: nil
        }
    }

    /// The ledger row the bridge's intake writes for `message` of `source`: the event catch-up makes of it
    /// (the same id as the live callback's), or the backend's own naming.
    static func intakeEvent(for message: Message, of source: any IMBackend) -> Intake {
        if let event = (source as? any CatchUpSource)?.catchUpEvent(for: message) {
            return Intake(eventID: event.eventID, kind: event.kindName)
        }
        if let naming = source as? any MessageEventNaming {
            return Intake(eventID: naming.messageEventID(for: message), kind: "message")
        }
        return Intake(eventID: EventID("msg:\(message.id)"), kind: "message")
    }

    /// In the repair's transaction, for a missing copy the id map never named: records the message's intake
    /// event (so the bridge does not relay it after this), then true when the bridge has neither copied it
    /// into the target conversation nor queued its `.send` — only then is the repair's `.send` queued.
    static func repairGuardHolds(_ guarded: VerifyReport.Item.Guard, _ tx: StoreTransaction, at now: Int64) throws -> Bool {
        _ = try tx.recordEvent(guarded.source, guarded.intake.eventID, kind: guarded.intake.kind, at: now,
                               origin: EventOrigin(listener: EventOrigin.verify, instance: ProcessInfo.processInfo.hostName))
        if let mapping = try tx.mapped(guarded.message, from: guarded.source, to: guarded.lane.backend),
           mapping.toConversation == guarded.lane.conversation {
            return false
        }
        return try !tx.pendingSends(in: guarded.lane).contains { $0.source == guarded.message && $0.backend == guarded.source }
    }
}

/// A message's event as the ledger records it.
struct Intake: Sendable, Hashable {
    var eventID: EventID
    var kind: String
}

extension VerifyReport.Item {
    /// What `--repair` checks, in its transaction, before it sends a missing copy (`Verifier.repairGuardHolds`).
    struct Guard: Sendable, Hashable {
        var source: BackendID
        var message: MessageID
        var intake: Intake
        var lane: LaneKey
    }
}
