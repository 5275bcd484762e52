import Foundation
import IMAdapterKit
import IMCore
import IMStore
import Logging
import IMRelay
import IMOutbox

/// Catch-up of changes to old messages (docs/architecture.md, "Catch-up of changes"): after a
/// conversation's messages are caught up, what happened meanwhile to messages it already relayed —
/// edits, recalls, deletions, expansion changes, reactions — from the source's change feed
/// (`ChangeFeedSource`) or by comparing a window of its history with what the bridge knows
/// (`ChangeWindowSource`). Recorded through the intake like callbacks: the ledger drops what a callback
/// brought already.
extension CatchUpRunner {
    /// Reads `key`'s changes; a failure is tried again with a growing pause (`changeRetries`).
    func catchUpChanges(_ key: CatchUpGate.Key, reason: String) async {
        guard let source = sources[key.backend] else { return }
        let found: Int
        do {
            if let feed = source as? any ChangeFeedSource {
                found = try await readFeed(key, feed)
            } else if let window = source as? any ChangeWindowSource {
                // Live messages held while starting are caught up twice in a row: the window once is enough.
                guard reason != "held" else { return }
                found = try await compareWindow(key, window)
            } else {
                return
            }
            changeRetries[key] = nil
        } catch {
            let failures = (changeRetries[key]?.failures ?? 0) + 1
            let delay = Self.retryDelayMs(failures: failures)
            changeRetries[key] = (clock.nowMs() + delay, failures)
            metrics.increment("imbridge_catch_up_errors_total", ["backend": key.backend.rawValue])
            logger.warning("catch-up of changes failed; read again later", metadata: [
                "backend": "\(key.backend)", "conversation": "\(key.conversation)", "retry_in_ms": "\(delay)",
                "error": "\(String("\(error)".prefix(300)))",
            ])
            return
        }
        if found > 0 {
            metrics.increment("imbridge_catch_up_changes_total", ["backend": key.backend.rawValue], by: found)
            logger.info("caught up changes to old messages", metadata: ["backend": "\(key.backend)", "conversation": "\(key.conversation)",
                                                                        "reason": "\(reason)", "changes": "\(found)"])
        }
    }

    // MARK: change feeds

    /// The feed read on from its stored positions, recorded with the positions reached. A feed with no
    /// stored position yet (a conversation first read by this version) is read from its start: of that,
    /// only changes to messages the bridge relayed or will relay are kept (`knownChanges`), and edits and
    /// reactions older than `max_age` are left out — their ledger rows may be pruned, and they would be
    /// relayed a second time. Whatever fails after the read (the screening's store read or lookup, the
    /// recording) makes the source forget the positions it reached, so that the next read covers them again.
    func readFeed(_ key: CatchUpGate.Key, _ feed: any ChangeFeedSource) async throws -> Int {
        let batch = try await feed.readChanges(of: key.conversation)
        do {
            var events = batch.events
            if batch.positions.contains(where: { $0.from == nil }) { events = try await knownChanges(events, key, feed) }
            guard !events.isEmpty || !batch.positions.isEmpty else { return 0 }
            return try await engine.ingestGrouped(events, setAside: [], firstCheckpoints: [], holdKeys: [], positions: batch.positions).accepted
        } catch {
            await feed.forgetPositions()
            throw error
        }
    }

    /// Of a feed read from its start: the changes to messages the bridge relayed or recorded (their copy
    /// may still be queued: a target refusing, a lane behind), recent enough — and, on a source that
    /// numbers its messages, the changes to messages past the conversation's catch-up position: a message
    /// sent and changed while its callback was late (a paused instance, a vendor's queue behind) is not
    /// recorded yet when the feed serves its change, and a history read that came just before it does not
    /// list it. Its change waits in its lane for the copy like a live one (docs/reliability.md, seed 204).
    /// A conversation whose read found it empty counts as caught up to position 0 (seed 325).
    func knownChanges(_ events: [IMEvent], _ key: CatchUpGate.Key, _ feed: any ChangeFeedSource) async throws -> [IMEvent] {
        let oldest = clock.nowMs() - settings.maxAgeMs
        let legs = routes.legs(from: key.backend, conversation: key.conversation)
        let candidates = events.compactMap { event -> (IMEvent, MessageID)? in
            switch event.kind {
            case .edited(let id, _, _, _, let at), .reaction(let id, _, _, _, _, let at):
                return at >= oldest ? (event, id) : nil
            case .recalled(let id, _, _, _), .deleted(let id, _, _, _, _), .expansionChanged(let id, _, _, _):
                return (event, id)
            case .message, .read, .command, .membersChanged, .groupDissolved:
                return nil
            }
        }
        // With the event id the source records each message under (`CatchUpSource.catchUpEvent`).
        let source = sources[key.backend]
        let checked = candidates.map { event, id in
            (event, id, source?.catchUpEvent(for: Message(id: id, conversation: key.conversation, sender: "", sentAt: 0, content: .text("")))?.eventID)
        }
        let known = try await store.reading { tx in
            try checked.map { _, id, recorded in
                try legs.contains { try tx.mapped(id, from: key.backend, to: $0.target) != nil }
                    || recorded.map { try tx.hasEvent(key.backend, $0) } == true
            }
        }
        let unknown = zip(checked, known).filter { !$1 }.map { $0.0.1 }
        var onTheirWay: Set<MessageID> = []
        // A conversation whose history was found empty has position 0: all of its messages came after that read.
        if !unknown.isEmpty, source?.gapSignal == .sequence,
           let caughtUp = try await knownRecord(key)?.seq ?? (foundEmpty.contains(key) ? 0 : nil) {
            let sequences = try await feed.sequences(of: Array(Set(unknown)), in: key.conversation)
            onTheirWay = Set(unknown.filter { (sequences[$0] ?? 0) > caughtUp })
        }
        return zip(checked, known).filter { $1 || onTheirWay.contains($0.1) }.map { $0.0.0 }
    }

