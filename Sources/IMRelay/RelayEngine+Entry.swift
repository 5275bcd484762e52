import Foundation
import IMAdapterKit
import IMCore
import IMStore
import IMHTTP
import IMOutbox
import IMTelemetry

/// One claimed entry's run and what becomes of it: carried out and recorded (fenced by the lane's tenure),
/// retried, requeued behind the message it refers to, or a dead letter — and a late copy taken back when
/// the lane was taken over meanwhile (docs/high-availability.md, "Fenced deliveries").
extension RelayEngine {
    /// A change that refers to a message not relayed yet goes back to the end of its lane (after the
    /// message, if that is queued behind it), with a growing pause; after `maxRequeues` it is a dead letter.
    /// A change to a message withheld (gone from its source's history before it was relayed,
    /// `screenBehind`) has nothing to wait for: the entry is done, with nothing written.
    nonisolated func requeueOrBury(_ entry: OutboxEntry, _ error: IMError, fence: LeaseFence) async -> LaneStep {
        let now = clock.nowMs()
        if let unmapped = error.details["unmapped"], await isWithheld(MessageID(unmapped), on: entry.sourceBackend) {
            do {
                try await store.groupedTransaction { tx in
                    guard try tx.holds(fence) else { throw StoreTransaction.LeaseLost(fence: fence) }
                    try tx.complete(entry.id, at: now)
                }
                MessageSpans.note("imbridge.outcome", "withheld")
                logs.delivery.debug("lane: a change to a withheld message is done with nothing written", metadata: laneMetadata(entry))
                return .next(nil)
            } catch is StoreTransaction.LeaseLost {
                return .fenced
            } catch {
                // The store failed: the entry is requeued below (or buried) as any other.
            }
        }
        do {
            var payload = try OutboxPayload.decode(entry.payload)
            let count = (payload.requeues ?? 0) + 1
            if count > Self.maxRequeues, let unmapped = error.details["unmapped"],
               try await closeNeverRecorded(entry, payload, message: MessageID(unmapped), fence: fence, at: now) {
                return .next(nil)
            }
            guard count <= Self.maxRequeues else { throw error }
            payload.requeues = count
            var draft = OutboxDraft()
            let index = try draft.add(payload, lane: entry.lane, source: entry.sourceBackend, eventID: entry.sourceEventID)
            let until = now + min(2000, 50 * Int64(count))
            draft.pause(index, until: until, reason: "waiting for the message it refers to")
            let attempt = attemptRecord(entry, error, outcome: .requeued, at: now, retryAt: until, fence: fence)
            try await store.groupedTransaction { [draft] tx in
                guard try tx.holds(fence) else { throw StoreTransaction.LeaseLost(fence: fence) }
                try tx.complete(entry.id, at: now)
                try tx.recordAttempt(attempt)
                _ = try draft.write(tx, at: now)
            }
            MessageSpans.note("imbridge.outcome", "requeued")
            logs.delivery.debug("lane: waits for the message it refers to", metadata: laneMetadata(entry).merging([
                "requeues": "\(count)", "unmapped": "\(error.details["unmapped"] ?? "")"]) { _, new in new })
            metrics.increment("imbridge_requeued_total", ["target": entry.lane.backend.rawValue])
        } catch is StoreTransaction.LeaseLost {
            return .fenced
        } catch {
            let reason = "\(error)"
            guard await bury(entry, reason: reason, at: now, fence: fence, failed: error) else { return .fenced }
            logDeadLetter(entry, reason: "the message it refers to never arrived: \(reason)")
        }
        return .next(nil)
    }

