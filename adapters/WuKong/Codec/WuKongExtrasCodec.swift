import Foundation
import IMCore
import IMHTTP

/// Pure translation of business-server extras and reactions into neutral events.
///
/// Extras (`/v1/message/extra/sync` rows), compared with the previously seen row of the same message
/// (nil when unknown, e.g. after a restart):
/// - `revoke` turning 1 → `recalled` by `revoker`, `eventID` `recall:<id>` (same as the CMD path);
/// - a new `edited_at`/`content_edit` → `edited`, `eventID` `edit:<id>:<edited_at>:<crc32 of content>`;
/// - `extra` (the remote dictionary = neutral expansion) differing → `expansionChanged` with only the
///   changed keys (with no earlier row: the whole dictionary, `cleared`), version = `extra_version`,
///   `eventID` `exp:<id>:<extra_version>`;
/// - `readed_count` rising → `read` for the actor that sent the `syncMessageExtra` CMD, up to the
///   highest such message of the batch (`read:<conversation>:<actor>:<id>`).
/// Reactions (`/v1/reaction/sync` rows) → `reaction`, added = `is_deleted` 0, `eventID`
/// `react:<conversation>:<seq>`.
public struct WuKongExtrasCodec: Sendable {
    public let backend: BackendID
    public let content: WuKongContentCodec

    public init(backend: BackendID, content: WuKongContentCodec) {
        self.backend = backend
        self.content = content
    }

    /// `readAt`: the bridge's clock when the rows were asked for, an expansion change's version
    /// (`Capabilities.expansionVersionIsReadTime`); nil: the row's `extra_version`.
    public func events(rows: [(previous: WKMessageExtra?, current: WKMessageExtra)], conversation: ConversationRef,
                       actor: UserID?, at: Int64, readAt: Int64? = nil) -> [IMEvent] {
        var events: [IMEvent] = []
        var readUpTo: (seq: UInt64, id: String)?
        for (previous, row) in rows {
            let id = MessageID(row.messageIDStr)
            if row.revoke == 1, previous?.revoke != 1 {
                let by = row.revoker.flatMap { $0.isEmpty ? nil : UserID($0) } ?? actor ?? UserID(WuKongChannel.systemUID)
                events.append(event("recall:\(id)", .recalled(messageID: id, conversation: conversation, by: by, at: at)))
            }
            if let edit = row.contentEdit, let editedAt = row.editedAt, editedAt > 0,
               previous?.editedAt != editedAt || previous?.contentEdit != edit,
               case .object(let object) = edit, let decoded = try? content.decode(object) {
                let hash = String(Hashing.crc32(edit.jsonString()), radix: 16)
                var edited = event("edit:\(id):\(editedAt):\(hash)",
                                   .edited(messageID: id, conversation: conversation, by: actor ?? UserID(WuKongChannel.systemUID),
                                           content: decoded.content, at: editedAt * 1000))
                // The edited payload's mentions, quote and kept keys stay with the event.
                edited.mentions = decoded.mentions
                edited.reply = decoded.reply
                edited.vendorExtras = decoded.vendorExtras
                events.append(edited)
            }
            if let delta = Self.delta(from: previous?.extra, to: row.extra, version: readAt ?? row.extraVersion) {
                events.append(event("exp:\(id):\(row.extraVersion)",
                                    .expansionChanged(messageID: id, conversation: conversation, by: actor, delta: delta)))
            }
            if (row.readedCount ?? 0) > (previous?.readedCount ?? 0) {
                let seq = row.messageSeq ?? 0
                if readUpTo == nil || seq >= readUpTo!.seq { readUpTo = (seq, row.messageIDStr) }
            }
        }
        if let readUpTo, let actor {
            events.append(event("read:\(conversation):\(actor):\(readUpTo.id)",
                                .read(conversation: conversation, user: actor, upTo: MessageID(readUpTo.id), at: at)))
        }
        return events
    }

    /// The keys that changed between two remote `extra` dictionaries; nil when nothing changed. With no
    /// earlier row (the first read after a start), a non-empty dictionary is the message's whole state:
    /// `cleared` with every key set, so that a key removed while nobody read is removed on the copies too
    /// (convergence narrows it to the keys that really differ: docs/expansions.md, "Convergence").
    public static func delta(from old: [String: String]?, to new: [String: String]?, version: Int64) -> ExpansionDelta? {
        if old == nil, let new, !new.isEmpty { return ExpansionDelta(version: version, set: new, cleared: true) }
        let before = old ?? [:], after = new ?? [:]
        guard before != after else { return nil }
        let set = after.filter { before[$0.key] != $0.value }
        let removed = before.keys.filter { after[$0] == nil }
        let cleared = after.isEmpty && !before.isEmpty
        return ExpansionDelta(version: version, set: set, removed: removed, cleared: cleared)
    }

    public func events(reactions: [WKReaction], conversation: ConversationRef) -> [IMEvent] {
        reactions.map { row in
            event("react:\(conversation):\(row.seq)",
                  .reaction(messageID: MessageID(row.messageID), conversation: conversation, user: UserID(row.uid),
                            emoji: row.emoji, added: row.isDeleted == 0, at: Self.parseTime(row.createdAt)))
        }
    }

    /// `yyyy-MM-dd HH:mm:ss` (UTC+8, as TSDD writes it), unix seconds, or unix milliseconds → ms.
    public static func parseTime(_ text: String) -> Int64 {
        if let number = Int64(text) { return number < 100_000_000_000 ? number * 1000 : number }
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(secondsFromGMT: 8 * 3600)
        formatter.dateFormat = "yyyy-MM-dd HH:mm:ss"
        guard let date = formatter.date(from: text) else { return 0 }
        return Int64(date.timeIntervalSince1970 * 1000)
    }

    public static func formatTime(_ ms: Int64) -> String {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(secondsFromGMT: 8 * 3600)
        formatter.dateFormat = "yyyy-MM-dd HH:mm:ss"
        return formatter.string(from: Date(timeIntervalSince1970: Double(ms) / 1000))
    }

    private func event(_ id: String, _ kind: IMEvent.Kind) -> IMEvent {
        IMEvent(eventID: EventID(id), backend: backend, kind: kind)
    }
}
