import Foundation
import IMAdapterKit
import IMCore
import IMStore
import Synchronization
import IMRelay
import IMOutbox

/// Comparing a source conversation with its copy on the target.
extension Verifier {
    // MARK: comparing

    /// A source message the route relays, and its expected copy.
    struct Expected {
        var message: Message
        var outgoing: OutgoingMessage
        /// Digests a copy may show: the current content's translation (and the original's where the target cannot edit).
        var digests: Set<String>
        /// Where the target cannot edit and the source's message is edited: the digest of the notice the relay
        /// sends for its latest edit (`✎ …`), which makes any earlier version on the copy current for its readers.
        var editNotice: String?
        var planned: [RelayAction]
        /// The ledger row of the message's intake (`--repair` writes it with a missing copy's `.send`).
        var intake: Intake
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
        let settled: Settle
        let lane = pair.lane
        do {
            let upTo = scope.untilMs ?? .max
            let reader = pair.viewer ?? pair.conversation.participants.first
            let readAt = clock.nowMs()
            sourceMessages = try await read(source, pair.conversation, since: scope.sinceMs, reader: reader, viewer: reader)
                .filter { $0.sentAt <= upTo }
            // What the bridge had queued and relayed before the target is read (Verifier+Settle.swift).
            do {
                settled = try await snapshot(pair, lane: lane, ids: sourceMessages.map(\.id), readAt: readAt, settleMs: max(0, scope.settleMs))
            } catch {
                result.error = "the store could not be read: \(error)"
                return result
            }
            let senders = sourceMessages.lazy.map(\.sender).first { !routes.isBridgeIdentity($0, on: pair.source) }
            // A window's target read moves back by the lag its mapped copies show (`read`'s `copies`).
            let sent = sourceMessages.map { ($0.id, $0.sentAt) }
            let copies = scope.sinceMs == nil ? [:] : try await store.reading { [from = pair.source, to = pair.leg.target] tx in
                Dictionary(try sent.compactMap { id, at in try tx.mapped(id, from: from, to: to).map { ($0.toMessage, at) } },
                           uniquingKeysWith: { first, _ in first })
            }
            targetMessages = try await read(target, pair.leg.targetConversation, since: scope.sinceMs.map { $0 - Self.skewMs },
                                            viewer: senders.map(pair.leg.targetUser), copies: copies)
        } catch {
            result.error = "\(error)"
            return result
        }
        do {
            try await compare(pair, source: source, target: target, sourceMessages, targetMessages, settled: settled, into: &result)
        } catch {
            result.error = "the store could not be read: \(error)"
        }
        return result
    }