    /// A recall or deletion that waited its whole time for a message the bridge never recorded, on a source
    /// whose history drops what is recalled or deleted (`ChangeWindowSource`): the message was sent and taken
    /// back while its callback could not reach the bridge, and no read of history can find it. There is
    /// nothing to take back on the target — a dead letter would ask the operator for something nobody can
    /// do. The message is recorded as withheld (its ledger row, so that a callback of it still to come is a
    /// duplicate, and `withheld:<id>`) and the entry is done. False, with nothing written, for any other
    /// change or when the ledger holds the message (its copy failed: the change is a dead letter then).
    nonisolated func closeNeverRecorded(_ entry: OutboxEntry, _ payload: OutboxPayload, message: MessageID, fence: LeaseFence,
                                        at now: Int64) async throws -> Bool {
        switch payload.action {
        case .recall, .delete: break
        default: return false
        }
        guard let source = backends[entry.sourceBackend] as? any ChangeWindowSource,
              let conversation = payload.sourceConversation,
              let event = source.catchUpEvent(for: Message(id: message, conversation: conversation, sender: "", sentAt: 0, content: .text("")))
        else { return false }
        let closed = try await store.groupedTransaction { tx -> Bool in
            guard try tx.holds(fence) else { throw StoreTransaction.LeaseLost(fence: fence) }
            guard !(try tx.hasEvent(entry.sourceBackend, event.eventID)) else { return false }
            _ = try self.recordWithheld([Withheld(message: event, absence: nil)], tx, at: now, origin: nil)
            try tx.complete(entry.id, at: now)
            return true
        }
        guard closed else { return false }
        MessageSpans.note("imbridge.outcome", "withheld")
        logs.relay.info("a recall or deletion of a message the bridge never recorded is done with nothing written: the message was taken back on its source before its callback reached the bridge",
                        metadata: laneMetadata(entry).merging(["message": "\(message)"]) { _, new in new })
        return true
    }

    /// Records a carried-out entry (its id-map row, done) and claims the lane's next due entry. The target
    /// has done what the entry asked, so a store failure here is not the entry's failure: the commit is
    /// tried again (backing off up to 2 s) until it holds. Nil when the engine stops first: the entry stays
    /// claimed with its attempt counted, so whoever runs it next looks for the copy this attempt left
    /// instead of sending a second one.
    nonisolated func record(_ entry: OutboxEntry, payload: OutboxPayload, created: Message?, fence: LeaseFence) async -> RecordOutcome {
        var pauseMs: UInt64 = 50
        while true {
            let now = clock.nowMs()
            let claimNext = !isStopping
            do {
                var mapping: StoreTransaction.Mapping?
                if let created, case .send(_, let source, _) = payload.action {
                    mapping = .init(source: (entry.sourceBackend, source, payload.sourceConversation ?? created.conversation),
                                    target: (entry.lane.backend, created.id, created.conversation),
                                    sentAt: payload.sourceSender.map { _ in payload.eventTimeMs }, sender: payload.sourceSender)
                }
                // Fenced: when another instance took the lane over, nothing is written (it runs the entry,
                // finding this attempt's copy where the target can look it up); when our lease merely
                // expired, nothing more is claimed.
                let step = StoreTransaction.Finish(entry.id, lane: entry.lane, at: now, mapping: mapping, claimNext: claimNext, fence: fence)
                let commit = { [store] in try await store.finish(step) }
                // A lane cut off by the drain deadline after the target accepted still records it (the
                // store refuses a cancelled task's transaction, so the commit runs in a task of its own):
                // otherwise the next start would send again where the vendor has no earlier-copy search.
                let next = Task.isCancelled ? try await Task { try await commit() }.value : try await commit()
                return .recorded(next, at: now)
            } catch is StoreTransaction.LeaseLost {
                return .fenced
            } catch {
                metrics.increment("imbridge_store_errors_total", ["operation": "record"])
                logStoreError("record", error, lane: entry.lane)
                guard !isStopping else { return .stopped }
                try? await Task.sleep(nanoseconds: pauseMs * 1_000_000)
                pauseMs = min(pauseMs * 2, 2000)
            }
        }
    }

    enum RecordOutcome {
        case recorded(OutboxEntry?, at: Int64)
        /// The engine stopped before the commit held.
        case stopped
        /// Another instance holds the lane now: nothing was written.
        case fenced
    }

