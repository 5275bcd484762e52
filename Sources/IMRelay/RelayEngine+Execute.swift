import IMCore
import IMHTTP
import IMAdapterKit
import IMStore
import IMOutbox

extension RelayEngine {
    /// What `execute` did: the created message of a `send`, and whether the target was called at all (a
    /// `profile` or `group` entry whose source has nothing to copy calls no target, which then does not
    /// count as the target's success on `/healthz`).
    struct Executed {
        var created: Message?
        var reachedTarget = true
    }

    /// Performs one action on the target. `mayWrite` is asked right before a send's write (after its
    /// lookups, provisioning and media), and throws when the lane's lease may have lapsed meanwhile.
    nonisolated func execute(_ payload: OutboxPayload, entry: OutboxEntry, mayWrite: @escaping @Sendable () throws -> Void = {}) async throws -> Executed {
        switch payload.action {
        case .profile(let user, let puppet):
            guard let delivery = deliveries[entry.lane.backend] else { break }
            return Executed(reachedTarget: try await syncProfile(of: user, from: entry.sourceBackend, as: puppet, delivery: delivery, mayWrite: mayWrite))
        case .group(let group, let targetGroup, let users):
            guard let delivery = deliveries[entry.lane.backend] else { break }
            return Executed(reachedTarget: try await syncGroup(group, from: entry.sourceBackend, to: targetGroup, users: users, payload: payload,
                                                              entry: entry, delivery: delivery, mayWrite: mayWrite))
        case .dissolve(_, let keep, let notice):
            guard let delivery = deliveries[entry.lane.backend] else { break }
            return Executed(reachedTarget: try await dissolveGroup(keep: keep, notice: notice, entry: entry, delivery: delivery, mayWrite: mayWrite))
        case .user(let profile, let known):
            guard let delivery = deliveries[entry.lane.backend] else { break }
            let calls = PacedCalls(payload.migration != nil ? delivery.migrationPacing : nil)
            let outcome = try await delivery.bringUser(profile, known: known, calls: calls, beforeWrite: mayWrite)
            try await noteOutcome(outcome, of: payload)
            return Executed(reachedTarget: outcome != .userSkipped)
        default:
            break
        }
        return Executed(created: try await perform(payload, entry: entry, mayWrite: mayWrite))
    }

