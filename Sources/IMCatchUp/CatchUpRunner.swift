import Foundation
import IMAdapterKit
import IMCore
import IMStore
import Logging
import IMRelay
import IMOutbox
import IMTelemetry
import IMPositions

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
    typealias Record = CatchUpCheckpoint.Record
    public static let checkpointPrefix = CatchUpCheckpoint.prefix
    static func checkpointName(for key: CatchUpGate.Key) -> String { CatchUpCheckpoint.name(for: key) }
    static func key(fromCheckpoint name: String) -> CatchUpGate.Key? { CatchUpCheckpoint.key(fromName: name) }

    public nonisolated let settings: CatchUpSettings
    let engine: RelayEngine
    let sources: [BackendID: any CatchUpSource]
    let routes: RouteTable
    let clock: any IMClock
    let logger = Logger(label: "imbridge.catchup")
    var records: [CatchUpGate.Key: Record] = [:]
    /// Checkpoints not saved yet (a failed save is tried again with the next flush).
    var unsaved: [CatchUpGate.Key: Record] = [:]
    private var loop: Task<Void, Never>?
    var passes = 0
    /// Conversations whose catch-up failed: when to try again, and how many failures in a row.
    var retries: [CatchUpGate.Key: (at: Int64, failures: Int)] = [:]
    /// The same for the catch-up of their changes (`catchUpChanges`).
    var changeRetries: [CatchUpGate.Key: (at: Int64, failures: Int)] = [:]

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
                  let record = Record(stored: value) else { continue }
            records[key] = record
            gate.seed(key, lastSeq: sources[key.backend]?.gapSignal == .sequence ? record.seq : nil)
            if let at = record.at, let id = record.id { gate.confirm(key, at: at, id: id) }
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
            let changesDue = changeRetries.filter { $0.value.at <= clock.nowMs() && retries[$0.key] == nil }.keys
            for key in changesDue.sorted(by: { $0.conversation.description < $1.conversation.description }) where !Task.isCancelled {
                await catchUpChanges(key, reason: "retry")
            }
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
        logger.debug("catch-up of a conversation asks for its hold", metadata: ["backend": "\(key.backend)", "conversation": "\(key.conversation)",
                                                                              "reason": "\(reason)"])
        let hold = await takeHold(key)
        logger.debug("catch-up of a conversation begins", metadata: ["backend": "\(key.backend)", "conversation": "\(key.conversation)",
                                                                   "reason": "\(reason)", "hold": "\(hold)"])
        switch hold {
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
            if var held = gate.finish(key, force: reads >= 5) {
                // Recorded in arrival order; the conversation holds its live messages until nothing more came.
                do {
                    var first = true
                    while first || !held.isEmpty {
                        try await recordHeld(held, release: first ? release : nil)
                        first = false
                        held = gate.finish(key, force: true) ?? []
                    }
                } catch {
                    failure = error
                }
                break
            }
        }
        logger.debug("catch-up of a conversation read", metadata: ["backend": "\(key.backend)", "conversation": "\(key.conversation)",
                                                                 "reason": "\(reason)", "reads": "\(reads)", "recovered": "\(recovered)",
                                                                 "position": "\(records[key]?.cursor ?? "none")",
                                                                 "failure": "\(failure.map { String("\($0)".prefix(200)) } ?? "none")"])
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
            // Then what changed meanwhile in messages already relayed (docs/architecture.md, "Catch-up of changes").
            await catchUpChanges(key, reason: reason)
        }
    }

    /// Conversations whose store hold could not be written, since the last warning about each.
    var holdFailing: Set<CatchUpGate.Key> = []
    /// Conversations of `.sequence` sources whose read with no checkpoint found no message at all: every
    /// message in them is newer than that read, so their catch-up position is 0 until one is recorded
    /// (`knownChanges`).
    var foundEmpty: Set<CatchUpGate.Key> = []

    /// How soon a conversation another instance holds (or whose hold could not be written) is tried again.
    static let holdBusyRetryMs: Int64 = 200

    enum HoldOutcome {
        /// Held (with the hold's token), or nil: nothing is held in the store (SQLite).
        case taken(Int64?)
        case busy
        case failed(any Error)
    }

    /// Holds `key` in the store for this instance (`SharedHolds`); `.taken(nil)` at once on SQLite.
    func takeHold(_ key: CatchUpGate.Key) async -> HoldOutcome {
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
    func recordHeld(_ held: [IMEvent], release: (name: String, token: Int64)?) async throws {
        guard !held.isEmpty || release != nil else { return }
        var first: [CatchUpGate.Key: Message] = [:]
        for event in held {
            guard case .message(let message) = event.kind else { continue }
            let key = CatchUpGate.Key(backend: event.backend, conversation: message.conversation)
            if first[key] == nil, records[key]?.cursor == nil { first[key] = message }
        }
        let sources = self.sources
        let checkpoints = CatchUpCheckpoint.firstCheckpoints(first, routes: routes) { key, message in try? sources[key.backend]?.cursor(for: message) }
        // A held message the reads (this one, another instance's or a migration's: `ReadPast`) went past
        // without meeting it: looked up in history first (`screenBehind`).
        try await engine.screeningReadPast { checkReadPast in
            let screened = await engine.screenBehind(held)
            try await engine.ingestGrouped(screened.relay, setAside: [], firstCheckpoints: checkpoints, holdKeys: [], release: release,
                                           withheld: screened.withheld, checkReadPast: checkReadPast)
        }
        gate.recorded(held)
        gate.markKnown(first.keys)
    }
}