    /// `settled`: the store as it was before the target was read.
    func compare(_ pair: Pair, source: any IMBackend, target: any IMBackend, _ sourceMessages: [Message], _ targetMessages: [Message],
                 settled: Settle = Settle(), into result: inout VerifyReport.Conversation) async throws {
        let translator = planner.translator(to: target, from: source)
        let capabilities = target.capabilities
        let edits = capabilities.support(.edit).isNative && target is any Editing
        let recalls = capabilities.support(.recall).isNative && target is any Recalling
        // A source without expansions of its own (NIM) shows a message's values as the changes its history
        // carries for it (`carried`), read as catch-up reads them (docs/verify.md, "Drift kinds").
        let sourceKeepsExpansions = source.capabilities.support(.expansion).isNative
        let carried = Self.carriedExpansions(sourceMessages, of: source, settlingAfter: settled.horizonMs)
        let lane = pair.lane
        let (pendingAfter, recalledByUs, late) = try await store.reading { tx -> (Set<MessageID>, Set<String>, Set<String>) in
            let pending = try Self.pendingSources(in: lane, tx)
            let prefix = "\(pair.leg.target.rawValue)/"
            let recalled = try tx.checkpoints(prefix: Self.recalledPrefix + prefix).map { String($0.name.dropFirst(Self.recalledPrefix.count + prefix.count)) }
            let late = try tx.checkpoints(prefix: Self.latePrefix + prefix).map { String($0.name.dropFirst(Self.latePrefix.count + prefix.count)) }
            return (pending, Set(recalled), Set(late))
        }
        func isRecalled(_ copy: Message) -> Bool { copy.isRecalled || recalledByUs.contains(copy.id.rawValue) }
        // Entries pending before or after the target was read: the bridge is still at work on these messages.
        let pending = settled.pending.union(pendingAfter)

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
            var editNotice: String?
            if !edits, let edit = message.edit {
                var original = message
                original.edit = nil
                var ignored = Planned()
                digests.insert(translator.outgoing(for: original, leg: pair.leg, planned: &ignored).content.digest)
                let edited = IMEvent(eventID: EventID("verify:edit:\(message.id)"), backend: pair.source,
                                     kind: .edited(messageID: message.id, conversation: message.conversation, by: message.sender,
                                                   content: edit.content, at: edit.editedAt))
                editNotice = translator.plan(edited, leg: pair.leg).actions.lazy.compactMap { action -> String? in
                    if case .notice(let notice, _) = action { return notice.content.digest }
                    return nil
                }.first
            }
            expected.append(Expected(message: message, outgoing: outgoing, digests: digests, editNotice: editNotice, planned: planned,
                                     intake: Self.intakeEvent(for: message, of: source)))
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
        // How far the target stamps its copies behind the source's clock, as the copies the id map names show
        // (the smallest copy-minus-source time, if below zero): a target clock minutes behind would otherwise
        // put a copy "before" its source message, and the time guards below would miss it (Finding 53,
        // docs/reliability.md).
        let behindMs = min(0, copies.lazy.map { $0.copy.sentAt - $0.expected.message.sentAt }.min() ?? 0)
        for (item, mapped) in unpaired {
            if let found = targetMessages.first(where: { candidate in
                !claimed.contains(candidate.id) && candidate.sender == item.outgoing.sender
                    && candidate.currentContent.kind == item.outgoing.content.kind && item.digests.contains(candidate.currentContent.digest)
                    && candidate.sentAt >= item.message.sentAt + behindMs - Self.skewMs && !bridgeCopies.contains(candidate.id)
            }) {
                claimed.insert(found.id)
                copies.append((item, found))
                result.matchedByContent += 1
                continue
            }
            // Queued, or relayed while the target was read; or not heard of yet and sent within the horizon.
            if pending.contains(item.message.id) || (mapped != nil && !settled.mapped.contains(item.message.id)) {
                result.inFlight += 1
                continue
            }
            if mapped == nil, !settled.mapped.contains(item.message.id), item.message.sentAt > settled.horizonMs {
                result.settling += 1
                continue
            }
            // A target whose history drops recalled messages shows no copy of a recalled one.
            if item.message.isRecalled && capabilities.recallsInHistory == .removed { continue }
            var missing = VerifyReport.Item(kind: .missing, sourceMessage: item.message.id.rawValue, targetMessage: mapped?.rawValue,
                                            detail: mapped == nil ? "no copy on \(pair.leg.target)" : "the copy the id map names is not in \(pair.leg.target)'s history")
            missing.fix = item.planned
            if mapped == nil {
                missing.guarded = .init(source: pair.source, message: item.message.id, intake: item.intake, lane: lane)
            }
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
                    && candidate.sentAt >= pair.expected.message.sentAt + behindMs - Self.skewMs
                    && (position[pair.copy.id] ?? 0) < (position[candidate.id] ?? 0)
            }) ?? copies.first(where: { pair in
                pair.copy.sender == candidate.sender && pair.copy.currentContent.kind == candidate.currentContent.kind
                    && pair.copy.currentContent.digest == candidate.currentContent.digest
                    && candidate.sentAt >= pair.expected.message.sentAt + behindMs - Self.skewMs
            }) else { continue }
            // A second copy of a message the bridge is still at work on (a retry, a retraction queued) is its business.
            guard !pending.contains(original.expected.message.id) else { continue }
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

