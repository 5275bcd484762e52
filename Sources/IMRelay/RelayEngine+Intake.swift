import Foundation
import IMAdapterKit
import IMCore
import IMStore
import Logging
import IMPositions
import IMHTTP

/// The engine is the sink every adapter pushes into: `accept` commits the events' ledger and outbox
/// rows (group commit) before it returns; `refused` counts a turned-away callback.
extension RelayEngine: EventSink {
    public nonisolated func accept(_ events: [IMEvent]) async throws {
        try await accept(InboundBatch(events: events))
    }

    /// Takes a batch's events and its poison messages in one transaction: the events as `accept`, each
    /// set-aside message kept as an inbound dead letter (once per backend and key).
    /// Live messages of a conversation being caught up are held by `catchUpGate` (docs/architecture.md,
    /// "Catch-up") and recorded by the catch-up in source order; a conversation seen for the first time
    /// gets its catch-up checkpoint in the same transaction.
    public nonisolated func accept(_ batch: InboundBatch) async throws {
        if intake.holds.enabled {
            do {
                try await positionUnseen(batch.events)
            } catch {
                metrics.increment("imbridge_ingest_errors_total")
                logStoreError("ingest", error)
                throw error
            }
        }
        let events = FeedPositions.withoutStale(batch.events, positions: batch.positions, retentionMs: retentionMs, now: clock.nowMs())
        let gated = intake.gate.admit(events)
        // A stored read position (a migration's, another instance's catch-up) past some of them: nothing
        // was recorded; screened again, as behind the catch-up position.
        try await screeningReadPast { checkReadPast in try await recordGated(batch, events, gated: gated, checkReadPast: checkReadPast) }
    }

    /// `accept` once the gate has let `gated` through. `checkReadPast`: see `ingestGrouped`.
    nonisolated func recordGated(_ batch: InboundBatch, _ events: [IMEvent], gated: [IMEvent], checkReadPast: Bool) async throws {
        // A message behind the catch-up position, gone from its source's history meanwhile, is withheld.
        let (admitted, withheld) = await screenBehind(gated)
        let fresh = intake.gate.unknownConversations(in: admitted)
        let holdKeys = intake.holds.enabled ? intake.gate.holdKeys(in: admitted) : []
        // Held here (a catch-up under way or to come): held in the store before the vendor is answered,
        // so that another instance does not record the conversation's next message meanwhile. Only what the
        // gate held: a withheld message is recorded now, and no catch-up is to come for it that would give
        // a hold up — a hold taken for it stayed, renewed with this instance's leases, and every other
        // instance refused the conversation's callbacks from then on (docs/reliability.md, Finding 46).
        let heldHere = intake.holds.enabled ? intake.gate.heldKeys(events, admitted: gated) : []
        do {
            let backends = self.backends
            let first = CatchUpCheckpoint.firstCheckpoints(fresh, routes: routes) { key, message in
                try? (backends[key.backend] as? any CatchUpSource)?.cursor(for: message)
            }
            // Only the bridge's own writes coming back (a target routing the bridge's sends to it): `record`
            // would drop every one before the ledger, so no store transaction is joined for them — unless
            // another instance has a hold row on one of their conversations: then the normal path marks it
            // and refuses the callback, which is what starts a takeover when that instance died.
            if batch.setAside.isEmpty, batch.positions.isEmpty, first.isEmpty, heldHere.isEmpty, withheld.isEmpty, !admitted.isEmpty,
               admitted.allSatisfy(isDroppedEcho),
               await noHoldElsewhere(holdKeys) {
                intake.gate.recorded(admitted)
                intake.gate.markKnown(fresh.keys)
                var recorded = Recorded()
                recorded.result.echoes = admitted.count
                _ = finishIngest(admitted, recorded)
                return
            }
            let recordStart = MessageSpans.isOn ? MessageSpans.Instant.now : nil
            // The listener whose callback carried them (set by `BridgeListener`); none: a poller's.
            let listener = MessageSpans.Arrival.current?.listener ?? EventOrigin.poll
            try await ingestGrouped(admitted, setAside: batch.setAside, firstCheckpoints: first, holdKeys: holdKeys, takeHolds: heldHere,
                                    positions: batch.positions, listener: listener, withheld: withheld,
                                    checkReadPast: checkReadPast)
            if let recordStart {
                // The callback and record spans of each event (docs/operations.md, "Tracing").
                MessageSpans.recorded(admitted.map { ($0.backend.rawValue, $0.eventID.rawValue) }, recordStart: recordStart, recordEnd: .now,
                                      instance: intake.holds.owner)
            }
            intake.gate.recorded(admitted)
            intake.gate.markKnown(fresh.keys)
        } catch let past as ReadPast {
            throw past
        } catch let held as HeldElsewhere {
            // Another instance is catching these conversations up (`SharedHolds`): the vendor sends the
            // callback again; once the hold is gone this instance checks that a read covered it.
            intake.gate.heldElsewhere(held.keys)
            metrics.increment("imbridge_callbacks_held_elsewhere_total")
            throw IMError(.unavailable, "the conversation is being caught up by another instance: deliver again later", isRetryable: true)
        } catch {
            intake.gate.notRecorded(admitted + withheld.map(\.message))
            metrics.increment("imbridge_ingest_errors_total")
            logStoreError("ingest", error)
            throw error
        }
    }

