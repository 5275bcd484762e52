import Foundation
import IMAdapterKit
import IMCore
import IMStore
import IMRelay
import IMOutbox
import IMPositions

/// Moves an account from one backend to another: users, then groups (`Migrator+Account.swift`), then
/// each conversation's history, oldest → newest, through the outbox (docs/migration.md, "Through the
/// outbox"): `plan.parallel` conversations at a time, one lane each, order kept inside each.
///
/// Contract:
/// - The migrator sends nothing itself. Each history page becomes outbox entries in the lane (target,
///   target conversation) — the copy as a `.send` (and a recalled message's `.recall` after it) — queued
///   in one transaction with the page's dedupe facts and the conversation's checkpoint; an engine of its
///   own (`RelayEngine.start(lanes:)`) runs them, as a bridge on the same store may: client id
///   `imb-<entry id>`, the earlier-copy search on a retry, the id-map row in the completing transaction,
///   the relay's retry policy and dead letters. `run` returns when every entry it queued (and every entry
///   an interrupted run left) is done or dead; the report counts the dead ones as failed.
/// - Exactly once, with live relay too: see `RelayEngine.queueMigration`.
/// - Resumable: the checkpoint per (source conversation → target conversation) is the history cursor
///   after the last page queued; a rerun reads on from there, runs what an interrupted run left pending
///   and puts its dead entries back in their lane (the same entry, so the same client id: a copy an
///   earlier attempt left is found, not written twice).
/// - Writes silently (`MessageOptions.silent`: stored, no unread, no push) with the original time and
///   sender in `vendorExtras` (and `sentAt` where the target can set it); the final state travels:
///   edits as the latest content, expansions as current key/values, a recall as the target's recall
///   (or, where it has none, a `[消息已撤回]` notice instead of the content).
/// - Paced to the target's documented limits (`MigrationPacing`, applied by the executor to entries
///   marked as a migration's); retryable failures (429, vendor rate codes, 5xx) back off in the lane.
public actor Migrator {
    let store: BridgeStore
    let source: any IMBackend
    let target: any IMBackend
    let setup: Setup
    let clock: any IMClock
    let progress: @Sendable (MigrationProgress) -> Void
    /// The dry run's reads (`Migrator+Preview`) and the failure classes of the source reads (the relay's).
    let delivery: Delivery
    /// The engine that runs this run's lanes.
    var engine: RelayEngine?
    /// What this run has done so far.
    var state = RunState()

    /// What the migrator is given besides its backends.
    struct Setup: Sendable {
        var retry: RetryPolicy
        /// The target's documented limits (`nil`: from its capabilities); the executor applies them.
        var sendsPerSecond: Double?
        /// Fallback texts for declared custom types the target's vendor cannot carry (as the bridge sends them).
        var customFallbacks: CustomTypeFallbacks?
        /// The configured routes and the other backends they name: a recent message the migration records in
        /// the ledger is queued for the routes' other legs as intake would (`RelayEngine.queueMigration`).
        var routes: [Route]
        var others: [any IMBackend]
        /// How old a message may be and still reach the bridge through a callback or catch-up
        /// (`catch_up.max_age`): such a message is recorded in the ledger by the migration.
        var liveWindowMs: Int64
    }

    /// One run's account work and findings.
    struct RunState {
        /// The run's account counts (users, groups, members).
        var account = MigrationReport.Account()
        /// Each user's profile migration, started once per run (lanes that meet the same sender wait for it).
        var userWork: [UserID: Task<Void, Never>] = [:]
        /// Source conversations whose target group could not be made this run (their history waits).
        var blocked: Set<ConversationRef> = []
        /// Users whose profile could not be written this run (their copies leave provisioning to the executor).
        var failedUsers: Set<UserID> = []
        /// Source profiles read ahead in batches (nil: the source does not know the user).
        var sourceProfiles: [UserID: UserProfile?] = [:]
    }

    var account: MigrationReport.Account { get { state.account } set { state.account = newValue } }
    var userWork: [UserID: Task<Void, Never>] { get { state.userWork } set { state.userWork = newValue } }
    var blocked: Set<ConversationRef> { get { state.blocked } set { state.blocked = newValue } }
    var failedUsers: Set<UserID> { get { state.failedUsers } set { state.failedUsers = newValue } }
    var sourceProfiles: [UserID: UserProfile?] { get { state.sourceProfiles } set { state.sourceProfiles = newValue } }
    var liveWindowMs: Int64 { setup.liveWindowMs }

    public init(store: BridgeStore, source: any IMBackend, target: any IMBackend, retry: RetryPolicy = RetryPolicy(),
                sendsPerSecond: Double? = nil, clock: any IMClock = SystemClock(),
                progress: @escaping @Sendable (MigrationProgress) -> Void = { _ in },
                customFallbacks: CustomTypeFallbacks? = nil, routes: [Route] = [], backends: [any IMBackend] = [],
                liveWindowMs: Int64 = CatchUpSettings().maxAgeMs) {
        self.store = store
        self.source = source
        self.target = target
        self.setup = Setup(retry: retry, sendsPerSecond: sendsPerSecond, customFallbacks: customFallbacks, routes: routes,
                           others: backends.filter { $0.id != source.id && $0.id != target.id }, liveWindowMs: liveWindowMs)
        self.delivery = Delivery(target: target, store: store, retry: retry,
                                 migrationPacing: MigrationPacing(capabilities: target.capabilities, sendsPerSecond: sendsPerSecond))
        self.clock = clock
        self.progress = progress
    }

    /// Users, then groups (when `plan.account`), then the history of every conversation, `plan.parallel`
    /// conversations at a time.
    public func run(_ plan: MigrationPlan) async throws -> MigrationReport {
        var report = MigrationReport(source: plan.source.rawValue, target: plan.target.rawValue, dryRun: plan.dryRun)
        state = RunState()
        account.notes = plan.notes
        let engine = RelayEngine(store: store, backends: [source, target] + setup.others, routes: setup.routes, clock: clock, retry: setup.retry,
                                 maxConcurrentLanes: plan.parallel, retentionMs: nil, customFallbacks: setup.customFallbacks,
                                 migrationSendsPerSecond: setup.sendsPerSecond)
        self.engine = engine
        // A guest on the store: it runs the lanes this run queues in (`admit`), nothing else.
        if !plan.dryRun { await engine.start(lanes: []) }
        var pairs = plan.conversations
        do {
            if plan.account { pairs = try await migrateAccount(plan, pairs) }
            if !plan.dryRun {
                await engine.admit(lanes: Set(pairs.filter { !blocked.contains($0.0) }.map { LaneKey(backend: plan.target, conversation: $0.1) }))
            }
            report.conversations = try await copyHistory(plan, pairs, engine: engine)
        } catch {
            await engine.stop()
            throw error
        }
        await engine.stop()
        if plan.account { report.account = account }
        return report
    }

    /// A copy this run waits for: its `.send` entry and how it counts.
    struct Tracked: Sendable {
        var id: Int64
        var source: String
        var mark: MigrationMark
    }

    /// A conversation's copies to wait for, and its last entry (a recall may follow the last copy).
    struct Queued: Sendable {
        var copies: [Tracked] = []
        var last: Int64 = 0
    }

    /// One producer per conversation, at most `plan.parallel` at once, then the wait for every lane's
    /// entries; the report keeps the plan's order.
    func copyHistory(_ plan: MigrationPlan, _ pairs: [(ConversationRef, ConversationRef)], engine: RelayEngine) async throws
        -> [MigrationReport.Conversation] {
        var results = [(MigrationReport.Conversation, Queued)?](repeating: nil, count: pairs.count)
        try await withThrowingTaskGroup(of: (Int, MigrationReport.Conversation, Queued).self) { lanes in
            var next = 0, running = 0
            while next < pairs.count || running > 0 {
                while next < pairs.count && running < plan.parallel {
                    let index = next, (from, to) = pairs[index]
                    lanes.addTask {
                        let (result, tracked) = try await self.migrate(from, to, plan, engine: engine)
                        return (index, result, tracked)
                    }
                    next += 1
                    running += 1
                }
                guard let (index, result, tracked) = try await lanes.next() else { break }
                running -= 1
                results[index] = (result, tracked)
            }
        }
        var conversations: [MigrationReport.Conversation] = []
        for (index, item) in results.enumerated() {
            guard var (result, tracked) = item else { continue }
            if tracked.last > 0 {
                let lane = LaneKey(backend: plan.target, conversation: pairs[index].1)
                try await waitForLane(lane, through: tracked.last, conversation: pairs[index].0, count: tracked.copies, engine: engine)
                try settle(tracked.copies, into: &result)
            }
            conversations.append(result)
        }
        return conversations
    }

    /// Waits until `lane` has no pending entry up to `lastID` (whoever runs the lane: this run's engine,
    /// which says when it ends an entry, or a bridge on the same store, looked at every second), showing
    /// progress.
    func waitForLane(_ lane: LaneKey, through lastID: Int64, conversation: ConversationRef, count tracked: [Tracked], engine: RelayEngine) async throws {
        let started = Date()
        while true {
            let head = try await store.reading { try $0.head(of: lane) }
            let finished = tracked.count - Self.pending(tracked, head: head)
            progress(MigrationProgress(conversation: "\(conversation)", done: finished, total: tracked.count, startedAt: started))
            guard let head, head.id <= lastID else { return }
            try Task.checkCancellation()
            await engine.entryFinished(upToMs: 1000)
        }
    }

    /// How many of `tracked` (by growing id) are not carried out yet: a lane runs in id order, so those
    /// from its pending head on.
    static func pending(_ tracked: [Tracked], head: OutboxEntry?) -> Int {
        guard let head else { return 0 }
        var (low, high) = (0, tracked.count)
        while low < high {
            let middle = (low + high) / 2
            if tracked[middle].id < head.id { low = middle + 1 } else { high = middle }
        }
        return tracked.count - low
    }

    /// Copies a conversation may have queued and not carried out before the next page is read: history
    /// does not pile up in the lane (where a live message queued behind it would wait for all of it), and
    /// the outbox stays small; enough for the lane never to run dry while the next page is read.
    static func lookahead(_ plan: MigrationPlan) -> Int { max(200, 4 * plan.pageSize) }

    /// Counts what became of the tracked copies: done by their tally, dead as failed (by vendor code).
    func settle(_ tracked: [Tracked], into result: inout MigrationReport.Conversation) throws {
        let entries = Dictionary(try store.read { try $0.entries(ids: tracked.map(\.id)) }.map { ($0.id, $0) }, uniquingKeysWith: { a, _ in a })
        for copy in tracked {
            let entry = entries[copy.id]
            if let entry, entry.state == .dead {
                let reason = entry.lastError ?? "dead letter"
                result.counts.failed[Self.failureCode(reason), default: 0] += 1
                result.failures.append("\(copy.source): \(reason)")
                continue
            }
            tally(copy.mark, into: &result)
        }
    }

    /// The vendor code in a dead letter's reason (`IMError`'s `[vendor CODE…]`), else its error code.
    static func failureCode(_ reason: String) -> String {
        if let range = reason.range(of: "[vendor ") {
            let rest = reason[range.upperBound...]
            return String(rest.prefix { $0 != ":" && $0 != "]" })
        }
        if reason.hasPrefix("gave up after") { return "gave_up" }
        return reason.split(separator: ":", maxSplits: 1).first.map(String.init) ?? "error"
    }

    /// One checkpoint per conversation pair and time window: a run limited by `--since`/`--until` moves
    /// its own checkpoint, so a later run with another window (or none) still reads the messages the first
    /// one skipped (the id map and the executor keep it from writing any message twice).
    static func checkpointName(_ plan: MigrationPlan, _ from: ConversationRef, _ to: ConversationRef) -> String {
        var name = "migrate:\(plan.source):\(from)->\(plan.target):\(to)"
        if plan.sinceMs != nil || plan.untilMs != nil {
            name += "@\(plan.sinceMs.map { String($0) } ?? "")..\(plan.untilMs.map { String($0) } ?? "")"
        }
        return name
    }

    /// Queues one conversation's history page by page; returns its counts so far (skips, and in a dry
    /// run what would be sent) and the copies to wait for.
    func migrate(_ from: ConversationRef, _ to: ConversationRef, _ plan: MigrationPlan, engine: RelayEngine) async throws
        -> (MigrationReport.Conversation, Queued) {
        var result = MigrationReport.Conversation(source: "\(plan.source):\(from)", target: "\(plan.target):\(to)")
        if blocked.contains(from) {
            result.counts.failed["group_missing", default: 0] += 1
            result.failures.append("\(from): the group could not be made on \(plan.target) (see the account failures); a rerun copies its history")
            return (result, Queued())
        }
        let checkpoint = Self.checkpointName(plan, from, to)
        let route = Route(from: RouteEndpoint(backend: plan.source, kind: from.kind, id: from.id),
                          to: RouteEndpoint(backend: plan.target, kind: to.kind, id: to.id), direction: .forward, usersOnTarget: plan.users,
                          media: plan.media)
        let leg = RouteLeg(route: route, target: plan.target, targetConversation: to, users: plan.users)
        let translator = engine.planner.translator(to: target, from: source)
        var tracked = plan.dryRun ? Queued() : try resume(checkpoint, lane: LaneKey(backend: plan.target, conversation: to))
        var anchor: HistoryAnchor = try await store.reading { try $0.checkpoint(checkpoint) }.map { .after(HistoryCursor($0)) } ?? .oldest
        let started = Date()
        var done = 0
        pages: while true {
            let query = HistoryQuery(conversation: from, anchor: anchor, limit: plan.pageSize)
            let page = try await withRetry { try await self.source.history(query) }
            var items: [RelayEngine.MigrationItem] = []
            var past = false
            for message in page.messages {
                done += 1
                if let since = plan.sinceMs, message.sentAt < since {
                    result.counts.skipped["before_since", default: 0] += 1
                    continue
                }
                if let until = plan.untilMs, message.sentAt > until {
                    past = true
                    break
                }
                if isVendorNotice(message) {
                    result.counts.skipped["vendor_notice", default: 0] += 1
                    continue
                }
                if let change = changeItem(for: message, leg: leg, translator: translator, checkpoint: checkpoint) {
                    if change.actions.isEmpty {
                        result.counts.skipped["change_dropped", default: 0] += 1
                    } else {
                        items.append(change)
                    }
                    continue
                }
                if !plan.dryRun && plan.account { await bringUser(message.sender, plan) }
                items.append(self.item(for: message, leg: leg, translator: translator, plan: plan, checkpoint: checkpoint))
            }
            if plan.dryRun {
                for item in items {
                    // Counted by the rule the run uses: a copy in this conversation, or any on a wildcard leg.
                    if try await store.reading({ [id = item.message.id, from = plan.source] in try RelayEngine.copied(id, from: from, along: leg, $0) }) {
                        result.counts.skipped["already_copied", default: 0] += 1
                        continue
                    }
                    tally(item.mark, into: &result)
                }
            } else if !items.isEmpty || (!past && page.newerCursor != nil) {
                let lane = LaneKey(backend: plan.target, conversation: to)
                while Self.pending(tracked.copies, head: try await store.reading({ try $0.head(of: lane) })) > Self.lookahead(plan) {
                    try Task.checkCancellation()
                    await engine.entryFinished(upToMs: 1000)
                }
                // The checkpoint moves in the transaction that queues the page: a rerun reads on after it.
                let moved = past ? nil : page.newerCursor.map { (name: checkpoint, value: $0.rawValue) }
                let outcomes = try await engine.queueMigration(items, leg: leg, checkpoint: moved)
                for (item, outcome) in zip(items, outcomes) {
                    switch outcome {
                    case .alreadyCopied:
                        result.counts.skipped["already_copied", default: 0] += 1
                    case .withheld:
                        result.counts.skipped["withheld", default: 0] += 1
                    case .queued(let id, let last):
                        tracked.copies.append(Tracked(id: id, source: item.message.id.rawValue, mark: item.mark))
                        tracked.last = max(tracked.last, last)
                    }
                }
            }
            progress(MigrationProgress(conversation: "\(from)", done: done, total: nil, startedAt: started))
            guard !past, page.hasNewer, let next = page.newerCursor else { break }
            anchor = .after(next)
        }
        return (result, tracked)
    }

    /// What an interrupted run of this conversation pair left in its lane: its pending copies (waited for
    /// and counted by this run) and its dead ones, put back in the lane to be tried again.
    func resume(_ checkpoint: String, lane: LaneKey) throws -> Queued {
        func ours(_ entry: OutboxEntry) -> MigrationMark? {
            guard entry.lane == lane, let payload = try? OutboxPayload.decode(entry.payload), payload.migration?.run == checkpoint else { return nil }
            return payload.migration
        }
        return try store.transaction { tx in
            let dead = try tx.deadLetters(limit: 1_000_000).filter { ours($0) != nil }
            if !dead.isEmpty { try tx.retryDeadLetters(ids: dead.map(\.id)) }
            var queued = Queued()
            for entry in try tx.pendingEntries(of: lane, limit: 1_000_000) {
                guard let mark = ours(entry) else { continue }
                queued.last = max(queued.last, entry.id)
                if let payload = try? OutboxPayload.decode(entry.payload), case .send(_, let id, _) = payload.action, mark.tally != nil {
                    queued.copies.append(Tracked(id: entry.id, source: id.rawValue, mark: mark))
                }
            }
            return queued
        }
    }
}