    /// Moves the entry to the dead letters, fenced, with its last attempt (`failed`); false when the lane's
    /// lease was taken over (nothing written).
    nonisolated func bury(_ entry: OutboxEntry, reason: String, at now: Int64, fence: LeaseFence, failed error: any Error) async -> Bool {
        let attempt = attemptRecord(entry, error, outcome: .dead, at: now, retryAt: nil, fence: fence)
        let buried = (try? await store.groupedTransaction { tx -> Bool in
            guard try tx.markDead(entry.id, error: reason, at: now, fence: fence) else { return false }
            try tx.recordAttempt(attempt)
            return true
        }) ?? true
        guard buried else { return false }
        MessageSpans.note("imbridge.outcome", "dead_letter")
        signals.finishes.ring()
        metrics.increment("imbridge_dead_letters_total", ["target": entry.lane.backend.rawValue])
        return true
    }

    /// This attempt reached the target after another instance had taken the lane over: the target
    /// accepted it (`created`), or its outcome is unknown (an error after the request may have gone out).
    /// A pause can fall between the last lease check and the request leaving the process; then the other
    /// instance, finding no copy yet, sent its own, and this one is a late double. The lane (whoever holds
    /// it) takes it back once the entry is recorded, unless the id map names it (the other instance found it).
    /// An expansion change's late attempt leaves a second carrier where the target keeps no expansions (NIM):
    /// a message of its own, which would restate the change after the lane's later ones.
    nonisolated func queueRetraction(of created: Message?, entry: OutboxEntry, payload: OutboxPayload, attemptAt: Int64) async {
        let clientID = ClientMessageID("\(Self.clientIDPrefix)\(entry.id)")
        let action: RelayAction
        switch payload.action {
        case .send(var outgoing, let source, _):
            outgoing.clientMessageID = clientID
            action = .retract(source: source, copy: created?.id, outgoing: outgoing, attemptAt: attemptAt)
        case .expansion(let source, let by, _) where backends[entry.lane.backend]?.capabilities.support(.expansion) == .fallback:
            action = .retractCarrier(source: source, by: by, clientID: clientID, attemptAt: attemptAt)
        default:
            return
        }
        logs.delivery.notice("a late attempt reached the target after the lane was taken over: its copy is taken back if it is a double",
                              metadata: laneMetadata(entry).merging(["target_message": "\(created?.id.rawValue ?? "unknown")"]) { _, new in new })
        metrics.increment("imbridge_late_copies_total", ["target": entry.lane.backend.rawValue])
        var taking = payload
        taking.action = action
        taking.requeues = nil
        let retraction = taking
        let now = clock.nowMs()
        var pauseMs: UInt64 = 50
        for _ in 0..<20 {
            do {
                var draft = OutboxDraft()
                try draft.add(retraction, lane: entry.lane, source: entry.sourceBackend, eventID: EventID("retract:\(entry.id)"))
                try await store.groupedTransaction { [draft] tx in _ = try draft.write(tx, at: now) }
                wake()
                return
            } catch {
                logStoreError("retract", error, lane: entry.lane)
                try? await Task.sleep(nanoseconds: pauseMs * 1_000_000)
                pauseMs = min(pauseMs * 2, 2000)
            }
        }
    }

    /// How many times a change may wait for its message (≈ 2 minutes in all with the pauses above).
    static let maxRequeues = 80

    /// Runs one (claimed) entry and records the outcome, claiming the lane's next due entry in the same
    /// transaction when the engine is not stopping; `.wait` when the lane must wait (retry scheduled).
    /// In an `imbridge.lane` span of the event's trace when spans are on (docs/operations.md, "Tracing").
    nonisolated func process(_ entry: OutboxEntry, fence: LeaseFence) async -> LaneStep {
        guard MessageSpans.isOn else { return await run(entry, fence: fence) }
        return await MessageSpans.with("imbridge.lane", trace: entry.trace) { span in
            span?.attributes["imbridge.lane"] = "\(entry.lane)"
            span?.attributes["imbridge.entry"] = Int(entry.id)
            span?.attributes["imbridge.action"] = entry.kind
            span?.attributes["imbridge.attempt"] = entry.attempts + 1
            span?.attributes["imbridge.instance"] = fence.owner
            return await run(entry, fence: fence)
        }
    }

