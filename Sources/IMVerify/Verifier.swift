import Foundation
import IMAdapterKit
import IMCore
import IMStore
import Synchronization
import IMRelay
import IMOutbox
import IMPositions

/// Which part of the configuration `imbridge verify` compares, and over which time window.
public struct VerifyScope: Sendable {
    /// Only this route (its index in the configuration, from 0).
    public var route: Int?
    /// Only this source conversation (`BACKEND:KIND:ID`).
    public var conversation: (backend: BackendID, conversation: ConversationRef)?
    /// Source messages sent at or after / at or before (epoch ms).
    public var sinceMs: Int64?
    public var untilMs: Int64?
    /// The settle horizon (docs/verify.md, "Beside a running bridge"): a source message sent less than this
    /// long before its conversation is read, that the bridge had neither relayed nor queued, is settling
    /// (on its way to the bridge), not missing.
    public var settleMs: Int64

    /// The default settle horizon: longer than the vendors' callback retries (docs/adapters/*.md).
    public static let defaultSettleMs: Int64 = 60_000

    public init(route: Int? = nil, conversation: (backend: BackendID, conversation: ConversationRef)? = nil,
                sinceMs: Int64? = nil, untilMs: Int64? = nil, settleMs: Int64 = VerifyScope.defaultSettleMs) {
        self.route = route
        self.conversation = conversation
        self.sinceMs = sinceMs
        self.untilMs = untilMs
        self.settleMs = settleMs
    }
}

/// Compares both sides of every route (docs/verify.md): reads the source's and the target's history of
/// each conversation in the window, pairs each source message with its copy — by the id map, else by
/// sender, kind, digest and time (as the relay's earlier-copy search does) — and reports what is missing,
/// doubled, out of order, or differs in content, recall state or expansion values. Reads only; `repair`
/// (Verifier+Repair.swift) queues the fixes in the outbox.
///
/// Rules:
/// - A source message counts when the route relays it as a message: not written by the bridge itself
///   (a copy from the other direction), and turned into a `.send` by the relay's own translation. Its
///   expected copy is that translation (sender on the target, kind, digest).
/// - Beside a running bridge (Verifier+Settle.swift): a message with an entry still pending in the target's
///   lane, or relayed while its conversation was read, is in flight; one the bridge has not heard of yet,
///   sent within the settle horizon, is settling. Neither is judged.
/// - History is read newest first, 100 messages a call (every vendor's documented page allows 100,
///   docs/adapters/*.md), back to the window's start; the target from 5 s before it to its newest message
///   (copies land after their originals).
/// - Content: the copy's digest must be the translation's of the source's current content; where the
///   target cannot edit (edits travel as notices) the original content's is accepted too, and so is any
///   other when the target shows, after the copy, the notice of the message's latest edit (a copy sent
///   after an earlier edit, whose later edit came as a notice).
/// - Recall state is compared only where the target's history marks recalls (`Capabilities.recallsInHistory`);
///   a copy the target's history drops when recalled (NIM) is not missing when its original is recalled.
///   Copies `--repair` took back are remembered in the store (`verify/recalled/…`) for targets whose
///   history cannot show it (JMessage); copies it sent late (`verify/late/…`) are not out of order.
/// - Expansion values are compared where the source and the target keep expansions natively and the copy
///   was sent with one (NIM's changes travel as carriers: nothing to compare on its side).
public final class Verifier: Sendable {
    let store: BridgeStore
    /// The backends, and how an event is planned for a leg (the relay's own planning).
    let planner: Planner
    let routes: RouteTable
    let clock: any IMClock
    /// History calls per backend.
    let calls = Mutex<[String: Int]>([:])
    /// Each source backend's clock lead, read once per run (`Verifier+Settle.swift`): the query scans the
    /// source's newest copies, the same for every conversation of that source.
    let clockLeads = Mutex<[BackendID: Int64]>([:])

