import Foundation
import IMAdapterKit
import IMCore
import IMStore
import Logging

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
        let admitted = intake.gate.admit(batch.events)
        let fresh = intake.gate.unknownConversations(in: admitted)
        let holdKeys = intake.holds.enabled ? intake.gate.holdKeys(in: admitted) : []
        // Held here (a catch-up under way or to come): held in the store before the vendor is answered,
        // so that another instance does not record the conversation's next message meanwhile.
        let heldHere = intake.holds.enabled ? intake.gate.heldKeys(batch.events, admitted: admitted) : []
        do {
            let backends = self.backends
            let first = CatchUpRunner.firstCheckpoints(fresh, routes: routes) { key, message in
                try? (backends[key.backend] as? any CatchUpSource)?.cursor(for: message)
            }
            // Only the bridge's own writes coming back (a target routing the bridge's sends to it): `record`
            // would drop every one before the ledger, so no store transaction is joined for them — unless
            // another instance has a hold row on one of their conversations: then the normal path marks it
            // and refuses the callback, which is what starts a takeover when that instance died.
            if batch.setAside.isEmpty, first.isEmpty, heldHere.isEmpty, !admitted.isEmpty, admitted.allSatisfy(isDroppedEcho),
               await noHoldElsewhere(holdKeys) {
                intake.gate.recorded(admitted)
                intake.gate.markKnown(fresh.keys)
                var recorded = Recorded()
                recorded.result.echoes = admitted.count
                _ = finishIngest(admitted, recorded)
                return
            }
            try await ingestGrouped(admitted, setAside: batch.setAside, firstCheckpoints: first, holdKeys: holdKeys, takeHolds: heldHere)
            intake.gate.recorded(admitted)
            intake.gate.markKnown(fresh.keys)
        } catch let held as HeldElsewhere {
            // Another instance is catching these conversations up (`SharedHolds`): the vendor sends the
            // callback again; once the hold is gone this instance checks that a read covered it.
            intake.gate.heldElsewhere(held.keys)
            metrics.increment("imbridge_callbacks_held_elsewhere_total")
            throw IMError(.unavailable, "the conversation is being caught up by another instance: deliver again later", isRetryable: true)
        } catch {
            intake.gate.notRecorded(admitted)
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
            try keys.compactMap { key in try tx.checkpoint(CatchUpRunner.checkpointName(for: key)).map { (key, $0) } }
        }
        for (key, value) in found {
            guard let record = try? JSONDecoder().decode(CatchUpRunner.Record.self, from: Data(value.utf8)), let seq = record.seq else { continue }
            intake.gate.seed(key, lastSeq: seq)
        }
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
    nonisolated func ingestGrouped(_ events: [IMEvent], setAside: [SetAsideMessage], firstCheckpoints: [(name: String, value: String)],
                                   holdKeys: [CatchUpGate.Key], takeHolds: [CatchUpGate.Key] = [],
                                   release: (name: String, token: Int64)? = nil) async throws -> IngestResult {
        let now = clock.nowMs()
        let outcome = try await store.groupedTransaction { [self] tx -> Result<Recorded, HeldElsewhere> in
            // Held by another instance: nothing is recorded, the mark on its hold is committed.
            let held = try intake.holds.mark(holdKeys, tx) + intake.holds.take(takeHolds, tx, at: now)
            if !held.isEmpty { return .failure(HeldElsewhere(keys: held)) }
            var recorded = try record(events, tx, at: now)
            recorded.kept = try keep(setAside, tx, at: now)
            for (name, value) in firstCheckpoints where try tx.checkpoint(name) == nil {
                try tx.setCheckpoint(name, value, at: now)
            }
            if let release { guard try tx.releaseLease(release.name, owner: intake.holds.owner, token: release.token) else { throw HoldMarked() } }
            return .success(recorded)
        }
        return finishIngest(events, try outcome.get())
    }

    /// Keeps poison messages as inbound dead letters; returns those kept now (not kept before).
    nonisolated func keep(_ setAside: [SetAsideMessage], _ tx: StoreTransaction, at now: Int64) throws -> [SetAsideMessage] {
        try setAside.filter { item in
            try tx.keepInbound(backend: item.backend, key: item.key, format: item.format, payload: Data(item.raw),
                               reason: String(item.reason.prefix(2000)), at: now)
        }
    }

    /// What `retryInboundDeadLetters` did.
    public struct InboundRetryResult: Sendable, Equatable {
        /// Converted and taken (their events are queued like any callback's).
        public var relayed = 0
        /// Still not convertible (kept, with the new reason).
        public var stillPoison = 0
        /// Ids not found, or whose backend is not configured or cannot replay.
        public var skipped = 0
    }

    /// Re-runs inbound dead letters (all, or `ids`) through the normal intake: the backend that received
    /// each converts it again (`InboundHandling.replay`, after a mapping fix), and its events are taken
    /// like a callback's (ledger, echo check, routes, outbox) in the transaction that removes the dead
    /// letter. One that still does not convert stays, with the new reason. The engine need not be
    /// running: a running bridge on the same store picks the queued work up within its scan interval.
    public nonisolated func retryInboundDeadLetters(ids: [Int64]? = nil) async throws -> InboundRetryResult {
        var result = InboundRetryResult()
        let letters = try await store.reading { try $0.inboundDeadLetters(ids: ids, limit: 100_000) }
        result.skipped = (ids?.count ?? letters.count) - letters.count
        for letter in letters {
            guard let receiver = backends[letter.backend] as? any InboundHandling else {
                result.skipped += 1
                continue
            }
            let message = SetAsideMessage(backend: letter.backend, key: letter.key, format: letter.format, raw: Array(letter.payload),
                                          reason: letter.reason)
            let batch: InboundBatch
            do {
                batch = try await receiver.replay(message)
            } catch let error as IMError where error.code == .unsupported {
                result.skipped += 1
                continue
            } catch {
                batch = InboundBatch(setAside: [SetAsideMessage(backend: letter.backend, key: letter.key, format: letter.format,
                                                                raw: message.raw, reason: SetAsideMessage.reason(error))])
            }
            let now = clock.nowMs()
            let still = batch.setAside.first { $0.key == letter.key } ?? batch.setAside.first
            let events = batch.events
            let others = batch.setAside.filter { $0 != still }
            let planned = try await store.groupedTransaction { [self] tx in
                var recorded = try record(events, tx, at: now)
                recorded.kept = try keep(others, tx, at: now)
                if let still {
                    try tx.failedInboundRetry(letter.id, reason: String(still.reason.prefix(2000)))
                } else {
                    try tx.removeInboundDeadLetter(letter.id)
                }
                return recorded
            }
            _ = finishIngest(events, planned)
            if still == nil { result.relayed += 1 } else { result.stillPoison += 1 }
        }
        if result.relayed > 0 { metrics.increment("imbridge_inbound_dead_letters_retried_total", by: result.relayed) }
        return result
    }

    struct Recorded: Sendable {
        var result = IngestResult()
        var fallbacks: [Fallback] = []
        var lanes: Set<LaneKey> = []
        var kept: [SetAsideMessage] = []
        /// Puppets whose senders this batch saw (`ProfileSync`).
        var profileSubjects: [ProfileSync.Subject] = []
        /// Target groups this batch queued a `group` entry for (`GroupSync`).
        var groupNames: [String] = []
        /// Target groups this batch saw events for (`GroupSync`).
        var groupSubjects: [GroupSync.Subject] = []
        /// `group` entries queued for membership events (`GroupSync`).
        var membershipEntries = 0
        /// Expansion changes dead-lettered at intake (a value over the target's limit).
        var refused = 0
    }

    struct Fallback: Sendable {
        var feature: String
        var policy: FallbackPolicy
    }

    /// Records a callback's events and queues their relays: the ledger rows (with the echo check) for all
    /// events at once, then the outbox rows for all at once — on PostgreSQL two statements per callback,
    /// however many messages it carries.
    nonisolated func record(_ events: [IMEvent], _ tx: StoreTransaction, at now: Int64) throws -> Recorded {
        var recorded = Recorded()
        // The bridge's own writes, evident without the store, are dropped before the ledger — except
        // expansion changes: what they show is what the copy now holds, which convergence needs (an
        // echo relays nothing but the writes convergence asks for, ExpansionConvergence).
        var bridgeWritten: Set<EventID> = []
        let candidates = events.filter { event in
            guard isEvidentEcho(event) else { return true }
            recorded.result.echoes += 1
            guard case .expansionChanged = event.kind else { return false }
            bridgeWritten.insert(event.eventID)
            return true
        }
        let outcomes = try tx.recordEvents(candidates.map { event in
            var message: MessageID?
            if case .message(let sent) = event.kind { message = sent.id }
            return StoreTransaction.InboundEvent(backend: event.backend, eventID: event.eventID, kind: event.kindName, message: message)
        }, at: now)
        var draft = OutboxDraft()
        var membershipEntries = 0, groupEntries = 0
        for (received, outcome) in zip(candidates, outcomes) {
            var event = received
            switch outcome {
            case .duplicate:
                recorded.result.duplicates += 1
                continue
            case .echo:
                recorded.result.echoes += 1
                continue
            case .new:
                break
            }
            let echo = bridgeWritten.contains(event.eventID)
            if !echo { recorded.result.accepted += 1 }
            var converged: ExpansionConvergence.Decision?
            if case .expansionChanged(let id, let conversation, let by, let raw) = event.kind {
                // Keys the bridge wrote under the key encoding come back as the original keys (ExpansionKeyCodec).
                let capabilities = backends[event.backend]?.capabilities
                let limits = capabilities?.support(.expansion).isNative == true ? capabilities?.expansionLimits : nil
                let delta = ExpansionKeyCodec.decode(raw, for: limits, known: Array(try tx.expansionKeys(of: id, on: event.backend).keys))
                event.kind = .expansionChanged(messageID: id, conversation: conversation, by: by, delta: delta)
                let version = backends[event.backend]?.capabilities.expansionVersionIsChangeTime == true ? delta.version : now
                let decision = try ExpansionConvergence(routes: routes).intake(delta, of: id, on: event.backend, in: conversation,
                                                                               version: version, tx)
                for repair in decision.repairs {
                    let actor = by ?? repair.leg.targetUser("bridge")
                    let names = ExpansionDelta(version: delta.version, removed: repair.keys)
                    let payload = OutboxPayload(action: .expansion(source: repair.source.toMessage, by: actor, delta: names),
                                                route: repair.leg.route, eventTimeMs: now, sourceConversation: repair.source.toConversation)
                    try draft.add(payload, lane: LaneKey(backend: event.backend, conversation: conversation), source: repair.source.toBackend,
                                  eventID: event.eventID)
                }
                converged = decision
            }
            for leg in routes.legs(from: event.backend, conversation: event.conversation) {
                guard let target = backends[leg.target] else { continue }
                if let subject = groupSubject(event, leg: leg) {
                    recorded.groupSubjects.append(subject)
                    // A vendor's membership event: the group is compared now, not at the next round.
                    if case .membersChanged = event.kind {
                        try addGroupEntry(subject, eventID: event.eventID, at: now, to: &draft)
                        membershipEntries += 1
                    }
                }
                // First event of a group on this leg: the target group is set up ahead of it (`GroupSync`).
                if let name = try firstSightGroup(event, leg: leg, tx, at: now, to: &draft) {
                    recorded.groupNames.append(name)
                    groupEntries += 1
                }
                if let subject = profileSubject(event, leg: leg) {
                    recorded.profileSubjects.append(subject)
                    // First sight of this sender's puppet: its profile entry, in a lane of its own (`ProfileSync`).
                    try firstSightProfiles([subject], event: event, tx, at: now, to: &draft)
                }
                let planned = planner.plan(event, leg: leg)
                if !echo { recorded.fallbacks += planned.fallbacks.map { Fallback(feature: $0.0, policy: $0.1) } }
                for proposed in planned.actions {
                    var action = proposed
                    if case .expansion(let source, let by, let delta) = proposed {
                        // Only the keys whose copy there does not hold the converged value (all while unmapped).
                        if let keys = converged?.keys[leg.target] {
                            guard let narrowed = delta.narrowed(to: keys) else { continue }
                            action = .expansion(source: source, by: by, delta: narrowed)
                        }
                    } else if echo {
                        continue   // an echo's notices and other fallbacks were relayed with the original change
                    }
                    let payload = OutboxPayload(action: action, route: leg.route, eventTimeMs: Self.eventTime(event) ?? now,
                                                sourceConversation: event.conversation)
                    let index = try draft.add(payload, lane: LaneKey(backend: leg.target, conversation: leg.targetConversation),
                                              source: event.backend, eventID: event.eventID)
                    if case .expansion(_, _, let delta) = action, let reason = ExpansionConvergence.refusal(delta, target: target) {
                        draft.refuse(index, reason: reason)
                        recorded.refused += 1
                    }
                }
            }
        }
        let ids = try draft.write(tx, at: now, cache: payloads)
        recorded.lanes = draft.lanes
        let profileEntries = draft.count(of: "profile")
        recorded.membershipEntries = membershipEntries
        recorded.result.groupsQueued += groupEntries + membershipEntries
        recorded.result.queued += ids.count - profileEntries - groupEntries - membershipEntries
        recorded.result.profilesQueued += profileEntries
        return recorded
    }

    nonisolated func finishIngest(_ events: [IMEvent], _ recorded: Recorded) -> IngestResult {
        let result = recorded.result
        people.profiles.noteActive(recorded.profileSubjects)
        people.profiles.markQueued(recorded.profileSubjects)
        people.groupsSeen.insert(recorded.groupNames)
        people.groupsSeen.noteActive(recorded.groupSubjects)
        for event in events { metrics.increment("imbridge_events_in_total", ["backend": event.backend.rawValue, "kind": event.kindName]) }
        for fallback in recorded.fallbacks {
            metrics.increment("imbridge_fallbacks_total", ["feature": fallback.feature, "policy": fallback.policy.rawValue])
        }
        if result.duplicates > 0 { metrics.increment("imbridge_duplicates_total", by: result.duplicates) }
        if result.echoes > 0 { metrics.increment("imbridge_echoes_total", by: result.echoes) }
        if recorded.refused > 0 {
            logs.relay.warning("expansion change refused at intake: a value is over the target's limit (see `imbridge deadletters list`)",
                           metadata: ["count": "\(recorded.refused)"])
        }
        for item in recorded.kept {
            metrics.increment("imbridge_inbound_dead_letters_total", ["backend": item.backend.rawValue])
            logs.relay.warning("inbound message set aside as a dead letter (see `imbridge deadletters list`)",
                           metadata: ["backend": "\(item.backend)", "key": "\(item.key)", "reason": "\(item.reason.prefix(300))"])
        }
        if result.queued + result.profilesQueued + result.groupsQueued > 0 { wakeLanes(recorded.lanes) }
        return result
    }

    /// No other instance has a hold row (live or left by a dead instance) on any of `keys`: one read, no
    /// write transaction. False when the store cannot tell (the caller then takes the normal path).
    ///
    /// One read lists the other instances' hold rows; when there is none (the usual case: holds last while
    /// a conversation is caught up), the echo-only callbacks of the next `SharedHolds.echoCheckWindowMs`
    /// take that answer instead of a read each — a target that routes the bridge's sends back calls back
    /// once per relayed message.
    nonisolated func noHoldElsewhere(_ keys: [CatchUpGate.Key]) async -> Bool {
        guard intake.holds.enabled, !keys.isEmpty else { return true }
        let started = DispatchTime.now().uptimeNanoseconds
        if started < intake.noForeignHoldsUntil.withLock({ $0 }) { return true }
        let (owner, limit) = (intake.holds.owner, 200)
        guard let foreign = try? await store.reading({ try $0.foreignLeases(prefix: SharedHolds.prefix, notOwnedBy: owner, limit: limit) })
        else { return false }
        if foreign.isEmpty {
            let until = started + SharedHolds.echoCheckWindowMs * 1_000_000
            intake.noForeignHoldsUntil.withLock { $0 = max($0, until) }
            return true
        }
        let names = keys.map(SharedHolds.name)
        guard foreign.count == limit else { return Set(foreign).isDisjoint(with: names) }
        guard let owners = try? await store.reading({ try $0.leaseOwners(names) }) else { return false }
        return owners.values.allSatisfy { $0 == owner }
    }

    /// An evident echo that `record` drops before the ledger (an expansion change is kept: convergence
    /// reads what the copy holds now).
    nonisolated func isDroppedEcho(_ event: IMEvent) -> Bool {
        if case .expansionChanged = event.kind { return false }
        return isEvidentEcho(event)
    }

    /// An event the bridge caused, known from the event alone: a message carrying the bridge's client id or
    /// sent by one of its identities, a change made by one. (A message the bridge wrote that carries
    /// neither is found through the id map when it is recorded: `EventRecord.echo`.)
    nonisolated func isEvidentEcho(_ event: IMEvent) -> Bool {
        func bridge(_ user: UserID?) -> Bool { user.map { routes.isBridgeIdentity($0, on: event.backend) } ?? false }
        switch event.kind {
        case .message(let message):
            return message.clientMessageID?.rawValue.hasPrefix(Self.clientIDPrefix) == true || bridge(message.sender)
        case .edited(_, _, let by, _, _), .recalled(_, _, let by, _), .deleted(_, _, let by, _, _):
            return bridge(by)
        case .membersChanged(_, let joined, let left, let by, _):
            // Made by the bridge, or only the bridge's puppets came or went (its own comparison's writes).
            return bridge(by) || (!(joined + left).isEmpty && (joined + left).allSatisfy { bridge($0) })
        case .expansionChanged(_, _, let by, _):
            return bridge(by)
        case .reaction(_, _, let user, _, _, _), .read(_, let user, _, _):
            return bridge(user)
        case .command(_, let sender, _, _):
            return bridge(sender)
        }
    }

    static func eventTime(_ event: IMEvent) -> Int64? {
        switch event.kind {
        case .message(let message): message.sentAt
        case .edited(_, _, _, _, let at), .recalled(_, _, _, let at), .reaction(_, _, _, _, _, let at), .read(_, _, _, let at),
             .command(_, _, _, let at), .deleted(_, _, _, _, let at), .membersChanged(_, _, _, _, let at): at
        case .expansionChanged: nil
        }
    }
}