    /// `execute` of the message actions; returns the created message for a `send`.
    nonisolated func perform(_ payload: OutboxPayload, entry: OutboxEntry, mayWrite: @escaping @Sendable () throws -> Void) async throws -> Message? {
        guard let backend = backends[entry.lane.backend], let delivery = deliveries[entry.lane.backend] else {
            throw IMError(.notFound, "backend \(entry.lane.backend) is not configured", isRetryable: false)
        }
        // A retry (or a crash) may follow an attempt that got through: look for its copy first.
        let earlierAttemptAt = entry.attempts > 0 ? entry.createdAt : nil
        // A portal's lane names the source group; the target's is the one the conversation map names (`Portals`).
        let conversation = try await self.conversation(of: entry)
        // A copy of a message that already has one in this conversation is not sent again (a copy the id map
        // names in another conversation of this target, a second route's, is not this one's):
        // - a repair's, of a message the bridge copied after verify's check (its send queued or made between
        //   the check and this entry); the repair's report reads the note;
        // - a migration's, of a message relayed live before it queued it (or by an earlier entry of this lane);
        // - a live one queued a second time: a callback redelivered after retention pruned the event's ledger
        //   row, which the id map (never pruned) still names (seed 587, docs/reliability.md). Only an event at
        //   least half the retention old can be one (`mayBeRequeued`), so the live path's read is rare.
        if case .send(_, let source, _) = payload.action,
           payload.firstCopyOnly == true || payload.migration != nil || mayBeRequeued(payload),
           let copy = try await mapping(of: source, entry: entry), copy.toConversation == conversation {
            if payload.firstCopyOnly == true {
                try await store.writing { [id = entry.id] tx in
                    try tx.setCheckpoint("\(OutboxPayload.skippedFirstCopyPrefix)\(id)", copy.toMessage.rawValue, at: self.clock.nowMs())
                }
            } else if payload.migration == nil {
                logs.delivery.notice("a message already copied into this conversation was queued again (its ledger row pruned): not sent twice",
                                     metadata: laneMetadata(entry).merging(["source_message": "\(source.rawValue)"]) { _, new in new })
            }
            return nil
        }
        if payload.migration != nil {
            // A migration's follow-up (the recall) runs after its copy in the same lane: when the copy is not
            // there, the copy failed, and waiting for it is pointless (a rerun retries both, in order).
            if case .recall(let source, _) = payload.action,
               try await mapping(of: source, entry: entry)?.toConversation != conversation {
                throw IMError(.notFound, "message \(source) on \(entry.sourceBackend) was not copied to \(entry.lane.backend)", isRetryable: false)
            }
            // Paced to the target's documented rate (docs/migration.md, "Rate limits").
            if let pacing = delivery.migrationPacing {
                if case .send = payload.action { await pacing.send(in: conversation.kind) } else { await pacing.call() }
            }
        }
        if payload.migration?.senderMigrated == true, case .send(let outgoing, _, _) = payload.action {
            delivery.markProvisioned(outgoing.sender)
        }
        switch payload.action {
        case .send(var outgoing, _, let replyTo):
            let clientID = ClientMessageID("\(Self.clientIDPrefix)\(entry.id)")
            outgoing.clientMessageID = clientID
            outgoing.conversation = conversation
            try await ensureMember(outgoing.sender, in: conversation, entry: entry, delivery: delivery)
            outgoing.reply = try await replyRef(replyTo, quoted: outgoing.reply, entry: entry, backend: backend)
            // Keys the target refuses travel encoded; the originals are kept with the copy to decode them.
            let limits = backend.capabilities.expansionLimits
            let initial = outgoing.expansion ?? [:]
            let encodedKeys = initial.filter { ExpansionKeyCodec.needsEncoding($0.key, for: limits) }
            if !encodedKeys.isEmpty {
                outgoing.expansion = Dictionary(uniqueKeysWithValues: initial.map { (ExpansionKeyCodec.encode($0.key, for: limits), $0.value) })
            }
            let created = try await delivery.send(outgoing, in: conversation, earlierAttemptAt: earlierAttemptAt, media: payload.route.media,
                                                  source: backends[entry.sourceBackend], beforeWrite: mayWrite)
            // Kept with the copy: every key it was sent with, as held and as the bridge's own write. The
            // originals of encoded keys decode them; catch-up compares a `ChangeWindowSource`'s history with
            // what its copies hold; and the copy's first read back (WuKong's whole-state sync row, read by an
            // instance that did not send it or after a restart) is the echo of this write, not a change of
            // the target's made when it was read — which, stamped with the bridge's clock, outranked the
            // source's next changes whenever the source's clock is behind (Finding 34, docs/reliability.md).
            // Merged into what the copy's rows hold already: its own first event can be taken in (by another
            // instance, or by this one's extras sync) before this write, and what that decided about other
            // keys, or other values, stays. A decision the copy's own event made for the very value it was
            // sent with is this write's echo, taken in before it could be known as one: no change made on
            // the target. Kept, its version (the bridge's or the target's clock) outranked the source's next
            // changes whenever the source's clock is behind, and a key the source removed stayed on the copy
            // (Finding 56, seed 289, docs/reliability.md). The copy's id is in no id-map row before this
            // entry is recorded, so nothing has carried that decision to the source's rows yet.
            if !initial.isEmpty {
                try await store.writing { [target = entry.lane.backend] tx in
                    try tx.lockExpansionKeys(of: [(created.id, target)])
                    let known = try tx.expansionKeys(of: created.id, on: target)
                    let records = initial.map { key, value in
                        var record = known[key] ?? ExpansionKeyRecord(key: key)
                        if record.origin == target.rawValue, record.value == value {
                            (record.value, record.version, record.origin) = (nil, .min, "")
                        }
                        (record.held, record.written) = (.known(value), .known(value))
                        return record
                    }
                    try tx.putExpansionKeys(records, of: created.id, on: target)
                }
            }
            return created
        case .notice(var outgoing, let replyTo):
            outgoing.clientMessageID = ClientMessageID("\(Self.clientIDPrefix)\(entry.id)")
            outgoing.conversation = conversation
            try await ensureMember(outgoing.sender, in: conversation, entry: entry, delivery: delivery)
            outgoing.reply = try await replyRef(replyTo, quoted: nil, entry: entry, backend: backend)
            if let replyTo, outgoing.reply == nil, backend.capabilities.support(.replies).isNative,
               (payload.requeues ?? 0) < Self.maxRequeues {
                // A notice about a message not relayed yet (its change arrived first) waits for it like a
                // native change would, so it never precedes the message; after the wait it goes unquoted.
                _ = try await mapped(replyTo, entry: entry)
            }
            _ = try await delivery.send(outgoing, in: conversation, earlierAttemptAt: earlierAttemptAt, beforeWrite: mayWrite)
            return nil
        case .edit(let source, let by, let content):
            let copy = try await mapped(source, entry: entry)
            try await gated(mayWrite) { try await delivery.edit(copy, in: conversation, by: by, content: content) }
        case .recall(let source, let by):
            let copy = try await mapped(source, entry: entry)
            do {
                try await gated(mayWrite) { try await delivery.recall(copy, in: conversation, by: by) }
            } catch let error as IMError where error.code == .notFound {
                guard try await copyGone(source, entry: entry, backend: backend) else { throw error }
                logs.delivery.info("the copy to recall is gone from the target's history within its recall window: counted as recalled",
                                   metadata: laneMetadata(entry).merging(["target_message": "\(copy.rawValue)"]) { _, new in new })
            }
        case .delete(let source, let by, let forUser):
            let copy = try await mapped(source, entry: entry)
            try await gated(mayWrite) { try await delivery.delete(copy, in: conversation, by: by, forUser: forUser) }
        case .expansion(let source, let by, let delta):
            // The converged values at this moment, for the keys the copy does not hold (ExpansionConvergence).
            let copy = try await mapped(source, entry: entry)
            let write = try await store.writing { [from = entry.sourceBackend, to = entry.lane.backend] tx in
                try ExpansionConvergence.plan(delta, source: source, on: from, copy: copy, on: to, tx)
            }
            guard !write.isEmpty else { return nil }
            // Keys the target refuses travel encoded (a carrier's JSON takes any key as it is).
            let limits = backend.capabilities.support(.expansion).isNative ? backend.capabilities.expansionLimits : nil
            let earlier = try await gated(mayWrite) {
                try await delivery.updateExpansion(of: copy, in: conversation, by: by, ExpansionKeyCodec.encode(write, for: limits),
                                                   clientID: ClientMessageID("\(Self.clientIDPrefix)\(entry.id)"),
                                                   earlierAttemptAt: earlierAttemptAt)
            }
            // An earlier attempt's carrier got through: the copy holds what that carrier carried, which is not
            // this plan when a change was taken in since (a whole-state change then names its keys too). Keys
            // it did not carry stay unheld for the entries of their own changes (seed 138, docs/reliability.md).
            let applied = earlier.map { Self.carried(by: $0, on: backend) } ?? write
            // Versions in the bridge's clock (not the vendor's change times): the write is known held from now.
            let seenAt = backend.capabilities.expansionVersionIsChangeTime ? nil : clock.nowMs()
            try await store.writing { [to = entry.lane.backend] tx in
                try ExpansionConvergence.wrote(applied, copy: copy, on: to, at: seenAt, tx)
            }
        case .reaction(let source, let by, let emoji, let added):
            let copy = try await mapped(source, entry: entry)
            try await gated(mayWrite) { try await delivery.setReaction(emoji, added: added, on: copy, in: conversation, by: by) }
        case .read(let source, let by):
            let copy = try await mapped(source, entry: entry)
            try await gated(mayWrite) { try await delivery.markRead(conversation, by: by, upTo: copy) }
        case .profile, .group, .user, .dissolve:
            break   // `execute`
        case .retractCarrier(let source, let by, let clientID, _):
            // Queued behind the `expansion` entry, which the lane's new holder recorded first: its carrier, or
            // the late one its lookup found, is the oldest with the client id and stays; the others go. A
            // later carrier restates the change after the lane's later changes, and on a target that keeps no
            // expansions the newest carrier of a key is its value (docs/expansions.md).
            _ = try await mapped(source, entry: entry)
            let carriers = try await delivery.findCarriers(withClientID: clientID, in: conversation, sender: by).filter { !$0.isRecalled }
            for late in carriers.dropFirst() {
                try await delivery.recall(late.id, in: conversation, by: by)
                metrics.increment("imbridge_late_copies_retracted_total", ["target": entry.lane.backend.rawValue])
                logs.delivery.warning("late expansion carrier taken back from the target", metadata: laneMetadata(entry).merging([
                    "target_message": "\(late.id.rawValue)", "source_message": "\(source.rawValue)",
                ]) { _, new in new })
            }
        case .retract(let source, let copy, let outgoing, let attemptAt):
            // Waits (requeued) until the entry that took the lane over has recorded its copy; every entry
            // before this one is recorded then, so an unmapped copy found by the search is a late one.
            let recorded = try await mapped(source, entry: entry)
            // A copy the answer did not name is searched for: every message carrying the entry's client id
            // (the recorded copy carries it too), each one but the recorded copy taken back.
            let late = if let copy { [copy] } else {
                try await delivery.findCopies(of: outgoing, in: conversation, since: attemptAt, after: recorded).filter { !$0.isRecalled }.map(\.id)
            }
            for late in late where late != recorded {
                try await delivery.recall(late, in: conversation, by: outgoing.sender)
                metrics.increment("imbridge_late_copies_retracted_total", ["target": entry.lane.backend.rawValue])
                logs.delivery.warning("late copy taken back from the target", metadata: laneMetadata(entry).merging([
                    "target_message": "\(late.rawValue)", "source_message": "\(source.rawValue)",
                ]) { _, new in new })
            }
        }
        return nil
    }

