import Foundation
import IMAdapterKit
import IMCore
import IMStore
import Logging

/// Catch-up from history (docs/architecture.md, "Catch-up"): what a vendor gave up delivering while the
/// bridge was down, or dropped in a running stream, is read back from the source's history and recorded
/// through the normal intake (ledger, echo check, routes, outbox), so the ledger keeps one copy.
///
/// - **Checkpoints.** Per source conversation the routes cover, the last position known to be complete
///   (`catchup/<backend>/<conversation>` in the store's checkpoints table): the cursor from
///   `IMBackend.cursor(for:)`, the seq and time of that message, and a member to read history as. A
///   `.sequence` source (WuKongIM) moves it with every message recorded in order; a time-positioned one
///   (RongCloud, NIM) only through catch-up reads, because live traffic cannot show what is missing.
/// - **When.** On start (every known conversation, plus those discovered), when the gate sees a gap (a
///   `message_seq` jump) or held a message, and every `catch_up.interval` (on the leader only).
/// - **Which.** Conversations the store knows, those named by routes, and for wildcard routes those the
///   source lists for the users seen so far (`CatchUpSource.catchUpConversations(of:)`).
/// - **How far.** From the checkpoint forward to the newest message, page by page, the checkpoint saved
///   after each page is recorded; with no checkpoint (a conversation seen for the first time), the newest
///   `max_messages_per_conversation`. Older than `max_age`: skipped.
/// - **Failures.** A read or a write that fails leaves the conversation held (its live messages are not
///   recorded, so nothing newer is relayed before what is unread) and its checkpoint where it was, and is
///   tried again with a growing pause (`retryDelayMs`): the checkpoint never moves past a message that was
///   not recorded.
/// - **Order.** While a conversation is read, its live messages are held by `CatchUpGate` and read again
///   with it, so they are recorded in source order after the older ones (see the gate).
public actor CatchUpRunner {
    /// One conversation's checkpoint, as stored (JSON).
    struct Record: Codable, Sendable, Equatable {
        var cursor: String?
        var seq: Int64?
        var at: Int64?
        var id: String?
        var viewer: String?

        /// The checkpoint's stored value: JSON with sorted keys.
        func stored() throws -> String {
            let encoder = JSONEncoder()
            encoder.outputFormatting = .sortedKeys
            return String(decoding: try encoder.encode(self), as: UTF8.self)
        }
    }

    public static let checkpointPrefix = "catchup/"

    public nonisolated let settings: CatchUpSettings
    let engine: RelayEngine
    let sources: [BackendID: any CatchUpSource]
    let routes: RouteTable
    let clock: any IMClock
    let logger = Logger(label: "imbridge.catchup")
    private var records: [CatchUpGate.Key: Record] = [:]
    private var loop: Task<Void, Never>?
    private var passes = 0
    /// Conversations whose catch-up failed: when to try again, and how many failures in a row.
    private var retries: [CatchUpGate.Key: (at: Int64, failures: Int)] = [:]

    /// The sources among `backends` that routes read from and that can be caught up.
    public init(engine: RelayEngine, backends: [any IMBackend], routes: [Route], settings: CatchUpSettings,
                clock: any IMClock = SystemClock()) {
        self.engine = engine
        self.settings = settings
        self.clock = clock
        let table = RouteTable(routes)
        self.routes = table
        let readFrom = Set(routes.flatMap { $0.direction == .both ? [$0.from.backend, $0.to.backend] : [$0.from.backend] })
        var sources: [BackendID: any CatchUpSource] = [:]
        for backend in backends where readFrom.contains(backend.id) {
            if let source = backend as? any CatchUpSource { sources[backend.id] = source }
        }
        self.sources = sources
    }

    public var sourceNames: [BackendID] { sources.keys.sorted { $0.rawValue < $1.rawValue } }

    var gate: CatchUpGate { engine.catchUpGate }
    var metrics: RelayMetrics { engine.metrics }
    var store: BridgeStore { engine.store }

    // MARK: lifecycle

    /// Loads the checkpoints, holds the sources' live messages until the start-up catch-up has listed
    /// their conversations, and starts the catch-up loop. Call before the listener takes callbacks.
    public func start() throws {
        guard settings.enabled, !sources.isEmpty, loop == nil else { return }
        for (name, value) in try store.read({ try $0.checkpoints(prefix: Self.checkpointPrefix) }) {
            guard let key = Self.key(fromCheckpoint: name), sources[key.backend] != nil,
                  let record = try? JSONDecoder().decode(Record.self, from: Data(value.utf8)) else { continue }
            records[key] = record
            gate.seed(key, lastSeq: sources[key.backend]?.gapSignal == .sequence ? record.seq : nil)
        }
        gate.markKnown(records.keys)
        for (backend, source) in sources {
            metrics.prepareCatchUp(backend: backend)
            gate.watch(backend, signal: source.gapSignal, starting: true)
        }
        loop = Task { [weak self] in await self?.run() }
    }

    /// Stops the loop (a read under way finishes first) and saves what live traffic moved.
    public func stop() async {
        let task = loop
        loop = nil
        task?.cancel()
        await task?.value
        await flushObserved()
    }

    /// How many catch-up passes over all conversations have finished (start-up included); for tests.
    @_spi(Testing) public var finishedPasses: Int { passes }

    private func run() async {
        await pass(reason: "start", discover: true)
        var nextPass = clock.nowMs() + settings.intervalMs
        var nextFlush = clock.nowMs() + 1000
        while !Task.isCancelled {
            try? await Task.sleep(nanoseconds: 100_000_000)
            if Task.isCancelled { break }
            for (key, reason) in gate.takeRequested().sorted(by: { $0.key.conversation.description < $1.key.conversation.description }) {
                await catchUp(key, reason: reason)
            }
            for key in gate.takeElsewhere().sorted(by: { $0.conversation.description < $1.conversation.description }) {
                await checkElsewhere(key)
            }
            let due = retries.filter { $0.value.at <= clock.nowMs() }.keys.sorted { $0.conversation.description < $1.conversation.description }
            for key in due where !Task.isCancelled { await catchUp(key, reason: "retry") }
            let now = clock.nowMs()
            if now >= nextFlush {
                await flushObserved()
                nextFlush = now + 1000
            }
            if now >= nextPass {
                nextPass = now + settings.intervalMs
                if engine.leadership.isLeader || store.kind == .sqlite { await pass(reason: "interval", discover: true) }
            }
        }
    }

    /// Catches up every conversation of every source.
    func pass(reason: String, discover: Bool) async {
        await flushObserved()
        for backend in sourceNames {
            var keys = Set(records.keys.filter { $0.backend == backend && covered($0) })
            keys.formUnion(namedConversations(of: backend))
            if discover { keys.formUnion(await discovered(backend)) }
            for key in keys.sorted(by: { $0.conversation.description < $1.conversation.description }) {
                await catchUp(key, reason: reason)
            }
            // Conversations that held live messages while the list above was made (also those caught up
            // above before their first message came): they hold on until read again, so a live message
            // coming now cannot overtake one held.
            for key in gate.started(backend) {
                await catchUp(key, reason: "held")
            }
        }
        passes += 1
    }

    // MARK: one conversation

    /// Reads `key`'s history since its checkpoint and records it; reads again while live messages were
    /// held meanwhile (at most 5 reads), then records what was held. When a read or a write fails, the
    /// conversation stays held (and its checkpoint where it was) and is tried again after a pause.
    func catchUp(_ key: CatchUpGate.Key, reason: String) async {
        guard sources[key.backend] != nil else { return }
        gate.begin(key)
        // With several instances the conversation is held in the store first, so that the others refuse
        // its live messages meanwhile (`SharedHolds`); while another instance holds it, this one waits.
        let token: Int64?
        switch await takeHold(key) {
        case .taken(let taken):
            token = taken
            holdFailing.remove(key)
        case .busy:
            gate.hold(key)
            retries[key] = (clock.nowMs() + Self.holdBusyRetryMs, retries[key]?.failures ?? 0)
            return
        case .failed(let error):
            gate.hold(key)
            retries[key] = (clock.nowMs() + Self.holdBusyRetryMs, retries[key]?.failures ?? 0)
            metrics.increment("imbridge_catch_up_errors_total", ["backend": key.backend.rawValue])
            // Once per failing stretch (it is tried every 200 ms while the store is away).
            if holdFailing.insert(key).inserted {
                logger.warning("catch-up could not hold the conversation in the store; its live messages wait and it is tried again (not logged again until it succeeds)",
                               metadata: ["backend": "\(key.backend)", "conversation": "\(key.conversation)",
                                          "retry_in_ms": "\(Self.holdBusyRetryMs)", "error": "\(String("\(error)".prefix(300)))"])
            }
            return
        }
        metrics.increment("imbridge_catch_up_runs_total", ["backend": key.backend.rawValue, "reason": reason])
        var reads = 0
        var recovered = 0, skipped = 0
        var failure: (any Error)?
        var release = token.map { (name: SharedHolds.name(key), token: $0) }
        while true {
            _ = gate.takeMissed(key)
            do {
                // The hold's token as this read begins: a mark after it makes the release fail (`SharedHolds`).
                if let held = release {
                    let owner = engine.intake.holds.owner
                    guard let now = try await store.reading({ try $0.leaseToken(held.name, owner: owner) }) else { throw HoldMarked() }
                    release?.token = now
                }
                let outcome = try await readAndRecord(key)
                recovered += outcome.recovered
                skipped += outcome.skipped
                reads += 1
                // Marked during the read: read again before letting live messages through.
                if let held = release, reads < 5 {
                    let owner = engine.intake.holds.owner
                    if try await store.reading({ try $0.leaseToken(held.name, owner: owner) }) != held.token { continue }
                }
            } catch {
                failure = error
                break
            }
            if let held = gate.finish(key, force: reads >= 5) {
                do {
                    try await recordHeld(held, release: release)
                } catch {
                    failure = error
                }
                break
            }
        }
        if recovered > 0 || skipped > 0 {
            logger.info("caught up from history", metadata: ["backend": "\(key.backend)", "conversation": "\(key.conversation)",
                                                             "reason": "\(reason)", "recovered": "\(recovered)", "skipped": "\(skipped)"])
        }
        if failure is HoldMarked {
            // Another instance refused a live message meanwhile: read again at once, still held.
            gate.hold(key)
            retries[key] = (clock.nowMs(), retries[key]?.failures ?? 0)
            return
        }
        if let failure {
            // Held until read again: a live message recorded now would move the position past what is unread.
            gate.hold(key)
            let failures = (retries[key]?.failures ?? 0) + 1
            let delay = Self.retryDelayMs(failures: failures)
            retries[key] = (clock.nowMs() + delay, failures)
            metrics.increment("imbridge_catch_up_errors_total", ["backend": key.backend.rawValue])
            logger.warning("catch-up failed; the conversation's live messages wait and it is read again from its checkpoint",
                           metadata: ["backend": "\(key.backend)", "conversation": "\(key.conversation)", "retry_in_ms": "\(delay)",
                                      "error": "\(String("\(failure)".prefix(300)))"])
        } else {
            retries[key] = nil
        }
    }

    /// Conversations whose store hold could not be written, since the last warning about each.
    private var holdFailing: Set<CatchUpGate.Key> = []

    /// How soon a conversation another instance holds (or whose hold could not be written) is tried again.
    static let holdBusyRetryMs: Int64 = 200

    enum HoldOutcome {
        /// Held (with the hold's token), or nil: nothing is held in the store (SQLite).
        case taken(Int64?)
        case busy
        case failed(any Error)
    }

    /// Holds `key` in the store for this instance (`SharedHolds`); `.taken(nil)` at once on SQLite.
    private func takeHold(_ key: CatchUpGate.Key) async -> HoldOutcome {
        let holds = engine.intake.holds
        guard holds.enabled else { return .taken(nil) }
        let now = clock.nowMs()
        do {
            let fence = try await store.groupedTransaction { tx in
                try tx.takeLease(SharedHolds.name(key), owner: holds.owner, ttlMs: holds.ttlMs, now: now)
            }
            return fence.map { .taken($0.token) } ?? .busy
        } catch {
            return .failed(error)
        }
    }

    /// This instance refused `key`'s live messages because another instance held the conversation
    /// (`SharedHolds`). A holder that gives its hold up has read after every refusal (each marked its
    /// hold): nothing to do. A hold still live is checked again on the next round; one left behind by an
    /// instance that died (expired, still there) is taken over: this instance catches the conversation up.
    func checkElsewhere(_ key: CatchUpGate.Key) async {
        let holds = engine.intake.holds
        let name = SharedHolds.name(key)
        let now = clock.nowMs()
        let state: (live: String?, left: String?)
        do {
            state = try await store.reading { tx in (try tx.leaseHolder(name, at: now), try tx.leaseOwners([name])[name]) }
        } catch {
            gate.heldElsewhere([key])
            return
        }
        if let live = state.live, live != holds.owner {
            gate.heldElsewhere([key])
            return
        }
        if let left = state.left, left != holds.owner { await catchUp(key, reason: "taken_over") }
    }

    /// The pause before the `failures`-th retry of a conversation's catch-up: 0.5 s doubling, at most 10 s
    /// (its live messages wait meanwhile).
    static func retryDelayMs(failures: Int) -> Int64 {
        min(10_000, 500 << Int64(min(max(failures - 1, 0), 5)))
    }

    /// Conversations waiting to be read again after a failure (for the status page and tests).
    public var failingConversations: Int { retries.count }

    /// Held live messages, recorded after the read (the ledger drops those the read already took).
    /// A conversation without a position yet gets its first checkpoint at the first of them, as the
    /// intake would have given it.
    /// `release`: the store hold, given up in the same transaction (`SharedHolds`).
    private func recordHeld(_ held: [IMEvent], release: (name: String, token: Int64)?) async throws {
        guard !held.isEmpty || release != nil else { return }
        var first: [CatchUpGate.Key: Message] = [:]
        for event in held {
            guard case .message(let message) = event.kind else { continue }
            let key = CatchUpGate.Key(backend: event.backend, conversation: message.conversation)
            if first[key] == nil, records[key]?.cursor == nil { first[key] = message }
        }
        let sources = self.sources
        let checkpoints = Self.firstCheckpoints(first, routes: routes) { key, message in try? sources[key.backend]?.cursor(for: message) }
        try await engine.ingestGrouped(held, setAside: [], firstCheckpoints: checkpoints, holdKeys: [], release: release)
        gate.recorded(held)
        gate.markKnown(first.keys)
    }

    struct Outcome {
        var recovered = 0
        var skipped = 0
    }

    /// Reads `key` from its checkpoint to the newest message (or, with no checkpoint, its newest
    /// `max_messages_per_conversation`) and records it, saving the checkpoint after each page recorded.
    func readAndRecord(_ key: CatchUpGate.Key) async throws -> Outcome {
        guard let source = sources[key.backend] else { return Outcome() }
        var record = try await storedRecord(key)
        let viewer = record.viewer.map(UserID.init) ?? key.conversation.participants.first
        var outcome = Outcome()
        guard let cursor = record.cursor else {
            try Task.checkCancellation()
            let newest = try await newest(settings.maxMessagesPerConversation, source, key, viewer: viewer)
            try await recordPage(newest, key, source, &record, &outcome)
            return outcome
        }
        var anchor = HistoryCursor(cursor)
        while true {
            // A read cut short by a stop is a failed read, never a complete one: what was held meanwhile
            // must not be recorded (nor its position saved) as if nothing came before it.
            try Task.checkCancellation()
            let page = try await source.history(HistoryQuery(conversation: key.conversation, anchor: .after(anchor), limit: 100, viewer: viewer))
            try await recordPage(page.messages, key, source, &record, &outcome)
            guard page.hasNewer, let next = page.newerCursor, !page.messages.isEmpty else { break }
            anchor = next
        }
        return outcome
    }

    /// Records one page of history (oldest first) through the intake, then moves and saves the checkpoint
    /// to its last message: a failure before the save leaves the checkpoint before the page.
    private func recordPage(_ messages: [Message], _ key: CatchUpGate.Key, _ source: any CatchUpSource, _ record: inout Record,
                            _ outcome: inout Outcome) async throws {
        let oldest = clock.nowMs() - settings.maxAgeMs
        let fresh = messages.filter { $0.sentAt >= oldest }
        let events = fresh.compactMap { source.catchUpEvent(for: $0) }
        var recovered = 0
        for start in stride(from: 0, to: events.count, by: 200) {
            let chunk = Array(events[start..<min(events.count, start + 200)])
            let result = try await engine.ingestGrouped(chunk)
            recovered += result.accepted
        }
        let skipped = messages.count - fresh.count
        outcome.recovered += recovered
        outcome.skipped += skipped
        if recovered > 0 { metrics.increment("imbridge_catch_up_recovered_total", ["backend": key.backend.rawValue], by: recovered) }
        if skipped > 0 { metrics.increment("imbridge_catch_up_skipped_total", ["backend": key.backend.rawValue], by: skipped) }
        if let last = messages.last {
            record.cursor = (try? source.cursor(for: last))?.rawValue ?? record.cursor
            record.seq = last.seq
            record.at = last.sentAt
            record.id = last.id.rawValue
        }
        if record.viewer == nil, let sender = fresh.last(where: { !routes.isBridgeIdentity($0.sender, on: key.backend) })?.sender {
            record.viewer = sender.rawValue
        }
        // A read that found nothing gives no position: storing a checkpoint without one would keep the
        // intake from writing the conversation's first checkpoint (at its first recorded message), and the
        // next start would read only the newest messages.
        if record.cursor != nil, record != records[key] || records[key] == nil { try await save([key: record]) }
        if let last = messages.last { gate.caughtUp(key, seq: source.gapSignal == .sequence ? last.seq : nil) }
    }

    /// The newest `count` messages (oldest first), paging back from the latest; stops early at `max_age`.
    func newest(_ count: Int, _ source: any CatchUpSource, _ key: CatchUpGate.Key, viewer: UserID?) async throws -> [Message] {
        let oldest = clock.nowMs() - settings.maxAgeMs
        var page = try await source.history(HistoryQuery(conversation: key.conversation, anchor: .latest, limit: min(100, count), viewer: viewer))
        var collected = page.messages
        while collected.count < count, page.hasOlder, let older = page.olderCursor, let first = page.messages.first, first.sentAt >= oldest {
            page = try await source.history(HistoryQuery(conversation: key.conversation, anchor: .before(older),
                                                         limit: min(100, count - collected.count), viewer: viewer))
            guard !page.messages.isEmpty else { break }
            collected = page.messages + collected
        }
        return Array(collected.suffix(count))
    }

    // MARK: conversations

    func covered(_ key: CatchUpGate.Key) -> Bool {
        !routes.legs(from: key.backend, conversation: key.conversation).isEmpty
    }

    /// Conversations routes name on `backend` (`wk:group:g1`).
    func namedConversations(of backend: BackendID) -> [CatchUpGate.Key] {
        routes.routes.flatMap { route -> [RouteEndpoint] in
            route.direction == .both ? [route.from, route.to] : [route.from]
        }.compactMap { endpoint in
            guard endpoint.backend == backend, let id = endpoint.id,
                  let conversation = try? ConversationRef(parsing: "\(endpoint.kind):\(id)") else { return nil }
            return CatchUpGate.Key(backend: backend, conversation: conversation)
        }
    }

    /// Conversations the source lists for the users seen so far (wildcard routes only).
    func discovered(_ backend: BackendID) async -> [CatchUpGate.Key] {
        guard let source = sources[backend],
              routes.routes.contains(where: { ($0.from.backend == backend && $0.from.id == nil) || ($0.direction == .both && $0.to.backend == backend && $0.to.id == nil) })
        else { return [] }
        let users = Set(records.filter { $0.key.backend == backend }.compactMap { $0.value.viewer }).sorted()
        var found: [CatchUpGate.Key] = []
        for user in users {
            do {
                for conversation in try await source.catchUpConversations(of: UserID(user)) {
                    let key = CatchUpGate.Key(backend: backend, conversation: conversation)
                    guard covered(key) else { continue }
                    found.append(key)
                    // Known from the store (the intake may have positioned it) or new: never a blank record
                    // over a stored one, which the next save would write back without its position.
                    if records[key] == nil, var record = try? await storedRecord(key) {
                        if record.viewer == nil { record.viewer = user }
                        records[key] = record
                    }
                }
            } catch let error as IMError where error.code == .unsupported {
                return found
            } catch {
                metrics.increment("imbridge_catch_up_errors_total", ["backend": backend.rawValue])
                logger.warning("catch-up could not list a user's conversations", metadata: ["backend": "\(backend)", "user": "\(user)", "error": "\(error)"])
            }
        }
        return found
    }

    // MARK: checkpoints

    /// Checkpoints not saved yet (a failed save is tried again with the next flush).
    private var unsaved: [CatchUpGate.Key: Record] = [:]

    /// Moves the checkpoints of what live traffic recorded (and the members seen) into the store.
    func flushObserved() async {
        var changed = unsaved
        for (key, observed) in gate.drainObserved() where sources[key.backend] != nil && covered(key) {
            // A conversation's first checkpoint is the intake's to write (positioned at its first message,
            // in the transaction that records it) or a catch-up read's: one not in the store yet waits, so
            // that a flush racing that transaction never writes a checkpoint without a position over it.
            guard var record = try? await knownRecord(key) else {
                gate.putBack(key, observed)
                continue
            }
            if let sender = observed.sender, !routes.isBridgeIdentity(sender, on: key.backend) { record.viewer = sender.rawValue }
            if let last = observed.last, let source = sources[key.backend], (last.seq ?? 0) > (record.seq ?? 0) {
                record.cursor = (try? source.cursor(for: last))?.rawValue ?? record.cursor
                record.seq = last.seq
                record.at = last.sentAt
                record.id = last.id.rawValue
            }
            if record != records[key] || records[key] == nil {
                changed[key] = record
                records[key] = record
            }
        }
        guard !changed.isEmpty else { return }
        do {
            try await save(changed)
            unsaved = [:]
        } catch {
            unsaved = changed
            logger.warning("catch-up checkpoints not saved; tried again in a second", metadata: ["error": "\(error)"])
        }
    }

    /// `key`'s checkpoint: as this runner last saved or loaded it, else as stored (the intake writes a
    /// conversation's first checkpoint itself), else empty. Throws when the store cannot be read, so
    /// that nothing overwrites a checkpoint it has not seen.
    func storedRecord(_ key: CatchUpGate.Key) async throws -> Record {
        try await knownRecord(key) ?? Record()
    }

    /// `storedRecord`, but nil when the store has no checkpoint for `key` yet (one that does not decode
    /// reads as empty).
    func knownRecord(_ key: CatchUpGate.Key) async throws -> Record? {
        if let known = records[key] { return known }
        let name = Self.checkpointName(for: key)
        let value = try await store.reading { try $0.checkpoint(name) }
        if let known = records[key] { return known }   // saved or loaded while the store was read
        guard let value else { return nil }
        guard let record = try? JSONDecoder().decode(Record.self, from: Data(value.utf8)) else { return Record() }
        records[key] = record
        return record
    }

    /// Through the store's group commit (beside the callbacks' and lanes' writes).
    private func save(_ changed: [CatchUpGate.Key: Record]) async throws {
        let now = clock.nowMs()
        let rows = try changed.map { (Self.checkpointName(for: $0.key), try $0.value.stored()) }
        try await store.groupedTransaction { tx in
            for (name, value) in rows { try tx.setCheckpoint(name, value, at: now) }
        }
        for (key, record) in changed { records[key] = record }
        gate.markKnown(changed.keys)
    }

    /// The first checkpoints of conversations live intake records before catch-up knows them: positioned
    /// at the first message recorded (`cursor`, when the source gives one) with its sender as the member to
    /// read history as; written with the message, kept if one is there already. A bridge killed a moment
    /// later reads the conversation from there on its next start, however much came meanwhile.
    static func firstCheckpoints(_ fresh: [CatchUpGate.Key: Message], routes: RouteTable,
                                 cursor: (CatchUpGate.Key, Message) -> HistoryCursor?) -> [(name: String, value: String)] {
        fresh.compactMap { key, first in
            guard !routes.legs(from: key.backend, conversation: key.conversation).isEmpty else { return nil }
            var record = Record(viewer: routes.isBridgeIdentity(first.sender, on: key.backend) ? nil : first.sender.rawValue)
            if let position = cursor(key, first) {
                (record.cursor, record.seq, record.at, record.id) = (position.rawValue, first.seq, first.sentAt, first.id.rawValue)
            }
            guard let value = try? record.stored() else { return nil }
            return (checkpointName(for: key), value)
        }
    }

    static func checkpointName(for key: CatchUpGate.Key) -> String {
        "\(checkpointPrefix)\(key.backend.rawValue)/\(key.conversation)"
    }

    static func key(fromCheckpoint name: String) -> CatchUpGate.Key? {
        guard name.hasPrefix(checkpointPrefix) else { return nil }
        let rest = name.dropFirst(checkpointPrefix.count)
        guard let slash = rest.firstIndex(of: "/"),
              let conversation = try? ConversationRef(parsing: String(rest[rest.index(after: slash)...])) else { return nil }
        return CatchUpGate.Key(backend: BackendID(String(rest[..<slash])), conversation: conversation)
    }
}