    /// With other instances on the store, a conversation of a `.sequence` source (WuKongIM) that this
    /// instance has not met may have been recorded by them up to any point: admitted blind, a live message
    /// could go ahead of older ones still on their way (the other instance's callbacks, or ones the vendor
    /// retries). Its position is read from the store first — its catch-up checkpoint, which never names a
    /// message beyond what was recorded without a hole — so the gate compares with it and a message past
    /// it is held and the conversation read from history (docs/high-availability.md, "Held conversations").
    /// A conversation with no checkpoint yet is new to every instance: its first message is admitted.
    nonisolated func positionUnseen(_ events: [IMEvent]) async throws {
        let keys = intake.gate.unpositioned(in: events)
        guard !keys.isEmpty else { return }
        let found = try await store.reading { tx in
            try keys.compactMap { key in try tx.checkpoint(CatchUpCheckpoint.name(for: key)).map { (key, $0) } }
        }
        for (key, value) in found {
            guard let record = CatchUpCheckpoint.Record(stored: value), let seq = record.seq else { continue }
            intake.gate.seed(key, lastSeq: seq)
        }
    }

    /// Callback marks are kept in the store, so every instance on it refuses a signature another one
    /// took with another body (docs/operations.md, "Forged and replayed callbacks").
    public nonisolated func remember(_ mark: CallbackMark) async throws -> CallbackMark.Outcome? {
        let now = clock.nowMs()
        do {
            return try await store.groupedTransaction { try $0.rememberCallback(mark, at: now) }
        } catch {
            metrics.increment("imbridge_store_errors_total", ["operation": "remember_callback"])
            logStoreError("remember_callback", error)
            throw IMError(.unavailable, "the callback's signature could not be recorded", isRetryable: true)
        }
    }

    /// Events a callback brought that were answered with a retry before the intake saw them (their
    /// callback's mark could not be recorded: the store down): their conversations are read back before
    /// anything newer is recorded there, as for events the intake could not record (`CatchUpGate.notRecorded`).
    public nonisolated func unrecorded(_ events: [IMEvent]) {
        intake.gate.notRecorded(events)
    }

    /// Counted, and logged (at most one line per backend a second, with how many were held back): the
    /// reason's class and the adapter's message, which never quotes the request body.
    public nonisolated func refused(_ error: IMError, backend: BackendID) {
        metrics.increment("imbridge_callbacks_refused_total", ["backend": backend.rawValue, "code": error.code.rawValue])
        guard let held = logs.refusalLines.admit(backend.rawValue, now: clock.nowMs()) else { return }
        logs.listener.warning("callback refused", metadata: [
            "backend": "\(backend)", "reason": "\(error.code.rawValue)", "detail": "\(String(error.message.prefix(200)))",
            "refusals_not_logged": "\(held)",
        ])
    }

    /// A callback that verified, or a poll the vendor answered: the backend's sign of life on the status page.
    public nonisolated func heard(from backend: BackendID) {
        health.heard(backend, at: clock.nowMs())
    }
}

extension RelayEngine {
    /// What one `ingest` did.
    public struct IngestResult: Sendable, Equatable {
        public var accepted = 0
        public var duplicates = 0
        public var echoes = 0
        /// Outbox entries queued for the events (not counting `profilesQueued` and `groupsQueued`).
        public var queued = 0
        /// `profile` entries queued for puppets seen for the first time (`ProfileSync`).
        public var profilesQueued = 0
        /// `group` entries queued for target groups reached for the first time (`GroupSync`).
        public var groupsQueued = 0
    }