    // MARK: history windows

    /// `key`'s messages recorded and queued for a target but not copied yet (a lane behind a refusing
    /// target, a backlog), with their source time and sender: compared as the relayed ones are. A message
    /// deleted on its source while its copy waited is then followed by the deletion, queued behind the copy
    /// in its lane. Without them, a copy made more than `change_window` after its message was sent (a short
    /// window, a long backlog) was never compared, and a deletion whose callback was lost stayed undone on
    /// the copy (seed 66, docs/reliability.md). A wildcard group leg may be a portal: its entries wait in the
    /// portal's lane (`PortalMap.lane`) until the map names the target group, then in that group's lane.
    static func queuedMessages(_ key: CatchUpGate.Key, legs: [RouteLeg], sentSince: Int64, _ tx: StoreTransaction) throws -> [RelayedMessage] {
        var lanes: Set<LaneKey> = []
        for leg in legs {
            lanes.insert(LaneKey(backend: leg.target, conversation: leg.targetConversation))
            guard leg.targetIsWildcard, key.conversation.kind == .group else { continue }
            lanes.insert(PortalMap.lane(target: leg.target, source: key.backend, group: GroupID(key.conversation.id)))
            if let mapped = try PortalMap.group(PortalMap.key(source: key.backend, conversation: key.conversation, target: leg.target), tx) {
                lanes.insert(LaneKey(backend: leg.target, conversation: .group(mapped)))
            }
        }
        var queued: [MessageID: RelayedMessage] = [:]
        for lane in lanes {
            for entry in try tx.pendingEntries(of: lane, limit: 10_000) where entry.kind == "send" && entry.sourceBackend == key.backend {
                guard let payload = try? OutboxPayload.decode(entry.payload), case .send(_, let source, _) = payload.action,
                      (payload.sourceConversation ?? key.conversation) == key.conversation, payload.eventTimeMs >= sentSince else { continue }
                queued[source] = RelayedMessage(id: source, sentAt: payload.eventTimeMs, sender: payload.sourceSender)
            }
        }
        return queued.values.sorted { ($0.sentAt, $0.id.rawValue) < ($1.sentAt, $1.id.rawValue) }
    }

    /// Re-reads the last `change_window` of `key`'s history and records what differs from what the bridge
    /// knows: a recalled message it relayed (the callback's recall event), a relayed message history no
    /// longer lists (`absenceEvent`), an expansion whose keys differ from those the store says the message
    /// holds (`ExpansionKeyRecord.held`). Returns how many changes were new to the ledger.
    func compareWindow(_ key: CatchUpGate.Key, _ source: any ChangeWindowSource) async throws -> Int {
        let now = clock.nowMs()
        let since = now - settings.changeWindowMs
        let record = try await storedRecord(key)
        let viewer = record.viewer.map(UserID.init) ?? key.conversation.participants.first
        let legs = routes.legs(from: key.backend, conversation: key.conversation)
        // Listed before history is read: a message relayed after the read began cannot look deleted, nor
        // can an expansion key the store learned after it (`expansionChanges`).
        let (relayed, queued, keysBeforeRead) = try await store.reading { tx in
            let copied = try tx.relayedMessages(from: key.backend, in: key.conversation, sentSince: since)
            let listed = Set(copied.map(\.id))
            let queued = try Self.queuedMessages(key, legs: legs, sentSince: since, tx).filter { !listed.contains($0.id) }
            let keys = try Dictionary((copied + queued).map { ($0.id, try tx.expansionKeys(of: $0.id, on: key.backend)) }, uniquingKeysWith: { a, _ in a })
            return (copied + queued, Set(queued.map(\.id)), keys)
        }
        let messages = try await source.recentMessages(of: key.conversation, sentSince: since, viewer: viewer)
        // A recalled message relayed or queued for its copy (the recall is queued behind the copy).
        let recalled = messages.filter { $0.recall != nil }
        var events = try await store.reading { tx in
            try recalled.filter { message in
                try queued.contains(message.id) || legs.contains { try tx.mapped(message.id, from: key.backend, to: $0.target) != nil }
            }
        }.compactMap { source.recallEvent(for: $0) }
        // Gone from history: only among the messages after the first one history still shows, so that a
        // read that does not reach back as far (a member who cannot see older messages) deletes nothing.
        if let first = messages.first?.sentAt {
            let present = Set(messages.map(\.id))
            for message in relayed where message.sentAt >= first && !present.contains(message.id) {
                if let event = source.absenceEvent(of: message.id, in: key.conversation, at: now, by: message.sender) { events.append(event) }
            }
        }
        events += try await expansionChanges(messages, key, source: source, keysBeforeRead: keysBeforeRead)
        guard !events.isEmpty else { return 0 }
        return try await engine.ingestGrouped(events).accepted
    }
}