        // A copy showing an earlier version of an edited message, where the target cannot edit: current for its
        // readers when the target shows, after it, the notice of the message's latest edit (docs/verify.md,
        // "Drift kinds"). Each notice vouches for one copy; one quoting another message vouches for none.
        var notices: [String: [Int]] = [:]
        if !edits {
            for (index, candidate) in targetMessages.enumerated() where !claimed.contains(candidate.id) && !isRecalled(candidate) {
                notices[candidate.currentContent.digest, default: []].append(index)
            }
        }
        func noticed(_ item: Expected, copy: Message, index: Int) -> Bool {
            guard let text = item.editNotice, let indices = notices[text] else { return false }
            guard let found = indices.firstIndex(where: { at in
                at > index && (targetMessages[at].reply.map { $0.messageID == copy.id } ?? true)
            }) else { return false }
            notices[text]?.remove(at: found)
            return true
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
            // A change still queued for it (an edit, a recall, expansion values): judged once it is carried out.
            if pending.contains(source.id) {
                result.inFlight += 1
                continue
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
            if shown.kind != item.outgoing.content.kind || !item.digests.contains(shown.digest),
               !noticed(item, copy: copy, index: index) {
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
            // The source's values: its own, or (a carrying source) what its carriers set; nil: nothing to compare.
            var values: [String: String]?
            if sourceKeepsExpansions {
                values = item.outgoing.expansion != nil ? source.expansion?.values ?? [:] : nil
            } else if carried.settling.contains(source.id) || pending.contains(source.id) {
                values = nil   // a carrier within the settle horizon: the bridge may not have taken it in yet
            } else if let set = carried.values[source.id] {
                values = set
            } else if copy.expansion?.values.isEmpty == false {
                values = [:]
            }
            if let values, capabilities.support(.expansion).isNative, target is any ExpansionUpdating {
                let limits = capabilities.expansionLimits
                let want = Dictionary(values.map { (ExpansionKeyCodec.encode($0.key, for: limits), $0) },
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
                    if sourceKeepsExpansions {
                        drift.fix = [.expansion(source: source.id, by: item.outgoing.sender, delta: delta)]
                    } else {
                        // The bridge converges a carried change only when it takes the carrier in (its
                        // callback, catch-up, a migration); a repair would write the state it holds.
                        drift.unfixable = "the source's values are the changes its carriers carry (\(pair.source)), which the bridge has not all taken in"
                    }
                    result.items.append(drift)
                }
            }
        }
    }

    /// A carrying source's expansions (NIM: `imbridge.expansion` carriers in its history, docs/expansions.md):
    /// the changes catch-up reads from `messages` (`CatchUpSource.catchUpEvent`), applied in history order
    /// to the message each names; `settling`: messages named by a carrier sent after `horizonMs`.
    static func carriedExpansions(_ messages: [Message], of source: any IMBackend, settlingAfter horizonMs: Int64)
        -> (values: [MessageID: [String: String]], settling: Set<MessageID>) {
        guard !source.capabilities.support(.expansion).isNative, let catchUp = source as? any CatchUpSource else { return ([:], []) }
        var values: [MessageID: [String: String]] = [:]
        var settling: Set<MessageID> = []
        for message in messages {
            guard case .expansionChanged(let id, _, _, let delta)? = catchUp.catchUpEvent(for: message)?.kind else { continue }
            if message.sentAt > horizonMs { settling.insert(id) }
            var set = values[id] ?? [:]
            if delta.cleared { set = [:] }
            for key in delta.removed { set[key] = nil }
            for (key, value) in delta.set { set[key] = value }
            values[id] = set
        }
        return (values, settling)
    }

    static func short(_ text: String) -> String { text.count > 40 ? String(text.prefix(39)) + "…" : text }
}