    private nonisolated func run(_ entry: OutboxEntry, fence: LeaseFence) async -> LaneStep {
        let target = entry.lane.backend.rawValue
        let attemptAt = clock.nowMs()
        var taken: OutboxPayload?
        var drained = false
        do {
            let payload = try payloads.take(entry.id, bytes: entry.payload)
            taken = payload
            // No vendor call starts unless the lane's lease is provably still ours when it leaves
            // (`HeldLeases`): asked here and again right before a send's write, after its lookups.
            let mayWrite: @Sendable () throws -> Void = { [held = leases.held] in
                guard held.mayWrite(fence) else { throw LeaseLapsed(fence: fence) }
            }
            try mayWrite()
            // The vendor calls of this attempt carry the event's trace context (`traceparent`): the
            // `imbridge.vendor_call` span's own when spans are on, else one derived for the attempt.
            let executed = try await MessageSpans.with("imbridge.vendor_call", trace: entry.trace, kind: .client) { span in
                span?.attributes["imbridge.target"] = target
                let trace = MessageSpans.outgoing(entry.trace) ?? entry.trace.child("entry-\(entry.id)-attempt-\(entry.attempts + 1)")
                return try await TraceParent.$current.withValue(trace) { try await execute(payload, entry: entry, mayWrite: mayWrite) }
            }
            let created = executed.created
            let (next, now): (OutboxEntry?, Int64)
            let recorded = await MessageSpans.with("imbridge.complete", trace: entry.trace) { span in
                let outcome = await record(entry, payload: payload, created: created, fence: fence)
                if case .recorded = outcome { span?.attributes["imbridge.outcome"] = "delivered" }
                return outcome
            }
            switch recorded {
            case .recorded(let claimed, let at):
                logs.delivery.debug("lane: entry done", metadata: laneMetadata(entry).merging([
                    "target_message": "\(created?.id.rawValue ?? "")"]) { _, new in new })
                // Nothing claimed while the engine goes on: the finish released the lane's lease.
                if claimed == nil && !isStopping { drained = true }
                (next, now) = (claimed, at)
            case .stopped: return .wait
            case .fenced:
                if let created { await queueRetraction(of: created, entry: entry, payload: payload, attemptAt: attemptAt) }
                return .fenced
            }
            signals.finishes.ring()
            if executed.reachedTarget { health.succeeded(entry.lane.backend, at: now) }
            metrics.increment("imbridge_relayed_total", ["target": target, "action": entry.kind])
            switch payload.action {
            case .profile, .group, .user: break   // not an event's relay
            default:
                metrics.observeLatency(seconds: Double(max(0, now - payload.eventTimeMs)) / 1000)
            }
            return drained ? .drained : .next(next)
        } catch {
            // Cut off by a drain deadline: the call was abandoned, not answered. The entry stays claimed
            // in the outbox; the next start runs it again (looking for the copy this attempt may have left).
            if Task.isCancelled { return .wait }
            if error is LeaseLapsed { return .fenced }
            if error is WriteGate.RefusedAfterWrite {
                // The lease lapsed between two requests of one send (WuKongIM's message and its initial
                // `extra`): the message is on the target, and the new holder may have sent its own.
                if let taken { await queueRetraction(of: nil, entry: entry, payload: taken, attemptAt: attemptAt) }
                return .fenced
            }
            let step = await MessageSpans.with("imbridge.complete", trace: entry.trace) { _ in await settle(entry, error: error, fence: fence) }
            // Fenced after a call that may have been carried out (anything but a failed lookup): a copy
            // may be on the target beside the one the new holder sends.
            if case .fenced = step, let taken, (error as? IMError)?.details[Delivery.lookupFailedKey] == nil {
                await queueRetraction(of: nil, entry: entry, payload: taken, attemptAt: attemptAt)
            }
            return step
        }
    }

