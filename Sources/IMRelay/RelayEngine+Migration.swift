import Foundation
import IMAdapterKit
import IMCore
import IMStore
import IMOutbox
import IMPositions

/// `imbridge migrate` as a producer of outbox entries (docs/migration.md, "Through the outbox"): a
/// history page's copies are queued in the migration's lane in one transaction with the dedupe facts
/// and the conversation's checkpoint, and then run like every other entry (client id `imb-<id>`, the
/// earlier-copy search on a retry, the id-map row in the completing transaction, retries, dead letters).
extension RelayEngine {
    /// One source message as a migration queues it.
    package struct MigrationItem: Sendable {
        /// The event live intake and catch-up give the same message (`CatchUpSource.catchUpEvent(for:)`),
        /// whose ledger row is the dedupe fact they share with the migration.
        package var event: IMEvent
        package var message: Message
        /// The copy (`.send`) and, for a message recalled on the source, its `.recall` after it.
        package var actions: [RelayAction]
        package var mark: MigrationMark
        /// Recent enough for a live callback or catch-up to meet it (`Migrator.liveWindowMs`): recorded in
        /// the ledger, with the other legs of the configured routes, as intake would record it.
        package var recordInLedger: Bool
        /// For a message recalled on the source: the event its recall's callback (or a change read) gives
        /// (`CatchUpSource.recallEvent(for:)`), recorded with the message's row, so that the recall the
        /// copy carries is not queued a second time when that callback comes.
        package var recallEvent: IMEvent?

        package init(event: IMEvent, message: Message, actions: [RelayAction], mark: MigrationMark, recordInLedger: Bool,
                     recallEvent: IMEvent? = nil) {
            (self.event, self.message, self.actions, self.mark, self.recordInLedger) = (event, message, actions, mark, recordInLedger)
            self.recallEvent = recallEvent
        }
    }

    /// What became of one item.
    package enum MigrationQueued: Sendable, Equatable {
        /// Queued: the id of its `.send` entry and of its last entry (the recall that follows it, or the send).
        case queued(send: Int64, last: Int64)
        /// The id map names its copy on the target already: nothing queued.
        case alreadyCopied
        /// Taken back on its source after the page was read, and a catch-up has read past it meanwhile
        /// (`screenedMigration`): recorded as withheld, nothing queued.
        case withheld
    }

    /// Items of a page that a stored catch-up read is past without their having been recorded (the page
    /// is looked up again before it is queued: `queueMigration`).
    struct MigrationReadPast: Error {
        var items: [MigrationItem]
    }

    /// Queues `items` (one history page, oldest first) in `leg`'s lane and moves `checkpoint` in the same
    /// transaction, so that what a rerun starts after is exactly what is queued.
    ///
    /// Duplicate check, shared with live intake and catch-up: a recent item's ledger row
    /// `(source, eventID)` is recorded here (see `MigrationItem.recordInLedger`); a callback or catch-up
    /// of the same message that comes later is a ledger duplicate and queues nothing. When the row is
    /// new, the other legs of the configured routes get the message as intake would give it (skipping a
    /// target whose id map already names a copy), so recording it here takes nothing from them. When
    /// the row was there already (live intake or catch-up came first), the copy is queued anyway: it
    /// runs after the live entry in the same lane, and the executor sends no message whose copy the id
    /// map names (`execute`), so the lane keeps one copy whichever entry carries it.
    ///
    /// A page read before one of its messages was taken back on a source whose history drops it
    /// (`ChangeWindowSource`), and queued after a catch-up read past that message and queued newer ones,
    /// would put its copy behind theirs in the lane. So, as the intake screens a late callback (`readPast`,
    /// docs/architecture.md, "Callbacks behind the catch-up position"), a recent item not recorded yet and
    /// sent before the conversation's stored catch-up checkpoint sends the page back: it is looked up in
    /// the source's history again; still shown (or history cannot tell), it is copied, late but not lost;
    /// gone, it is **withheld** — its ledger rows are written as the intake writes them, nothing is queued.
    package nonisolated func queueMigration(_ items: [MigrationItem], leg: RouteLeg, checkpoint: (name: String, value: String)?) async throws
        -> [MigrationQueued] {
        var shown: Set<EventID> = []
        var gone: [EventID: Withheld] = [:]
        var pass = 0
        while true {
            let outcome = try await queueMigrationOnce(items, leg: leg, checkpoint: checkpoint, screen: pass < ReadPast.maxPasses,
                                                       shown: shown, gone: gone)
            guard case .failure(let past) = outcome else { return try outcome.get() }
            for item in past.items {
                guard case .message(let message) = item.event.kind, let source = backends[item.event.backend] as? any ChangeWindowSource,
                      (try? await source.showsInHistory(message)) == false else {
                    shown.insert(item.event.eventID)
                    continue
                }
                gone[item.event.eventID] = Withheld(message: item.event, absence: source.absenceEvent(
                    of: message.id, in: message.conversation, at: clock.nowMs(), by: message.sender))
            }
            logs.relay.info("a migration's page holds messages a catch-up read past: looked up in history again", metadata: [
                "conversation": "\(past.items[0].message.conversation)", "messages": "\(past.items.count)",
                "withheld": "\(gone.count)",
            ])
            pass += 1
        }
    }

