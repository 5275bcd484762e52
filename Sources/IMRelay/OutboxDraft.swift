import Foundation
import IMCore
import IMStore
import IMOutbox

/// The one place an outbox entry is made (docs/architecture.md, "Producers"). Every producer — callback
/// intake, catch-up and dead-letter retry (through `RelayEngine.record`), migration, verify's repair,
/// profile and group sync, and the lanes' own requeues and retractions — adds its actions to a draft,
/// and the draft writes them in the producer's transaction: the rows in one statement on PostgreSQL,
/// the entries refused at intake as dead letters, the entries that must wait paused, and the decoded
/// payloads handed to the lanes' cache so that the lane that runs an entry does not decode its row.
package struct OutboxDraft: Sendable {
    package private(set) var entries: [StoreTransaction.NewEntry] = []
    private var payloads: [OutboxPayload] = []
    private var refusals: [(index: Int, reason: String)] = []
    private var pauses: [(index: Int, until: Int64, reason: String)] = []
    /// The lanes the draft queues work in (woken once it is committed).
    package private(set) var lanes: Set<LaneKey> = []

    package init() {}

    package var isEmpty: Bool { entries.isEmpty }
    package var count: Int { entries.count }

    /// Adds `payload` to `lane`, caused by `source`'s event `eventID`; returns its place in the draft
    /// (the index of its id in what `write` returns).
    @discardableResult
    package mutating func add(_ payload: OutboxPayload, lane: LaneKey, source: BackendID, eventID: EventID) throws -> Int {
        let bytes = try payload.encoded()
        entries.append(StoreTransaction.NewEntry(lane: lane, sourceBackend: source, sourceEventID: eventID, kind: payload.action.kindName,
                                                 payload: bytes))
        payloads.append(payload)
        lanes.insert(lane)
        return entries.count - 1
    }

    /// The entry at `index` is written as a dead letter at once, with `reason` (a change the target
    /// refuses whatever happens, as an expansion value over its limit).
    package mutating func refuse(_ index: Int, reason: String) {
        refusals.append((index, reason))
    }

    /// The entry at `index` is first due at `until` (a change put back to wait for its message).
    package mutating func pause(_ index: Int, until: Int64, reason: String) {
        pauses.append((index, until, reason))
    }

    /// How many entries of each action kind the draft holds.
    package func count(of kind: String) -> Int { entries.count { $0.kind == kind } }

    /// Writes the draft in `tx`; returns the entries' ids in the order they were added. `cache` (the
    /// engine's) gets the decoded payloads: an entry is used there only when its bytes are the row's.
    package func write(_ tx: StoreTransaction, at now: Int64, cache: PayloadCache? = nil) throws -> [Int64] {
        guard !entries.isEmpty else { return [] }
        let ids = try tx.enqueueAll(entries, at: now)
        for refusal in refusals { try tx.markDead(ids[refusal.index], error: refusal.reason, at: now) }
        for pause in pauses { try tx.reschedule(ids[pause.index], at: pause.until, error: pause.reason) }
        if let cache {
            for (n, id) in ids.enumerated() { cache.put(id, bytes: entries[n].payload, payload: payloads[n]) }
        }
        return ids
    }
}

/// Plans an event for a route leg: the one place a `Translator` is made, for the engine, migration and verify.
package struct Planner: Sendable {
    package let backends: [BackendID: any IMBackend]
    /// The configured routes (none for a verify or migration that plans its own legs).
    package let routes: RouteTable
    package let customFallbacks: CustomTypeFallbacks?

    package init(backends: [BackendID: any IMBackend], routes: RouteTable = RouteTable([]), customFallbacks: CustomTypeFallbacks?) {
        self.backends = backends
        self.routes = routes
        self.customFallbacks = customFallbacks
    }

    /// The translator to `target` for messages of `source`.
    package func translator(to target: any IMBackend, from source: (any IMBackend)?) -> Translator {
        Translator(target: target, source: source, customFallbacks: customFallbacks)
    }

    /// The actions `event` asks for on `leg` (none when the leg's target is not configured).
    package func plan(_ event: IMEvent, leg: RouteLeg) -> Planned {
        guard let target = backends[leg.target] else { return Planned() }
        return translator(to: target, from: backends[event.backend]).plan(event, leg: leg)
    }
}

extension RelayEngine {
    /// Queues `draft` in a transaction of its own, after `alongside` in the same transaction, and wakes
    /// its lanes; returns the entries' ids.
    @discardableResult
    nonisolated func queue(_ draft: OutboxDraft, at now: Int64,
                           alongside: (@Sendable (StoreTransaction) throws -> Void)? = nil) async throws -> [Int64] {
        guard !draft.isEmpty else { return [] }
        let ids = try await store.groupedTransaction { [payloads] tx in
            try alongside?(tx)
            return try draft.write(tx, at: now, cache: payloads)
        }
        wakeLanes(draft.lanes)
        return ids
    }

    /// Starts the lanes a committed draft queued work in (those running take it themselves).
    nonisolated func wakeLanes(_ lanes: Set<LaneKey>) {
        guard !lanes.isEmpty else { return }
        signals.wakes.withLock { $0.touched.formUnion(lanes) }
        signals.doorbell.yield()
    }
}

extension StoreTransaction {
    /// The entries pending in `lane` with their payloads, in lane order; a payload that does not decode is
    /// left out (its entry dead-letters when it runs). The one reading of a lane's queue for those who ask
    /// what the bridge has queued but not carried out: a migration, `verify` and its repair.
    package func pendingPayloads(in lane: LaneKey) throws -> [(entry: OutboxEntry, payload: OutboxPayload)] {
        try pendingEntries(of: lane, limit: 1_000_000).compactMap { entry in
            (try? OutboxPayload.decode(entry.payload)).map { (entry, $0) }
        }
    }

    /// The source messages whose `.send` is pending in `lane`, with the backend each came from.
    package func pendingSends(in lane: LaneKey) throws -> [(source: MessageID, backend: BackendID)] {
        try pendingPayloads(in: lane).compactMap { pending in
            guard case .send(_, let source, _) = pending.payload.action else { return nil }
            return (source, pending.entry.sourceBackend)
        }
    }
}
