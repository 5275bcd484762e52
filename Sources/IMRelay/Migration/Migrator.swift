import Foundation
import IMCore
import IMStore

/// What to migrate.
public struct MigrationPlan: Sendable {
    public var source: BackendID
    public var target: BackendID
    /// Source conversation → target conversation. A group whose target is its own id is created on the
    /// target (or found in the store's group map) before its history when `account` is on, and its
    /// history goes into the group the target gave (`targetConversation(for:users:)` names the default
    /// target of a conversation).
    public var conversations: [(ConversationRef, ConversationRef)]
    public var sinceMs: Int64?
    public var untilMs: Int64?
    public var dryRun: Bool
    /// How senders appear on the target. Default: the same ids (`.puppet(prefix: "")`) — an app that
    /// changes vendor keeps its users.
    public var users: UserMode
    public var pageSize: Int
    /// `.rehost` (default): attachments are fetched from the source and uploaded to a target that stores
    /// files, so the copies outlive the source account; `.link` keeps the source's URLs.
    public var media: Route.Media
    /// Bring the account along: the profiles of the users (given, group members, direct participants,
    /// senders) and the groups (name, avatar, announcement, owner, members) before the history. Off:
    /// history only, into conversations that must exist.
    public var account: Bool
    /// Users and groups to migrate besides those the conversations need (`--all`, `--account-file`).
    public var extraUsers: [UserID]
    public var extraGroups: [GroupID]
    /// Conversations copied at once (one lane each, order kept inside each); the target's rate limit
    /// is shared by all lanes.
    public var parallel: Int
    /// Said in the report's account notes (what the scope could not enumerate, `AccountScope.notes`).
    public var notes: [String] = []

    public init(source: BackendID, target: BackendID, conversations: [(ConversationRef, ConversationRef)], sinceMs: Int64? = nil,
                untilMs: Int64? = nil, dryRun: Bool = false, users: UserMode? = nil, pageSize: Int = 100, media: Route.Media = .rehost,
                account: Bool = true, extraUsers: [UserID] = [], extraGroups: [GroupID] = [], parallel: Int = MigrationPlan.defaultParallel) {
        self.media = media
        self.source = source
        self.target = target
        self.conversations = conversations
        self.sinceMs = sinceMs
        self.untilMs = untilMs
        self.dryRun = dryRun
        self.users = users ?? .puppet(prefix: "")
        self.pageSize = pageSize
        self.account = account
        self.extraUsers = extraUsers
        self.extraGroups = extraGroups
        self.parallel = max(1, parallel)
    }

    /// Conversations copied at once unless told otherwise.
    public static let defaultParallel = 8

    /// Where a conversation goes by default: a direct conversation between the users' target ids (the
    /// puppets' pair with a prefix), anything else under its own id.
    public static func targetConversation(for conversation: ConversationRef, users: UserMode) -> ConversationRef {
        guard conversation.kind == .direct, case .puppet(let prefix) = users, !prefix.isEmpty else { return conversation }
        let pair = conversation.participants
        guard pair.count == 2 else { return conversation }
        return .direct(UserID(prefix + pair[0].rawValue), UserID(prefix + pair[1].rawValue))
    }

    /// The target id of a source user.
    public func targetUser(_ user: UserID) -> UserID {
        switch users {
        case .puppet(let prefix): UserID(prefix + user.rawValue)
        case .relay(let account, _): account
        }
    }
}

/// Progress as it happens: `done` messages handled of `total` when known.
public struct MigrationProgress: Sendable {
    public var conversation: String
    public var done: Int
    public var total: Int?
    public var startedAt: Date
}