    /// Records events and queues their relays in one transaction (see the type's contract), outside the
    /// group commit; for tests (production intake is `ingestGrouped`).
    @discardableResult
    @_spi(Testing) public nonisolated func ingest(_ events: [IMEvent]) throws -> IngestResult {
        let now = clock.nowMs()
        let planned = try store.transaction { tx in try record(events, tx, at: now) }
        return finishIngest(events, planned)
    }

    /// `ingest` through the store's group commit: the transaction is committed together with other
    /// writes submitted at the same time (other callbacks, lanes completing), off the cooperative
    /// thread pool. Same contract: it returns only after the events' rows are committed.
    /// (History a migration copied needs no check here: the migration records the ledger rows of the
    /// messages live intake or catch-up can still meet, `queueMigration`.)
    @discardableResult
    public nonisolated func ingestGrouped(_ events: [IMEvent], setAside: [SetAsideMessage] = [],
                                          firstCheckpoints: [(name: String, value: String)] = []) async throws -> IngestResult {
        try await ingestGrouped(events, setAside: setAside, firstCheckpoints: firstCheckpoints, holdKeys: [])
    }

    /// `holdKeys`: the conversations of live messages, refused when another instance holds one (`SharedHolds`).
    @discardableResult
    /// `release`: a catch-up's store hold, given up in the same transaction unless marked since (`HoldMarked`).
    /// `takeHolds`: conversations this instance holds live messages of, held in the store for it in the
    /// same transaction (refused like `holdKeys` when another instance holds one).
    /// `positions`: change-feed positions the events were read up to, stored with them (`FeedPositions`).
    /// `listener`: who took the events in, kept on their ledger rows with this instance (`EventOrigin`):
    /// the listener's address for a callback's, `poll` for a poller's; catch-up's by default.
    /// `withheld`: messages recorded in the ledger only (`screenBehind`).
    /// `checkReadPast`: live messages a stored read position is past are sent back to be screened (`ReadPast`).
    package nonisolated func ingestGrouped(_ events: [IMEvent], setAside: [SetAsideMessage], firstCheckpoints: [(name: String, value: String)],
                                   holdKeys: [CatchUpGate.Key], takeHolds: [CatchUpGate.Key] = [],
                                   release: (name: String, token: Int64)? = nil, positions: [FeedPosition] = [],
                                   listener: String = EventOrigin.catchUp, withheld: [Withheld] = [],
                                   checkReadPast: Bool = false) async throws -> IngestResult {
        let now = clock.nowMs()
        let origin = EventOrigin(listener: listener, instance: intake.holds.owner)
        let outcome = try await store.groupedTransaction { [self] tx -> Result<(Recorded, [Withheld]), any Error> in
            // Behind another read's stored position and not recorded: nothing is recorded, the caller screens them.
            if checkReadPast, let past = try readPast(events, tx) { return .failure(past) }
            // Held by another instance: nothing is recorded, the mark on its hold is committed.
            let held = try intake.holds.mark(holdKeys, tx) + intake.holds.take(takeHolds, tx, at: now)
            if !takeHolds.isEmpty || !held.isEmpty {
                logs.relay.debug("intake: conversations held in the store", metadata: [
                    "held_here": "\(takeHolds.map { "\($0.conversation)" })", "held_elsewhere": "\(held.map { "\($0.conversation)" })",
                ])
            }
            if !held.isEmpty { return .failure(HeldElsewhere(keys: held)) }
            let newlyWithheld = try recordWithheld(withheld, tx, at: now, origin: origin)
            var recorded = try record(events, tx, at: now, origin: origin)
            recorded.kept = try keep(setAside, tx, at: now)
            for (name, value) in firstCheckpoints where try tx.checkpoint(name) == nil {
                try tx.setCheckpoint(name, value, at: now)
            }
            if let release { guard try tx.releaseLease(release.name, owner: intake.holds.owner, token: release.token) else { throw HoldMarked() } }
            try FeedPositions.store(positions, tx, at: now)
            return .success((recorded, newlyWithheld))
        }
        let (recorded, newlyWithheld) = try outcome.get()
        noteWithheld(newlyWithheld)
        return finishIngest(events, recorded)
    }
}