    /// One attempt of `queueMigration`. `screen`: items a stored catch-up read is past are sent back
    /// (`MigrationReadPast`) unless looked up already (`shown`, `gone`).
    nonisolated func queueMigrationOnce(_ items: [MigrationItem], leg: RouteLeg, checkpoint: (name: String, value: String)?, screen: Bool,
                                        shown: Set<EventID>, gone: [EventID: Withheld]) async throws
        -> Result<[MigrationQueued], MigrationReadPast> {
        let now = clock.nowMs()
        let lane = LaneKey(backend: leg.target, conversation: leg.targetConversation)
        let origin = EventOrigin(listener: EventOrigin.migration, instance: intake.holds.owner)
        let result = try await store.groupedTransaction { [self] tx -> Result<([MigrationQueued], Set<LaneKey>, [Withheld]), MigrationReadPast> in
            if screen {
                let past = try itemsReadPast(items.filter { shown.contains($0.event.eventID) == false && gone[$0.event.eventID] == nil }, tx)
                if !past.isEmpty { return .failure(MigrationReadPast(items: past)) }
            }
            // Gone from history and still not recorded (a callback recorded meanwhile is copied as usual).
            let withheld = try items.compactMap { item in
                try gone[item.event.eventID].flatMap { try tx.hasEvent(item.event.backend, item.event.eventID) ? nil : $0 }
            }
            let newlyWithheld = try recordWithheld(withheld, tx, at: now, origin: origin)
            let withheldIDs = Set(withheld.map(\.message.eventID))
            let kept = items.filter { !withheldIDs.contains($0.event.eventID) }
            let ledgered = kept.filter(\.recordInLedger)
            let records = try tx.recordEvents(ledgered.map { item in
                StoreTransaction.InboundEvent(backend: item.event.backend, eventID: item.event.eventID, kind: item.event.kindName,
                                              message: item.message.id)
            }, at: now, origin: origin)
            var recordsByEvent: [EventID: StoreTransaction.EventRecord] = [:]
            for (item, record) in zip(ledgered, records) where recordsByEvent[item.event.eventID] == nil {
                recordsByEvent[item.event.eventID] = record
            }
            var draft = OutboxDraft()
            var sendIndex: [(first: Int, last: Int)?] = []
            var recallRows: [IMEvent] = []
            // Messages whose `.send` the lane holds already (the bridge took them in; their copy is not made
            // yet): the bridge relays them, and their changes with them.
            let queuedSends = Set(try tx.pendingSends(in: lane).map(\.source))
            for item in kept {
                let source = item.event.backend
                // A change read from history (NIM's carrier) converges as the intake's would, unless the
                // intake took it in already (its callback came first).
                if recordsByEvent[item.event.eventID] != .duplicate {
                    var change = item.event
                    _ = try takeInExpansionChange(&change, at: now, tx, to: &draft)
                }
                if recordsByEvent[item.event.eventID] == .new {
                    // What the message holds as the migration read it, as the intake keeps it: a key changed
                    // afterwards while the bridge is down then shows as a change in the change window, not
                    // as a first value taken silently (seed 720, docs/reliability.md).
                    if case .message(let message) = item.event.kind { try keepSentExpansion(message, on: source, tx) }
                    for other in routes.legs(from: source, conversation: item.message.conversation)
                    where other.target != leg.target || other.targetConversation != leg.targetConversation {
                        guard backends[other.target] != nil, try !Self.copied(item.message.id, from: source, along: other, tx) else { continue }
                        let otherLane = LaneKey(backend: other.target, conversation: other.targetConversation)
                        for action in planner.plan(item.event, leg: other).actions {
                            var payload = OutboxPayload(action: action, route: other.route, eventTimeMs: item.message.sentAt,
                                                        sourceConversation: item.message.conversation)
                            if case .send = action { payload.sourceSender = item.message.sender }
                            try draft.add(payload, lane: otherLane, source: source, eventID: item.event.eventID)
                        }
                    }
                }
                // Copied already, or queued by the bridge: a migrated copy beside it would be sent after it
                // as nothing (the id map names the bridge's) and its recall would meet a copy taken back
                // already — on NIM, whose history drops it, a dead letter (seed 189, docs/reliability.md).
                if try Self.copied(item.message.id, from: source, along: leg, tx) || queuedSends.contains(item.message.id) {
                    sendIndex.append(nil)
                    continue
                }
                // A recalled message's copy goes with its recall, so the recall's own event is recorded with
                // it: its callback, coming later, is a duplicate. Not for a copy made already (above): its
                // recall is the callback's to carry.
                if item.recordInLedger, let recall = item.recallEvent { recallRows.append(recall) }
                sendIndex.append((draft.count, draft.count + item.actions.count - 1))
                for (n, action) in item.actions.enumerated() {
                    var mark = item.mark
                    if n > 0 { mark.tally = nil }
                    var payload = OutboxPayload(action: action, route: leg.route, eventTimeMs: item.message.sentAt,
                                                sourceConversation: item.message.conversation, migration: mark)
                    if case .send = action { payload.sourceSender = item.message.sender }
                    try draft.add(payload, lane: lane, source: source, eventID: item.event.eventID)
                }
            }
            _ = try tx.recordEvents(recallRows.map { event in
                StoreTransaction.InboundEvent(backend: event.backend, eventID: event.eventID, kind: event.kindName, message: nil)
            }, at: now, origin: origin)
            let ids = try draft.write(tx, at: now, cache: payloads)
            if let checkpoint { try tx.setCheckpoint(checkpoint.name, checkpoint.value, at: now) }
            try Self.noteReadPosition(of: ledgered.filter { backends[$0.event.backend] is any ChangeWindowSource }, tx, at: now)
            var keptOutcomes = sendIndex.map { $0.map { MigrationQueued.queued(send: ids[$0.first], last: ids[$0.last]) } ?? .alreadyCopied }
                .makeIterator()
            let outcomes = items.map { withheldIDs.contains($0.event.eventID) ? .withheld : keptOutcomes.next() ?? .alreadyCopied }
            return .success((outcomes, draft.lanes.union([lane]), newlyWithheld))
        }
        switch result {
        case .failure(let past): return .failure(past)
        case .success(let (outcomes, lanes, newlyWithheld)):
            noteWithheld(newlyWithheld)
            wakeLanes(lanes)
            return .success(outcomes)
        }
    }