    /// Target copies `--repair` took back and copies it sent after newer ones (checkpoint prefixes).
    static let recalledPrefix = "verify/recalled/"
    static let latePrefix = "verify/late/"
    /// History page size: every vendor's documented page allows 100 (docs/adapters/*.md).
    static let pageSize = 100
    /// Skew allowed between a source message's time and its copy's.
    static let skewMs: Int64 = 5_000
    /// The most a windowed read of a target moves back for a target clock behind the source's: a day.
    static let lookbackMs: Int64 = 86_400_000

    public init(store: BridgeStore, backends: [any IMBackend], routes: [Route], customFallbacks: CustomTypeFallbacks? = nil,
                clock: any IMClock = SystemClock()) {
        self.store = store
        self.planner = Planner(backends: Dictionary(backends.map { ($0.id, $0) }, uniquingKeysWith: { first, _ in first }),
                               customFallbacks: customFallbacks)
        self.routes = RouteTable(routes)
        self.clock = clock
    }

    var backends: [BackendID: any IMBackend] { planner.backends }
    var customFallbacks: CustomTypeFallbacks? { planner.customFallbacks }

    /// One source conversation and the leg it travels.
    struct Pair: Sendable {
        var route: Int
        var source: BackendID
        var conversation: ConversationRef
        var leg: RouteLeg
        var viewer: UserID?
        /// The lane the bridge relays this pair's messages in (the mapped group's, for a group the
        /// conversation map names).
        var lane: LaneKey
    }

    /// Compares every conversation of `scope`; `progress(done, total)` after each.
    public func run(_ scope: VerifyScope, progress: @Sendable (Int, Int) -> Void = { _, _ in }) async throws -> VerifyReport {
        var report = VerifyReport(startedAtMs: clock.nowMs(), sinceMs: scope.sinceMs, untilMs: scope.untilMs)
        calls.withLock { $0 = [:] }   // this run's calls (one run at a time per verifier)
        clockLeads.withLock { $0 = [:] }
        let pairs = try await self.pairs(scope)
        for (n, pair) in pairs.enumerated() {
            report.conversations.append(await compare(pair, scope))
            progress(n + 1, pairs.count)
        }
        report.readCalls = calls.withLock { $0 }
        report.finishedAtMs = clock.nowMs()
        return report
    }

    // MARK: conversations

    /// The conversations to compare: those routes name, those the store knows (catch-up checkpoints,
    /// written for every source conversation the bridge has recorded), and `scope.conversation`.
    func pairs(_ scope: VerifyScope) async throws -> [Pair] {
        var known: [BackendID: [ConversationRef: UserID?]] = [:]
        for (name, value) in try await store.reading({ try $0.checkpoints(prefix: CatchUpCheckpoint.prefix) }) {
            guard let key = CatchUpCheckpoint.key(fromName: name) else { continue }
            let record = CatchUpCheckpoint.Record(stored: value)
            known[key.backend, default: [:]][key.conversation] = record?.viewer.map(UserID.init)
        }
        var pairs: [Pair] = []
        var seen: Set<String> = []
        // The conversation map: a wildcard group leg goes into the group the bridge set up (docs/architecture.md, "Portals").
        let portals = try await store.reading { try PortalMap.all($0) }
        var mapped: [String: GroupID] = [:]
        for portal in portals {
            mapped["\(portal.source)|\(portal.group)|\(portal.target)"] = portal.targetGroup
            mapped["\(portal.target)|\(portal.targetGroup)|\(portal.source)"] = portal.group
        }
        func add(_ backend: BackendID, _ conversation: ConversationRef, viewer: UserID?) {
            for routed in routes.legs(from: backend, conversation: conversation) {
                guard let index = routes.routes.firstIndex(of: routed.route), scope.route == nil || scope.route == index else { continue }
                var leg = routed
                var lane = LaneKey(backend: leg.target, conversation: leg.targetConversation)
                if conversation.kind == .group, leg.targetIsWildcard {
                    let group = mapped["\(backend)|\(conversation.id)|\(leg.target)"]
                    // (No portal: the group of the same id, as relayed before portals existed.)
                    if let group {
                        leg.targetConversation = .group(group)
                        lane = LaneKey(backend: leg.target, conversation: .group(group))
                    }
                }
                let key = "\(backend)|\(conversation)|\(leg.target)|\(leg.targetConversation)"
                guard seen.insert(key).inserted else { continue }
                pairs.append(Pair(route: index, source: backend, conversation: conversation, leg: leg, viewer: viewer, lane: lane))
            }
        }
        if let named = scope.conversation {
            add(named.backend, named.conversation, viewer: known[named.backend]?[named.conversation] ?? nil)
            return pairs
        }
        for route in routes.routes {
            let ends = route.direction == .both ? [(route.from, route.to), (route.to, route.from)] : [(route.from, route.to)]
            for (from, _) in ends {
                if let id = from.id, let conversation = try? ConversationRef(parsing: "\(from.kind):\(id)") {
                    add(from.backend, conversation, viewer: known[from.backend]?[conversation] ?? nil)
                }
            }
        }
        for (backend, conversations) in known.sorted(by: { $0.key.rawValue < $1.key.rawValue }) {
            for (conversation, viewer) in conversations.sorted(by: { $0.key.description < $1.key.description }) {
                add(backend, conversation, viewer: viewer)
            }
        }
        return pairs
    }