    /// What a failed entry becomes: requeued (waiting for its message), retried later, or a dead letter;
    /// `.fenced` when the lane was taken over meanwhile (nothing written).
    nonisolated func settle(_ entry: OutboxEntry, error: any Error, fence: LeaseFence) async -> LaneStep {
        let target = entry.lane.backend.rawValue
        let failure = deliveries[entry.lane.backend]?.classify(error, attempt: max(0, entry.attempts)) ?? .permanent
        switch failure {
        case .waitForMessage:
            return await requeueOrBury(entry, error as? IMError ?? IMError(.notFound, "\(error)"), fence: fence)
        case .retry where policy.retry.isExhausted(createdAt: entry.createdAt, now: clock.nowMs()):
            let (at, reason) = (clock.nowMs(), "gave up after \(entry.attempts + 1) attempts in \((clock.nowMs() - entry.createdAt) / 1000) s (retry.max_age): \(error)")
            guard await bury(entry, reason: reason, at: at, fence: fence, failed: error) else { return .fenced }
            metrics.increment("imbridge_retry_budget_exhausted_total", ["target": target])
            logDeadLetter(entry, reason: reason)
            return .next(nil)
        case .retry(let delay):
            let (at, reason) = (clock.nowMs() + delay, "\(error)")
            let attempt = attemptRecord(entry, error, outcome: .retry, at: clock.nowMs(), retryAt: at, fence: fence)
            let rescheduled = try? await store.groupedTransaction { tx -> Bool in
                guard try tx.reschedule(entry.id, at: at, error: reason, fence: fence) else { return false }
                try tx.recordAttempt(attempt)
                try tx.releaseLease(fence.name, owner: fence.owner)
                return true
            }
            if rescheduled == false { return .fenced }
            MessageSpans.note("imbridge.outcome", "retry")
            if rescheduled == nil {
                // The store did not take the pause (it is down or full): the entry is still due now, and
                // the lane would run it again the moment the store is back — sooner than the pause says,
                // and after a timed-out send sooner than a late copy can show (a double). The lane task
                // keeps the pause itself.
                metrics.increment("imbridge_store_errors_total", ["operation": "reschedule"])
                try? await Task.sleep(nanoseconds: UInt64(max(0, at - clock.nowMs())) * 1_000_000)
                // The lease lapsed meanwhile (the store down, nothing renewed): another instance may run the
                // entry now, and its lookup may come before this attempt's copy shows. Fenced, so the caller
                // stops working the lane and queues the late copy's retraction.
                if !leases.held.mayWrite(fence) { return .fenced }
            }
            let failure = error as? IMError ?? IMError(.unavailable, reason)
            health.failed(entry.lane.backend, error: failure, at: clock.nowMs())
            metrics.increment("imbridge_retries_total", ["target": target])
            if let held = logs.retryLines.admit(target, now: clock.nowMs()) {
                logs.delivery.warning("send failed, will retry", metadata: laneMetadata(entry).merging([
                    "attempt": "\(entry.attempts + 1)", "retry_in_ms": "\(delay)", "error_class": "\(HealthBoard.errorClass(failure))",
                    "error": "\(String(reason.prefix(300)))", "retries_not_logged": "\(held)",
                ]) { _, new in new })
            }
            return .wait
        case .permanent:
            let (at, reason) = (clock.nowMs(), "\(error)")
            guard await bury(entry, reason: reason, at: at, fence: fence, failed: error) else { return .fenced }
            logDeadLetter(entry, reason: reason)
            return .next(nil)
        }
    }

    /// The row `imbridge trace` shows for a failed attempt (docs/operations.md, "Where is my message").
    nonisolated func attemptRecord(_ entry: OutboxEntry, _ error: any Error, outcome: AttemptRecord.Outcome, at: Int64, retryAt: Int64?,
                                   fence: LeaseFence) -> AttemptRecord {
        let failure = error as? IMError ?? IMError(.unavailable, "\(error)")
        return AttemptRecord(outboxID: entry.id, attempt: entry.attempts + 1, at: at, outcome: outcome, errorClass: HealthBoard.errorClass(failure),
                             errorCode: (error as? IMError)?.code.rawValue, vendorCode: failure.vendorCode, error: "\(error)", retryAt: retryAt,
                             instance: fence.owner)
    }
}