    /// The recent items of a page that a conversation's stored catch-up checkpoint (any instance's read) is
    /// past and that the ledger does not hold yet, on a source whose history drops what is taken back.
    nonisolated func itemsReadPast(_ items: [MigrationItem], _ tx: StoreTransaction) throws -> [MigrationItem] {
        var stored = StoredReadPositions { [CatchUpCheckpoint.name(for: $0)] }
        var past: [MigrationItem] = []
        for item in items where item.recordInLedger && backends[item.event.backend] is any ChangeWindowSource {
            guard case .message(let message) = item.event.kind, try stored.past(item.event, message, tx) != nil else { continue }
            past.append(item)
        }
        return past
    }

    /// The page's last message a callback can still bring (`MigrationReadPosition`): any message of its
    /// conversation sent before it that the page did not hold was not in the source's history when read,
    /// so its callback, if it comes now, is screened as one behind the catch-up position (`screenBehind`,
    /// through `readPast` at intake). Moved forward only. Written only for a source whose history drops
    /// what is taken back (`ChangeWindowSource`): the intake reads it for no other.
    static func noteReadPosition(of ledgered: [MigrationItem], _ tx: StoreTransaction, at now: Int64) throws {
        guard let last = ledgered.max(by: { $0.message.sentAt < $1.message.sentAt }) else { return }
        let name = MigrationReadPosition.name(for: CatchUpKey(backend: last.event.backend, conversation: last.message.conversation))
        if let stored = try tx.checkpoint(name).flatMap(CatchUpCheckpoint.Record.init(stored:))?.position, stored.at >= last.message.sentAt { return }
        try tx.setCheckpoint(name, try CatchUpCheckpoint.Record(at: last.message.sentAt, id: last.message.id.rawValue).stored(), at: now)
    }

    /// Whether the id map names a copy of `message` in `leg`'s target conversation. Its rows are keyed by
    /// (message, source backend, target backend): where a second route takes the same source conversation
    /// into another conversation on the same target backend, the row may name that conversation's copy,
    /// which is no copy of this one (docs/migration.md, "Exactly once"). On a wildcard leg the target
    /// conversation may be one the bridge maps (a portal): there any copy on the target counts.
    package static func copied(_ message: MessageID, from source: BackendID, along leg: RouteLeg, _ tx: StoreTransaction) throws -> Bool {
        guard let copy = try tx.mapped(message, from: source, to: leg.target) else { return false }
        return leg.targetIsWildcard || copy.toConversation == leg.targetConversation
    }

    /// One account entry a migration queues (a user or a group, `RelayAction.user`/`.group`), in its lane.
    package struct AccountItem: Sendable {
        package var action: RelayAction
        package var lane: LaneKey
        package var mark: MigrationMark
        package init(action: RelayAction, lane: LaneKey, mark: MigrationMark) {
            (self.action, self.lane, self.mark) = (action, lane, mark)
        }
    }

    /// Queues a migration's account entries on `route` in one transaction; returns their ids in order.
    package nonisolated func queueAccount(_ items: [AccountItem], route: Route, source: BackendID) async throws -> [Int64] {
        let now = clock.nowMs()
        var draft = OutboxDraft()
        for item in items {
            let payload = OutboxPayload(action: item.action, route: route, eventTimeMs: now, migration: item.mark)
            try draft.add(payload, lane: item.lane, source: source, eventID: EventID("migrate-account:\(item.mark.run)"))
        }
        return try await queue(draft, at: now)
    }
}
