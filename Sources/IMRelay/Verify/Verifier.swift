import Foundation
import IMAdapterKit
import IMCore
import IMStore
import Synchronization

/// Which part of the configuration `imbridge verify` compares, and over which time window.
public struct VerifyScope: Sendable {
    /// Only this route (its index in the configuration, from 0).
    public var route: Int?
    /// Only this source conversation (`BACKEND:KIND:ID`).
    public var conversation: (backend: BackendID, conversation: ConversationRef)?
    /// Source messages sent at or after / at or before (epoch ms).
    public var sinceMs: Int64?
    public var untilMs: Int64?

    public init(route: Int? = nil, conversation: (backend: BackendID, conversation: ConversationRef)? = nil,
                sinceMs: Int64? = nil, untilMs: Int64? = nil) {
        self.route = route
        self.conversation = conversation
        self.sinceMs = sinceMs
        self.untilMs = untilMs
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
///   expected copy is that translation (sender on the target, kind, digest). A message whose `.send` is
///   still pending in the target's lane is in flight, not missing.
/// - History is read newest first, 100 messages a call (every vendor's documented page allows 100,
///   docs/adapters/*.md), back to the window's start; the target from 5 s before it to its newest message
///   (copies land after their originals).
/// - Content: the copy's digest must be the translation's of the source's current content; where the
///   target cannot edit (edits travel as notices) the original content's is accepted too.
/// - Recall state is compared only where the target's history marks recalls (`Capabilities.recallsInHistory`);
///   a copy the target's history drops when recalled (NIM) is not missing when its original is recalled.
///   Copies `--repair` took back are remembered in the store (`verify/recalled/…`) for targets whose
///   history cannot show it (JMessage); copies it sent late (`verify/late/…`) are not out of order.
/// - Expansion values are compared where the target keeps expansions natively and the copy was sent with one.
public final class Verifier: Sendable {
    let store: BridgeStore
    /// The backends, and how an event is planned for a leg (the relay's own planning).
    let planner: Planner
    let routes: RouteTable
    let clock: any IMClock
    /// History calls per backend.
    let calls = Mutex<[String: Int]>([:])

    /// Target copies `--repair` took back and copies it sent after newer ones (checkpoint prefixes).
    static let recalledPrefix = "verify/recalled/"
    static let latePrefix = "verify/late/"
    /// History page size: every vendor's documented page allows 100 (docs/adapters/*.md).
    static let pageSize = 100
    /// Skew allowed between a source message's time and its copy's.
    static let skewMs: Int64 = 5_000

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
    }

    /// Compares every conversation of `scope`; `progress(done, total)` after each.
    public func run(_ scope: VerifyScope, progress: @Sendable (Int, Int) -> Void = { _, _ in }) async throws -> VerifyReport {
        var report = VerifyReport(startedAtMs: clock.nowMs(), sinceMs: scope.sinceMs, untilMs: scope.untilMs)
        calls.withLock { $0 = [:] }   // this run's calls (one run at a time per verifier)
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
        for (name, value) in try await store.reading({ try $0.checkpoints(prefix: CatchUpRunner.checkpointPrefix) }) {
            guard let key = CatchUpRunner.key(fromCheckpoint: name) else { continue }
            let record = try? JSONDecoder().decode(CatchUpRunner.Record.self, from: Data(value.utf8))
            known[key.backend, default: [:]][key.conversation] = record?.viewer.map(UserID.init)
        }
        var pairs: [Pair] = []
        var seen: Set<String> = []
        func add(_ backend: BackendID, _ conversation: ConversationRef, viewer: UserID?) {
            for leg in routes.legs(from: backend, conversation: conversation) {
                guard let index = routes.routes.firstIndex(of: leg.route), scope.route == nil || scope.route == index else { continue }
                let key = "\(backend)|\(conversation)|\(leg.target)|\(leg.targetConversation)"
                guard seen.insert(key).inserted else { continue }
                pairs.append(Pair(route: index, source: backend, conversation: conversation, leg: leg, viewer: viewer))
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
    func read(_ backend: any IMBackend, _ conversation: ConversationRef, since: Int64?, reader initial: UserID? = nil,
              viewer: UserID?) async throws -> [Message] {
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
        var pages = 1
        while current.hasOlder, let older = current.olderCursor, let first = current.messages.first,
              since.map({ first.sentAt >= $0 }) ?? true, pages < 100_000 {
            current = try await page(.before(older))
            guard !current.messages.isEmpty else { break }
            collected = current.messages + collected
            pages += 1
        }
        var seen: Set<MessageID> = []
        return collected.filter { message in
            guard since.map({ message.sentAt >= $0 }) ?? true else { return false }
            return seen.insert(message.id).inserted
        }
    }

    // MARK: comparing

    /// A source message the route relays, and its expected copy.
    struct Expected {
        var message: Message
        var outgoing: OutgoingMessage
        /// Digests a copy may show: the current content's translation (and the original's where the target cannot edit).
        var digests: Set<String>
        var planned: [RelayAction]
    }

    func compare(_ pair: Pair, _ scope: VerifyScope) async -> VerifyReport.Conversation {
        var result = VerifyReport.Conversation(route: pair.route, source: "\(pair.source):\(pair.conversation)",
                                               target: "\(pair.leg.target):\(pair.leg.targetConversation)")
        result.pair = pair
        guard let source = backends[pair.source], let target = backends[pair.leg.target] else {
            result.error = "backend \(backends[pair.source] == nil ? pair.source : pair.leg.target) is not configured"
            return result
        }
        let sourceMessages: [Message], targetMessages: [Message]
        do {
            let upTo = scope.untilMs ?? .max
            let reader = pair.viewer ?? pair.conversation.participants.first
            sourceMessages = try await read(source, pair.conversation, since: scope.sinceMs, reader: reader, viewer: reader)
                .filter { $0.sentAt <= upTo }
            let senders = sourceMessages.lazy.map(\.sender).first { !routes.isBridgeIdentity($0, on: pair.source) }
            targetMessages = try await read(target, pair.leg.targetConversation, since: scope.sinceMs.map { $0 - Self.skewMs },
                                            viewer: senders.map(pair.leg.targetUser))
        } catch {
            result.error = "\(error)"
            return result
        }
        do {
            try await compare(pair, source: source, target: target, sourceMessages, targetMessages, into: &result)
        } catch {
            result.error = "the store could not be read: \(error)"
        }
        return result
    }

    func compare(_ pair: Pair, source: any IMBackend, target: any IMBackend, _ sourceMessages: [Message], _ targetMessages: [Message],
                 into result: inout VerifyReport.Conversation) async throws {
        let translator = planner.translator(to: target, from: source)
        let capabilities = target.capabilities
        let edits = capabilities.support(.edit).isNative && target is any Editing
        let recalls = capabilities.support(.recall).isNative && target is any Recalling
        let lane = LaneKey(backend: pair.leg.target, conversation: pair.leg.targetConversation)
        let (inFlight, recalledByUs, late) = try await store.reading { tx -> (Set<MessageID>, Set<String>, Set<String>) in
            var pending: Set<MessageID> = []
            for entry in try tx.pendingEntries(of: lane, limit: 100_000) {
                if let payload = try? OutboxPayload.decode(entry.payload), case .send(_, let id, _) = payload.action { pending.insert(id) }
            }
            let prefix = "\(pair.leg.target.rawValue)/"
            let recalled = try tx.checkpoints(prefix: Self.recalledPrefix + prefix).map { String($0.name.dropFirst(Self.recalledPrefix.count + prefix.count)) }
            let late = try tx.checkpoints(prefix: Self.latePrefix + prefix).map { String($0.name.dropFirst(Self.latePrefix.count + prefix.count)) }
            return (pending, Set(recalled), Set(late))
        }
        func isRecalled(_ copy: Message) -> Bool { copy.isRecalled || recalledByUs.contains(copy.id.rawValue) }

        // The source messages the route relays as messages, with their expected copies.
        var expected: [Expected] = []
        // The store's answers for the whole page in one read each, not one per message.
        let sourceIDs = sourceMessages.map(\.id)
        let madeHere = try await store.reading { [from = pair.source] tx in Set(try sourceIDs.filter { try tx.isBridgeCreated($0, on: from) }) }
        for message in sourceMessages {
            guard !routes.isBridgeIdentity(message.sender, on: pair.source), !madeHere.contains(message.id) else { continue }
            let event = (source as? any CatchUpSource).map { $0.catchUpEvent(for: message) }
                ?? IMEvent(eventID: EventID("msg:\(message.id)"), backend: pair.source, kind: .message(message))
            guard let event, case .message = event.kind else { continue }
            let planned = translator.plan(event, leg: pair.leg).actions
            guard let outgoing = planned.lazy.compactMap({ action -> OutgoingMessage? in
                if case .send(let outgoing, _, _) = action { return outgoing }
                return nil
            }).first else { continue }
            var digests: Set<String> = [outgoing.content.digest]
            if !edits, message.edit != nil {
                var original = message
                original.edit = nil
                var ignored = Planned()
                digests.insert(translator.outgoing(for: original, leg: pair.leg, planned: &ignored).content.digest)
            }
            expected.append(Expected(message: message, outgoing: outgoing, digests: digests, planned: planned))
        }
        result.sourceMessages = expected.count
        result.targetMessages = targetMessages.count

        // Pair each with its copy: the id map's, else one found by sender, kind, digest and time.
        let targetIDs = targetMessages.map(\.id)
        let bridgeCopies = try await store.reading { [on = pair.leg.target] tx in Set(try targetIDs.filter { try tx.isBridgeCreated($0, on: on) }) }
        let expectedIDs = expected.map(\.message.id)
        let mappedCopies = try await store.reading { [from = pair.source, to = pair.leg.target] tx in
            Dictionary(try expectedIDs.compactMap { id in try tx.mapped(id, from: from, to: to).map { (id, $0.toMessage) } }, uniquingKeysWith: { first, _ in first })
        }
        let position = Dictionary(targetMessages.enumerated().map { ($0.element.id, $0.offset) }, uniquingKeysWith: { first, _ in first })
        var claimed: Set<MessageID> = []
        var copies: [(expected: Expected, copy: Message)] = []
        var unpaired: [(Expected, MessageID?)] = []
        for item in expected {
            let mapped = mappedCopies[item.message.id]
            if let mapped, let index = position[mapped], !claimed.contains(mapped) {
                claimed.insert(mapped)
                copies.append((item, targetMessages[index]))
            } else {
                unpaired.append((item, mapped))
            }
        }
        for (item, mapped) in unpaired {
            if let found = targetMessages.first(where: { candidate in
                !claimed.contains(candidate.id) && candidate.sender == item.outgoing.sender
                    && candidate.currentContent.kind == item.outgoing.content.kind && item.digests.contains(candidate.currentContent.digest)
                    && candidate.sentAt >= item.message.sentAt - Self.skewMs && !bridgeCopies.contains(candidate.id)
            }) {
                claimed.insert(found.id)
                copies.append((item, found))
                result.matchedByContent += 1
                continue
            }
            if inFlight.contains(item.message.id) {
                result.inFlight += 1
                continue
            }
            // A target whose history drops recalled messages shows no copy of a recalled one.
            if item.message.isRecalled && capabilities.recallsInHistory == .removed { continue }
            var missing = VerifyReport.Item(kind: .missing, sourceMessage: item.message.id.rawValue, targetMessage: mapped?.rawValue,
                                            detail: mapped == nil ? "no copy on \(pair.leg.target)" : "the copy the id map names is not in \(pair.leg.target)'s history")
            missing.fix = item.planned
            if item.message.isRecalled {
                if recalls { missing.fix.append(.recall(source: item.message.id, by: item.outgoing.sender)) } else { missing.fix = [] }
                missing.unfixable = recalls ? nil : "recalled on the source and \(pair.leg.target) cannot recall: nothing to send"
            }
            result.items.append(missing)
        }
        // In source order (history order), for the order check.
        let sourceOrder = Dictionary(sourceMessages.enumerated().map { ($0.element.id, $0.offset) }, uniquingKeysWith: { first, _ in first })
        copies.sort { sourceOrder[$0.expected.message.id, default: 0] < sourceOrder[$1.expected.message.id, default: 0] }

        // Doubles: a copy no id-map row names with the sender, kind and digest of a paired copy, not taken back.
        for candidate in targetMessages where !claimed.contains(candidate.id) && !isRecalled(candidate) && !bridgeCopies.contains(candidate.id) {
            guard let original = copies.last(where: { pair in
                pair.copy.sender == candidate.sender && pair.copy.currentContent.kind == candidate.currentContent.kind
                    && pair.copy.currentContent.digest == candidate.currentContent.digest
                    && candidate.sentAt >= pair.expected.message.sentAt - Self.skewMs
                    && (position[pair.copy.id] ?? 0) < (position[candidate.id] ?? 0)
            }) ?? copies.first(where: { pair in
                pair.copy.sender == candidate.sender && pair.copy.currentContent.kind == candidate.currentContent.kind
                    && pair.copy.currentContent.digest == candidate.currentContent.digest
                    && candidate.sentAt >= pair.expected.message.sentAt - Self.skewMs
            }) else { continue }
            claimed.insert(candidate.id)
            var double = VerifyReport.Item(kind: .doubled, sourceMessage: original.expected.message.id.rawValue,
                                           targetMessage: candidate.id.rawValue, detail: "a second copy beside \(original.copy.id)")
            if recalls {
                double.fix = [.retract(source: original.expected.message.id, copy: candidate.id, outgoing: original.expected.outgoing, attemptAt: 0)]
            } else {
                double.unfixable = "\(pair.leg.target) cannot recall messages"
            }
            result.items.append(double)
        }

        // Order, content, recall, expansion of each copy.
        var newest: (index: Int, copy: MessageID)?
        for (item, copy) in copies {
            let source = item.message
            let index = position[copy.id] ?? 0
            if !late.contains(copy.id.rawValue) {
                if let newest, index < newest.index {
                    var disorder = VerifyReport.Item(kind: .outOfOrder, sourceMessage: source.id.rawValue, targetMessage: copy.id.rawValue,
                                                     detail: "shown before \(newest.copy), the copy of an older message")
                    disorder.unfixable = "a target keeps the order it stored"
                    result.items.append(disorder)
                } else {
                    newest = (index, copy.id)
                }
            }
            let copyRecalled = isRecalled(copy)
            if capabilities.recallsInHistory == .marked, capabilities.support(.recall).isNative, source.isRecalled != copyRecalled {
                var drift = VerifyReport.Item(kind: .recall, sourceMessage: source.id.rawValue, targetMessage: copy.id.rawValue,
                                              detail: source.isRecalled ? "recalled on the source, not on the target" : "recalled on the target only")
                if source.isRecalled, recalls {
                    drift.fix = [.recall(source: source.id, by: item.outgoing.sender)]
                } else if !source.isRecalled {
                    drift.fix = item.planned
                    drift.detail += " (sent again)"
                } else {
                    drift.unfixable = "\(pair.leg.target) cannot recall messages"
                }
                result.items.append(drift)
                continue
            }
            guard !source.isRecalled, !copyRecalled else { continue }
            let shown = copy.currentContent
            if shown.kind != item.outgoing.content.kind || !item.digests.contains(shown.digest) {
                var drift = VerifyReport.Item(kind: .content, sourceMessage: source.id.rawValue, targetMessage: copy.id.rawValue,
                                              detail: "source «\(Self.short(item.outgoing.content.digest))», copy «\(Self.short(shown.digest))»")
                if edits {
                    drift.fix = [.edit(source: source.id, by: item.outgoing.sender, content: item.outgoing.content)]
                } else if recalls {
                    drift.fix = [.recall(source: source.id, by: item.outgoing.sender)] + item.planned
                    drift.detail += "; \(pair.leg.target) cannot edit: the copy is recalled and sent again"
                } else {
                    drift.unfixable = "\(pair.leg.target) can neither edit nor recall"
                }
                result.items.append(drift)
            }
            if capabilities.support(.expansion).isNative, target is any ExpansionUpdating, item.outgoing.expansion != nil {
                let limits = capabilities.expansionLimits
                let want = Dictionary((source.expansion?.values ?? [:]).map { (ExpansionKeyCodec.encode($0.key, for: limits), $0) },
                                      uniquingKeysWith: { first, _ in first })
                let have = copy.expansion?.values ?? [:]
                let keys = Set(want.keys).union(have.keys).filter { want[$0]?.value != have[$0] }.sorted()
                if !keys.isEmpty {
                    var delta = ExpansionDelta(version: source.expansion?.version ?? 0)
                    for key in keys {
                        if let original = want[key] {
                            delta.set[original.key] = original.value
                        } else {
                            delta.removed.append(ExpansionKeyCodec.decode(key, for: limits, known: [String]()))
                        }
                    }
                    var drift = VerifyReport.Item(kind: .expansion, sourceMessage: source.id.rawValue, targetMessage: copy.id.rawValue,
                                                  detail: keys.map { "\($0): source \(want[$0].map { "«\(Self.short($0.value))»" } ?? "none"), copy \(have[$0].map { "«\(Self.short($0))»" } ?? "none")" }
                                                      .joined(separator: "; "))
                    drift.fix = [.expansion(source: source.id, by: item.outgoing.sender, delta: delta)]
                    result.items.append(drift)
                }
            }
        }
    }

    static func short(_ text: String) -> String { text.count > 40 ? String(text.prefix(39)) + "…" : text }
}
