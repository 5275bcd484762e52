import IMAdapterKit
import IMCore

/// The backend's memory of the business server: per conversation, the extras cursor and the last row
/// seen of each message (to tell what changed), and the reaction cursor. Syncs of one conversation run
/// one at a time (`serialized`), so two CMDs in a row cannot produce the same change twice.
///
/// With stored positions (`ChangeFeedSource.useStoredPositions`: the bridge's store) a cursor not in
/// memory is read from there, so a restart reads each feed on from where the recorded changes end
/// (docs/adapters/wukong.md, "Changes while the bridge is down"); without, it starts at 0.
actor WuKongSyncState {
    private var extraCursors: [ConversationRef: Int64] = [:]
    private var extraRows: [ConversationRef: [String: WKMessageExtra]] = [:]
    private var reactionCursors: [ConversationRef: Int64] = [:]
    /// The `extra` dictionaries this backend wrote (`updateExpansion`), by message id: the whole dictionary
    /// and the row version it was written over. Kept across `forget`: it says what the business server
    /// holds, not what was recorded.
    private var ownWrites: [String: (over: Int64, extra: [String: String])] = [:]
    private var tails: [String: Task<Void, Never>] = [:]
    private(set) var positions: (any CheckpointStorage)?

    static let extrasFeed = "extras"
    static let reactionsFeed = "reactions"

    func use(_ positions: (any CheckpointStorage)?) {
        self.positions = positions
        forget()
    }

    /// Where a read of `feed` starts: the cursor, and the position it started from for the store (nil:
    /// nothing stored, or no store).
    ///
    /// With stored positions the memory counts only while it stands where the store does. Another
    /// instance on the store may have recorded the feed further (its position ahead of this memory), or
    /// this instance read further than it recorded (a batch refused: its position behind this memory).
    /// Either way the rows kept here are not what was recorded, and a change compared with them can come
    /// out as none — a key removed after a change only the other instance read was lost that way (seed 107,
    /// docs/reliability.md). The conversation's memory goes, and the read starts from the stored position
    /// with no earlier rows: each row read gives its message's whole state (`WuKongExtrasCodec.delta`),
    /// which convergence narrows to the keys that differ.
    func start(_ feed: String, of conversation: ConversationRef, backend: BackendID) async throws -> (cursor: Int64, from: Int64?) {
        let memory = feed == Self.extrasFeed ? extraCursors[conversation] : reactionCursors[conversation]
        guard let positions else { return memory.map { ($0, $0) } ?? (0, nil) }
        let name = FeedPosition.checkpointName(backend: backend, conversation: conversation, feed: feed)
        let stored = try await positions.checkpoint(named: name).flatMap { Int64($0) }
        if let memory, memory == stored { return (memory, memory) }
        if feed == Self.extrasFeed {
            // The last read was not recorded as read (a batch refused, or a read after it failed before
            // recording) — or another instance recorded further; the ledger drops edits recorded twice.
            keepEdits(of: conversation)
            extraCursors[conversation] = nil
            extraRows[conversation] = nil
        } else {
            reactionCursors[conversation] = nil
        }
        return (stored ?? 0, stored)
    }

    /// This backend replaced `message`'s dictionary with `extra`, over the row it read at `version`.
    func wrote(_ extra: [String: String], over version: Int64, message: MessageID) {
        // Each write's own sync CMD brings a newer row, which ends its entry; the bound only keeps
        // entries of conversations nothing reads any more from piling up.
        if ownWrites.count >= 10_000 { ownWrites.removeAll() }
        ownWrites[message.rawValue] = (version, extra)
    }

    /// `rows` as they stand after this backend's writes. A row at or below the version a write was made
    /// over was read before that write landed: taken as it came, after the write, it would restate the
    /// values the write replaced at a newer version and win over them (Finding 34, docs/reliability.md).
    /// Its dictionary is the written one instead — the whole dictionary, since a write replaces it. A newer
    /// row shows the write or what came after it, and ends the entry.
    func afterOwnWrites(_ rows: [WKMessageExtra]) -> [WKMessageExtra] {
        guard !ownWrites.isEmpty else { return rows }
        return rows.map { row in
            guard let write = ownWrites[row.messageIDStr] else { return row }
            guard row.extraVersion <= write.over else {
                ownWrites[row.messageIDStr] = nil
                return row
            }
            var row = row
            row.extra = write.extra
            return row
        }
    }

    /// Records rows from a sync; returns each with the row seen before it (nil if none).
    func absorb(_ rows: [WKMessageExtra], in conversation: ConversationRef) -> [(previous: WKMessageExtra?, current: WKMessageExtra)] {
        var result: [(previous: WKMessageExtra?, current: WKMessageExtra)] = []
        for row in rows {
            result.append((extraRows[conversation]?[row.messageIDStr], row))
            extraRows[conversation, default: [:]][row.messageIDStr] = row
            extraCursors[conversation] = max(extraCursors[conversation] ?? 0, row.extraVersion)
        }
        return result
    }

    /// Remembers the `extra` a message was sent with, so its first sync is not reported as a change.
    func seed(extra: [String: String], message: MessageID, in conversation: ConversationRef) {
        var row = extraRows[conversation]?[message.rawValue] ?? WKMessageExtra(messageID: Int64(message.rawValue) ?? 0, extraVersion: 0)
        if row.extra == nil { row.extra = extra }
        extraRows[conversation, default: [:]][message.rawValue] = row
    }

    /// An extras read of `conversation` reached `cursor`: the memory stands there, rows or none. A read
    /// from the stored position that found no newer row left no cursor, and the next `start` took that
    /// for a read not recorded and handed the same edits on again, at every read (seed 808,
    /// docs/reliability.md).
    func reachedExtras(_ cursor: Int64, in conversation: ConversationRef) {
        extraCursors[conversation] = max(extraCursors[conversation] ?? cursor, cursor)
    }

    func advanceReactions(_ conversation: ConversationRef, to seq: Int64) {
        reactionCursors[conversation] = max(reactionCursors[conversation] ?? 0, seq)
    }

    /// What a sync read was not recorded: the cursors (and the rows compared with) go, so the next sync
    /// reads from the stored positions again.
    func forget() {
        extraCursors = [:]
        extraRows = [:]
        reactionCursors = [:]
        for conversation in Array(readEdits.keys) { keepEdits(of: conversation) }
    }

    /// The last read's edits of `conversation`, taken as not recorded: they go ahead of its next read.
    private func keepEdits(of conversation: ConversationRef) {
        guard let edits = readEdits.removeValue(forKey: conversation) else { return }
        let known = Set((unrecordedEdits[conversation] ?? []).map(\.eventID))
        unrecordedEdits[conversation, default: []] += edits.filter { !known.contains($0.eventID) }
    }

    /// The edits the last extras read of each conversation gave. Kept because the business server keeps a
    /// message's current text only: an edit read but not recorded (the store refused the batch) and then
    /// overwritten by the next edit cannot be read again (seed 546, docs/reliability.md).
    private var readEdits: [ConversationRef: [IMEvent]] = [:]
    /// Edits of reads that were not recorded (`forget`, or `start` finding the memory off the store),
    /// handed to the conversation's next extras read.
    private var unrecordedEdits: [ConversationRef: [IMEvent]] = [:]

    /// The edits a read not yet known to be recorded gave; the ledger drops those recorded already.
    func read(edits: [IMEvent], of conversation: ConversationRef) {
        readEdits[conversation] = edits
    }

    /// The edits of `conversation`'s reads that were not recorded, to go ahead of the next read's events.
    func takeUnrecordedEdits(of conversation: ConversationRef) -> [IMEvent] {
        unrecordedEdits.removeValue(forKey: conversation) ?? []
    }

    /// Runs `operation` after every earlier operation with the same key has finished.
    func serialized<T: Sendable>(_ key: String, _ operation: @escaping @Sendable () async throws -> T) async throws -> T {
        let previous = tails[key]
        let task = Task<T, any Error> {
            await previous?.value
            return try await operation()
        }
        tails[key] = Task { _ = try? await task.value }
        return try await task.value
    }
}