    // MARK: reading

    /// The messages of `conversation` sent at or after `since` (all with nil), oldest first: pages of 100
    /// from the newest back, read as `reader` (as catch-up reads a source). A read the backend refuses for
    /// want of a member to read as is made again as `viewer`.
    ///
    /// `copies`: the copies the id map names of the source messages read, each with its source message's
    /// time. A target whose clock is behind the source's stamps them before their originals, so a window's
    /// copies can lie before `since`: the read goes back further by the largest such gap the copies read
    /// so far show (at most `lookbackMs`), as the comparison's time tests do (Finding 54,
    /// docs/reliability.md).
    func read(_ backend: any IMBackend, _ conversation: ConversationRef, since: Int64?, reader initial: UserID? = nil,
              viewer: UserID?, copies: [MessageID: Int64] = [:]) async throws -> [Message] {
        var reader: UserID? = initial
        func page(_ anchor: HistoryAnchor) async throws -> HistoryPage {
            var query = HistoryQuery(conversation: conversation, anchor: anchor, limit: Self.pageSize, viewer: reader)
            calls.withLock { $0[backend.id.rawValue, default: 0] += 1 }
            do {
                return try await backend.history(query)
            } catch let error as IMError where error.code == .invalidArgument && !error.isRetryable && reader == nil && viewer != nil {
                reader = viewer
                query.viewer = viewer
                calls.withLock { $0[backend.id.rawValue, default: 0] += 1 }
                return try await backend.history(query)
            }
        }
        var current = try await page(.latest)
        var collected = current.messages
        var lag: Int64 = 0
        func behind(_ messages: [Message]) {
            for message in messages {
                if let original = copies[message.id] { lag = max(-Self.lookbackMs, min(lag, message.sentAt - original)) }
            }
        }
        behind(current.messages)
        var pages = 1
        while current.hasOlder, let older = current.olderCursor, let first = current.messages.first,
              since.map({ first.sentAt >= $0 + lag }) ?? true, pages < 100_000 {
            current = try await page(.before(older))
            guard !current.messages.isEmpty else { break }
            collected = current.messages + collected
            behind(current.messages)
            pages += 1
        }
        let floor = since.map { $0 + lag }
        var seen: Set<MessageID> = []
        return collected.filter { message in
            guard floor.map({ message.sentAt >= $0 }) ?? true else { return false }
            return seen.insert(message.id).inserted
        }
    }
}