    /// Whether a live event's send may be its second: its ledger row, written when the event was first taken
    /// in, may have been pruned (`retentionMs` after that). The event's time is the source's; a row pruned
    /// before a redelivery was written at least `retentionMs` before it, so the event is at least that old
    /// less the source clock's lead on the bridge's — half the retention leaves room for any lead short of
    /// that (minutes against the default 7 days).
    nonisolated func mayBeRequeued(_ payload: OutboxPayload) -> Bool {
        guard let retentionMs else { return false }
        return clock.nowMs() - payload.eventTimeMs >= retentionMs / 2
    }

    /// Whether a copy whose recall the target answered `not_found` is one the bridge made within the
    /// target's recall window: the target would still find it there (NIM's adapter searches its history
    /// back over the window and a minute more, docs/adapters/nim.md, "Recall"), so it is no longer listed —
    /// recalled already, which NIM's history does not show. That is an earlier attempt of this recall
    /// that got through before its outcome was recorded (a SIGKILL, seed 57 in docs/reliability.md), or a
    /// recall by another path. Counted as done: the copy is not shown, which is what the recall is for. A
    /// copy older than the window, or on a target with no window, stays a dead letter.
    nonisolated func copyGone(_ source: MessageID, entry: OutboxEntry, backend: any IMBackend) async throws -> Bool {
        guard let window = backend.capabilities.recallWindowMs, let mapping = try await mapping(of: source, entry: entry),
              mapping.bridgeCreated, let made = mapping.createdAt else { return false }
        return clock.nowMs() - made <= window
    }