/// Moves an account from one backend to another: users, then groups (`Migrator+Account.swift`), then
/// each conversation's history, oldest → newest, through the target's send API, `plan.parallel`
/// conversations at a time (one lane each, order kept inside each).
///
/// Contract:
/// - Idempotent: every copied message gets an id-map row in the same transaction as its conversation's
///   checkpoint; a rerun skips mapped messages, and before re-sending a message whose earlier attempt may
///   have reached the target it asks the target by client id (`ClientIDLookup`) where it can.
/// - Resumable: the checkpoint per (source conversation → target conversation) is the history cursor
///   after the last page copied without a failure; a rerun starts there (and retries what failed).
/// - Writes silently (`MessageOptions.silent`: stored, no unread, no push) with the original time and
///   sender in `vendorExtras` (and `sentAt` where the target can set it); the final state travels:
///   edits as the latest content, expansions as current key/values, a recall as the target's recall
///   (or, where it has none, a `[消息已撤回]` notice instead of the content).
/// - Rate-limited to the target's documented limits (`MigrationPacing`, shared by all lanes); retryable failures (429, vendor rate codes,
///   5xx) back off and retry; permanent ones are counted with their vendor code and the run goes on.
public actor Migrator {
    let store: BridgeStore
    let source: any IMBackend
    let target: any IMBackend
    let retry: RetryPolicy
    /// The target's documented limits, shared by every lane.
    let pacing: MigrationPacing
    let clock: any IMClock
    let progress: @Sendable (MigrationProgress) -> Void
    /// Fallback texts for declared custom types the target's vendor cannot carry (as the bridge sends them).
    let customFallbacks: CustomTypeFallbacks?
    /// The delivery path the relay uses too: provisioning, media, earlier copies, failure classes.
    let delivery: Delivery
    /// The run's account counts (users, groups, members).
    var account = MigrationReport.Account()
    /// Each user's profile migration, started once per run (lanes that meet the same sender wait for it).
    var userWork: [UserID: Task<Void, Never>] = [:]
    /// Source conversations whose target group could not be made this run (their history waits).
    var blocked: Set<ConversationRef> = []
    /// Source profiles read ahead in batches (nil: the source does not know the user).
    var sourceProfiles: [UserID: UserProfile?] = [:]
    /// Target profiles read ahead in batches, by target id (nil: not on the target).
    var targetProfiles: [UserID: UserProfile?] = [:]

    public init(store: BridgeStore, source: any IMBackend, target: any IMBackend, retry: RetryPolicy = RetryPolicy(),
                sendsPerSecond: Double? = nil, clock: any IMClock = SystemClock(),
                progress: @escaping @Sendable (MigrationProgress) -> Void = { _ in },
                customFallbacks: CustomTypeFallbacks? = nil) {
        self.store = store
        self.customFallbacks = customFallbacks
        self.source = source
        self.target = target
        self.retry = retry
        self.pacing = MigrationPacing(capabilities: target.capabilities, sendsPerSecond: sendsPerSecond)
        self.delivery = Delivery(target: target, store: store, retry: retry)
        self.clock = clock
        self.progress = progress
    }

    /// Users, then groups (when `plan.account`), then the history of every conversation, `plan.parallel`
    /// conversations at a time.
    public func run(_ plan: MigrationPlan) async throws -> MigrationReport {
        var report = MigrationReport(source: plan.source.rawValue, target: plan.target.rawValue, dryRun: plan.dryRun)
        account = MigrationReport.Account()
        account.notes = plan.notes
        userWork = [:]
        blocked = []
        var pairs = plan.conversations
        if plan.account { pairs = try await migrateAccount(plan, pairs) }
        report.conversations = try await copyHistory(plan, pairs)
        if plan.account { report.account = account }
        return report
    }

    /// One lane per conversation, at most `plan.parallel` at once; the report keeps the plan's order.
    func copyHistory(_ plan: MigrationPlan, _ pairs: [(ConversationRef, ConversationRef)]) async throws -> [MigrationReport.Conversation] {
        var results = [MigrationReport.Conversation?](repeating: nil, count: pairs.count)
        try await withThrowingTaskGroup(of: (Int, MigrationReport.Conversation).self) { lanes in
            var next = 0, running = 0
            while next < pairs.count || running > 0 {
                while next < pairs.count && running < plan.parallel {
                    let index = next, (from, to) = pairs[index]
                    lanes.addTask { (index, try await self.migrate(from, to, plan)) }
                    next += 1
                    running += 1
                }
                guard let (index, result) = try await lanes.next() else { break }
                running -= 1
                results[index] = result
            }
        }
        return results.compactMap { $0 }
    }

    /// One checkpoint per conversation pair and time window: a run limited by `--since`/`--until` moves
    /// its own checkpoint, so a later run with another window (or none) still reads the messages the first
    /// one skipped (the id map keeps it from writing any message twice).
    static func checkpointName(_ plan: MigrationPlan, _ from: ConversationRef, _ to: ConversationRef) -> String {
        var name = "migrate:\(plan.source):\(from)->\(plan.target):\(to)"
        if plan.sinceMs != nil || plan.untilMs != nil {
            name += "@\(plan.sinceMs.map { String($0) } ?? "")..\(plan.untilMs.map { String($0) } ?? "")"
        }
        return name
    }

    func migrate(_ from: ConversationRef, _ to: ConversationRef, _ plan: MigrationPlan) async throws -> MigrationReport.Conversation {
        var result = MigrationReport.Conversation(source: "\(plan.source):\(from)", target: "\(plan.target):\(to)")
        if blocked.contains(from) {
            result.counts.failed["group_missing", default: 0] += 1
            result.failures.append("\(from): the group could not be made on \(plan.target) (see the account failures); a rerun copies its history")
            return result
        }
        let checkpoint = Self.checkpointName(plan, from, to)
        let route = Route(from: RouteEndpoint(backend: plan.source, kind: from.kind, id: from.id),
                          to: RouteEndpoint(backend: plan.target, kind: to.kind, id: to.id), direction: .forward, usersOnTarget: plan.users)
        let leg = RouteLeg(route: route, target: plan.target, targetConversation: to, users: plan.users)
        let translator = Translator(target: target, source: source, customFallbacks: customFallbacks)
        var anchor: HistoryAnchor = try store.read { try $0.checkpoint(checkpoint) }.map { .after(HistoryCursor($0)) } ?? .oldest
        var pending = try PendingSends(store: store, name: checkpoint + ":pending")
        let started = Date()
        var done = 0
        pages: while true {
            let query = HistoryQuery(conversation: from, anchor: anchor, limit: plan.pageSize)
            let page = try await withRetry { try await self.source.history(query) }
            for message in page.messages {
                done += 1
                if let since = plan.sinceMs, message.sentAt < since {
                    result.counts.skipped["before_since", default: 0] += 1
                    continue
                }
                if let until = plan.untilMs, message.sentAt > until { break pages }
                await copy(message, leg: leg, translator: translator, plan: plan, pending: &pending, into: &result)
            }
            progress(MigrationProgress(conversation: "\(from)", done: done, total: nil, startedAt: started))
            guard page.hasNewer, let next = page.newerCursor else { break }
            // The checkpoint only moves past pages that copied completely, so a rerun retries failures.
            if !plan.dryRun && result.failures.isEmpty {
                try store.transaction { try $0.setCheckpoint(checkpoint, next.rawValue, at: clock.nowMs()) }
            }
            anchor = .after(next)
        }
        return result
    }

    func copy(_ message: Message, leg: RouteLeg, translator: Translator, plan: MigrationPlan, pending: inout PendingSends,
              into result: inout MigrationReport.Conversation) async {
        do {
            if let mapping = try store.read({ try $0.mapped(message.id, from: plan.source, to: plan.target) }) {
                // A run that stopped between the copy's id map and its recall finishes the recall now.
                if !plan.dryRun, pending.attempt(of: Self.recallKey(message.id)) != nil, let recaller = target as? any Recalling {
                    let by = leg.targetUser(message.sender)
                    try await onTarget { try await recaller.recall(mapping.toMessage, in: leg.targetConversation, by: by) }
                    try store.transaction { try pending.remove(Self.recallKey(message.id), in: $0, at: clock.nowMs()) }
                }
                result.counts.skipped["already_copied", default: 0] += 1
                return
            }
            var planned = Planned()
            var outgoing = translator.outgoing(for: message, leg: leg, planned: &planned)
            outgoing.options = .silent
            outgoing.vendorExtras["imbridge_source_id"] = .string(message.id.rawValue)
            // Original id, sender, time (and expansion values the target cannot hold) in the target's extension field.
            var origin: [String: JSONValue] = ["backend": .string(plan.source.rawValue), "id": .string(message.id.rawValue),
                                               "sender": .string(message.sender.rawValue), "sent_at": .int(message.sentAt)]
            if outgoing.expansion == nil, let values = message.expansion?.values, !values.isEmpty {
                origin["expansion"] = .object(values.mapValues { .string($0) })
            }
            outgoing.vendorExtras[OutgoingMessage.originKey] = .object(origin)
            outgoing.clientMessageID = ClientMessageID("imm-\(Self.stableHash("\(plan.source)/\(message.id)"))")
            var fellBack = !planned.fallbacks.isEmpty && planned.fallbacks.contains { $0.policy == .notice }
            let recallNatively = message.isRecalled && target.capabilities.support(.recall).isNative && target is any Recalling
            if message.isRecalled && !recallNatively {
                outgoing.content = .notice(NoticeContent(text: "[消息已撤回]"))
                outgoing.expansion = outgoing.expansion.map { _ in [:] }
                fellBack = true
            }
            if let reply = outgoing.reply {
                let mapped = try store.read { try $0.mapped(reply.messageID, from: plan.source, to: plan.target) }
                outgoing.reply = mapped.map { ReplyRef(messageID: $0.toMessage, digest: reply.digest) }
            }
            let converted = !planned.fallbacks.isEmpty || message.edit != nil || outgoing.content != message.currentContent
            if plan.dryRun {
                tally(message, converted: converted, fellBack: fellBack, into: &result)
                return
            }
            // Recorded before the send: if the process dies between the target's accept and the id map, the
            // rerun looks for this message on the target instead of sending it again.
            if plan.account { await bringUser(message.sender, plan) }
            let earlierAttempt = pending.attempt(of: message.id)
            if earlierAttempt == nil { try pending.add(message.id, at: clock.nowMs()) }
            let sent = try await deliver(outgoing, to: leg.targetConversation, earlierAttemptAt: earlierAttempt, media: plan.media)
            try store.transaction { tx in
                try tx.map(source: (plan.source, message.id, message.conversation), target: (plan.target, sent.id, sent.conversation),
                           at: clock.nowMs())
                try pending.remove(message.id, in: tx, at: clock.nowMs())
                if recallNatively { try pending.add(Self.recallKey(message.id), in: tx, at: clock.nowMs()) }
            }
            if recallNatively, let recaller = target as? any Recalling {
                let sender = outgoing.sender
                try await onTarget { try await recaller.recall(sent.id, in: sent.conversation, by: sender) }
                try store.transaction { try pending.remove(Self.recallKey(message.id), in: $0, at: clock.nowMs()) }
            }
            tally(message, converted: converted, fellBack: fellBack, into: &result)
        } catch {
            let code = (error as? IMError).map { $0.vendorCode ?? $0.code.rawValue } ?? "error"
            result.counts.failed[code, default: 0] += 1
            result.failures.append("\(message.id): \(error)")
        }
    }

    func tally(_ message: Message, converted: Bool, fellBack: Bool, into result: inout MigrationReport.Conversation) {
        if fellBack {
            result.counts.fellBack += 1
        } else if converted {
            result.counts.converted += 1
        } else {
            result.counts.copied += 1
        }
        result.counts.byKind[message.currentContent.kind.rawValue, default: 0] += 1
    }

    /// The pending entry of a copy whose recall is still to be made.
    static func recallKey(_ message: MessageID) -> MessageID { MessageID("recall:\(message.rawValue)") }

    /// FNV-1a, 64-bit, as hex: a stable client id from a source message id.
    static func stableHash(_ text: String) -> String {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in text.utf8 {
            hash ^= UInt64(byte)
            hash &*= 0x100_0000_01b3
        }
        return String(hash, radix: 16)
    }
}
