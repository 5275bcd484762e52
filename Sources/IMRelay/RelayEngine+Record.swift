import Foundation
import IMAdapterKit
import IMCore
import IMStore
import Logging
import IMOutbox

/// The producer of events (docs/architecture.md, "Producers"): the ledger, the echo check, the plan of
/// each route leg and the outbox entries, in the caller's transaction.
extension RelayEngine {

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

    /// An expansion change taken in (docs/expansions.md, "Convergence"), by the intake and by a migration
    /// that reads one from history (NIM's carrier) alike: keys the bridge wrote under the key encoding come
    /// back as the original keys (ExpansionKeyCodec, `event` rewritten with them), the change is converged
    /// with the message's stored state, and the writes back into a copy whose own change lost are queued.
    /// Nil for any other event. Without it a migrated change would be planned against a state that never
    /// heard of it: a removal made while the bridge was down lost to the value it had relayed before.
    nonisolated func takeInExpansionChange(_ event: inout IMEvent, at now: Int64, _ tx: StoreTransaction,
                                           to draft: inout OutboxDraft) throws -> ExpansionConvergence.Decision? {
        guard case .expansionChanged(let id, let conversation, let by, let raw) = event.kind else { return nil }
        let capabilities = backends[event.backend]?.capabilities
        let limits = capabilities?.support(.expansion).isNative == true ? capabilities?.expansionLimits : nil
        let convergence = ExpansionConvergence(routes: routes)
        let copies = try convergence.lockCopies(of: id, on: event.backend, in: conversation, tx)
        let delta = ExpansionKeyCodec.decode(raw, for: limits, known: Array(try tx.expansionKeys(of: id, on: event.backend).keys))
        event.kind = .expansionChanged(messageID: id, conversation: conversation, by: by, delta: delta)
        let version = if capabilities?.expansionVersionIsChangeTime == true {
            delta.version
        } else if capabilities?.expansionVersionIsReadTime == true, delta.version > 0 {
            min(delta.version, now)
        } else {
            now
        }
        let decision = try convergence.intake(delta, of: id, on: event.backend, in: conversation, version: version, copies: copies, tx)
        for repair in decision.repairs {
            let actor = by ?? repair.leg.targetUser("bridge")
            let names = ExpansionDelta(version: delta.version, removed: repair.keys)
            let payload = OutboxPayload(action: .expansion(source: repair.source.toMessage, by: actor, delta: names),
                                        route: repair.leg.route, eventTimeMs: now, sourceConversation: repair.source.toConversation)
            try draft.add(payload, lane: LaneKey(backend: event.backend, conversation: conversation), source: repair.source.toBackend,
                          eventID: event.eventID)
        }
        return decision
    }

    /// Records a callback's events and queues their relays: the ledger rows (with the echo check) for all
    /// events at once, then the outbox rows for all at once — on PostgreSQL two statements per callback,
    /// however many messages it carries (and before them, for a NIM or RongCloud source, the migration's
    /// stored read positions of each conversation: `readPast`). `origin`: who took them in, kept on their ledger rows.
    nonisolated func record(_ events: [IMEvent], _ tx: StoreTransaction, at now: Int64, origin: EventOrigin? = nil) throws -> Recorded {
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
        }, at: now, origin: origin)
        var draft = OutboxDraft()
        var membershipEntries = 0, groupEntries = 0
        for (received, outcome) in zip(candidates, outcomes) {
            var event = received
            logs.relay.debug("intake: event", metadata: [
                "backend": "\(event.backend)", "event_id": "\(event.eventID)", "kind": "\(event.kindName)", "ledger": "\(outcome)",
                "listener": "\(origin?.listener ?? "")",
            ])
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
            if case .message(let message) = event.kind { try keepSentExpansion(message, on: event.backend, tx) }
            let converged = try takeInExpansionChange(&event, at: now, tx, to: &draft)
            for routed in routes.legs(from: event.backend, conversation: event.conversation) {
                guard let target = backends[routed.target] else { continue }
                let (leg, lane) = try portalLane(event, try mappedLeg(event, routed, tx), tx, at: now)
                // A dissolution: one entry in the group's lane, after its earlier events (`GroupDissolution`).
                if case .groupDissolved = event.kind {
                    if !echo, let payload = dissolution(event, leg: leg) { try draft.add(payload, lane: lane, source: event.backend, eventID: event.eventID) }
                    continue
                }
                if let subject = groupSubject(event, leg: leg) {
                    recorded.groupSubjects.append(subject)
                    // A vendor's membership event: the group is compared now, not at the next round.
                    if case .membersChanged = event.kind {
                        try addGroupEntry(subject, eventID: event.eventID, at: now, to: &draft)
                        membershipEntries += 1
                    }
                }
                // First event of a group on this leg: the target group is set up ahead of it (`GroupSync`).
                if let name = try firstSightGroup(event, leg: leg, lane: lane, tx, at: now, to: &draft) {
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
                    var payload = OutboxPayload(action: action, route: leg.route, eventTimeMs: Self.eventTime(event) ?? now,
                                                sourceConversation: event.conversation)
                    if case .send = action, case .message(let message) = event.kind { payload.sourceSender = message.sender }
                    let index = try draft.add(payload, lane: lane, source: event.backend, eventID: event.eventID)
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
        case .expansionChanged(_, _, let by, _), .groupDissolved(_, let by, _):
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
             .command(_, _, _, let at), .deleted(_, _, _, _, let at), .membersChanged(_, _, _, _, let at), .groupDissolved(_, _, let at): at
        case .expansionChanged: nil
        }
    }

    /// What a message of a source whose history catch-up compares (`ChangeWindowSource`) was sent with:
    /// kept as what it holds (`ExpansionKeyRecord.held`), so that a key changed while the bridge was down
    /// shows as a change, not as a first value (docs/architecture.md, "Catch-up of changes").
    nonisolated func keepSentExpansion(_ message: Message, on backend: BackendID, _ tx: StoreTransaction) throws {
        guard let entries = message.expansion?.entries, !entries.isEmpty, backends[backend] is any ChangeWindowSource else { return }
        try tx.lockExpansionKeys(of: [(message.id, backend)])
        let known = try tx.expansionKeys(of: message.id, on: backend)
        try tx.putExpansionKeys(entries.filter { known[$0.key] == nil }.map { ExpansionKeyRecord(key: $0.key, held: .known($0.value.value)) },
                                of: message.id, on: backend)
    }
}