    /// The id map's row for `source` on the entry's lane's target, if it was relayed there.
    /// The change an expansion carrier message carries, read as the target's catch-up reads its carriers
    /// (`CatchUpSource.catchUpEvent`); none when it cannot be read.
    static func carried(by carrier: Message, on target: any IMBackend) -> ExpansionDelta {
        guard case .expansionChanged(_, _, _, let delta)? = (target as? any CatchUpSource)?.catchUpEvent(for: carrier)?.kind else {
            return ExpansionDelta(version: 0)
        }
        return delta
    }

    /// A change to a copy, with the lane's lease asked right before each of its requests leaves the process
    /// (`WriteGate`), as a send's is: the attempt's first check came before its store reads and the target's
    /// own reads (WuKongIM's whole-dictionary `extra` write reads it first), and a pause after it would land
    /// a stale write after the lane's new holder wrote a newer one (seed 360, docs/reliability.md). A
    /// refusal ends the attempt as fenced; what a change's earlier requests did is redone by the new holder
    /// (edits, expansion values and reaction states are set, not added).
    nonisolated func gated<T: Sendable>(_ mayWrite: @escaping @Sendable () throws -> Void, _ change: () async throws -> T) async throws -> T {
        try mayWrite()
        return try await WriteGate.$check.withValue(WriteGate.Check(mayWrite)) { try await change() }
    }

    nonisolated func mapping(of source: MessageID, entry: OutboxEntry) async throws -> MessageMapping? {
        try await store.reading { [from = entry.sourceBackend, to = entry.lane.backend] in try $0.mapped(source, from: from, to: to) }
    }

    nonisolated func mapped(_ source: MessageID, entry: OutboxEntry) async throws -> MessageID {
        guard let mapping = try await mapping(of: source, entry: entry) else {
            throw IMError(.notFound, "message \(source) on \(entry.sourceBackend) has no counterpart on \(entry.lane.backend) (it was never relayed)",
                          isRetryable: false, details: ["unmapped": source.rawValue])
        }
        return mapping.toMessage
    }

    nonisolated func replyRef(_ source: MessageID?, quoted: ReplyRef?, entry: OutboxEntry, backend: any IMBackend) async throws -> ReplyRef? {
        guard let source, backend.capabilities.support(.replies).isNative,
              let mapping = try await mapping(of: source, entry: entry) else { return nil }
        return ReplyRef(messageID: mapping.toMessage, sender: nil, digest: quoted?.digest ?? "")
    }
}
