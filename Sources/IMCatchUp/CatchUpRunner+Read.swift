import Foundation
import IMAdapterKit
import IMCore
import IMStore
import Logging
import IMRelay

/// Reading a conversation back from the source's history and recording what was missed.
extension CatchUpRunner {
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
            if newest.isEmpty, source.gapSignal == .sequence {
                foundEmpty.insert(key)
                gate.caughtUp(key, seq: 0)
            }
            try await recordPage(newest, key, source, &record, &outcome)
            return outcome
        }
        var anchor = HistoryCursor(cursor)
        while true {
            // A read cut short by a stop is a failed read, never a complete one: what was held meanwhile
            // must not be recorded (nor its position saved) as if nothing came before it.
            try Task.checkCancellation()
            let page = try await source.history(HistoryQuery(conversation: key.conversation, anchor: .after(anchor), limit: 100, viewer: viewer))
            logger.debug("catch-up read a page", metadata: ["backend": "\(key.backend)", "conversation": "\(key.conversation)",
                                                           "after": "\(anchor.rawValue)", "messages": "\(page.messages.count)",
                                                           "last": "\(page.newerCursor?.rawValue ?? "none")", "has_newer": "\(page.hasNewer)"])
            try await recordPage(page.messages, key, source, &record, &outcome)
            guard page.hasNewer, let next = page.newerCursor, !page.messages.isEmpty else { break }
            anchor = next
        }
        return outcome
    }

    /// Records one page of history (oldest first) through the intake, then moves and saves the checkpoint
    /// to its last message: a failure before the save leaves the checkpoint before the page.
    func recordPage(_ messages: [Message], _ key: CatchUpGate.Key, _ source: any CatchUpSource, _ record: inout Record,
                            _ outcome: inout Outcome) async throws {
        let oldest = clock.nowMs() - settings.maxAgeMs
        // What the vendor's history does not list is not read (`ChangeWindowSource.isLocalTombstone`).
        let window = source as? any ChangeWindowSource
        let messages = window.map { window in messages.filter { !window.isLocalTombstone($0) } } ?? messages
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
        if record.cursor != nil, record != records[key] || records[key] == nil { record = try await save([key: record])[key] ?? record }
        if let last = messages.last {
            gate.confirm(key, at: last.sentAt, id: last.id.rawValue)
            gate.caughtUp(key, seq: source.gapSignal == .sequence ? last.seq : nil)
        }
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
}
