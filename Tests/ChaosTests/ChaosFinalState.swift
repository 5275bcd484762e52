import Foundation
import IMCore

/// The checker's second half (docs/reliability.md, "The checker"): besides once and in order, the final
/// state of every message on the target — recalled or deleted (the copy recalled: no shipped target
/// deletes but RongCloud, and only RongCloud sources delete), the text after edits (notices `✎ …` where
/// the target cannot edit), the expansion values (natively, or as NIM's carriers applied in order), and
/// the reactions' notices where the target has no reactions. Plain values, so that it is tested on its own.
enum ChaosFinalState {
    /// One stored message of a sandbox, as `GET /_sandbox/messages` shows it.
    struct Record: Sendable {
        var id: String
        var conversation: String
        var kind: String
        var text: String
        var recalled: Bool
        var expansion: [String: String]
        /// A NIM expansion carrier's change: the copy it names, the keys it sets, the keys it removes.
        var carrier: (target: String, set: [String: String], removed: [String], cleared: Bool)?

        init(id: String, conversation: String, kind: String = "text", text: String, recalled: Bool = false,
             expansion: [String: String] = [:], carrier: (target: String, set: [String: String], removed: [String], cleared: Bool)? = nil) {
            self.id = id
            self.conversation = conversation
            self.kind = kind
            self.text = text
            self.recalled = recalled
            self.expansion = expansion
            self.carrier = carrier
        }

        init?(_ json: JSONValue, conversationOf: (String) -> String) {
            guard let id = json["id"]?.stringValue ?? json["id"]?.int64Value.map(String.init),
                  let conversation = json["conversation_id"]?.stringValue, json["kind"]?.stringValue != "command" else { return nil }
            var expansion: [String: String] = [:]
            if case .object(let values)? = json["expansion"] { for (key, value) in values { expansion[key] = value.stringValue } }
            self.init(id: id, conversation: conversationOf(conversation), kind: json["kind"]?.stringValue ?? "",
                      text: json["text"]?.stringValue ?? "", recalled: json["recalled"] == true, expansion: expansion,
                      carrier: json["kind"] == "custom" ? Self.carrier(in: json["raw"] ?? .null) : nil)
        }

        /// A carrier's change, comparable.
        struct Change: Equatable {
            var set: [String: String]
            var removed: Set<String>
            var cleared: Bool

            init(_ carrier: (target: String, set: [String: String], removed: [String], cleared: Bool)) {
                set = carrier.set
                removed = Set(carrier.removed)
                cleared = carrier.cleared
            }

            var described: String {
                (cleared ? "cleared, " : "") + ChaosFinalState.describe(set) + (removed.isEmpty ? "" : " removing \(removed.sorted())")
            }
        }

        /// NIM's `imbridge.expansion` carrier data wherever it sits in the stored body (a JSON string or object).
        static func carrier(in value: JSONValue) -> (target: String, set: [String: String], removed: [String], cleared: Bool)? {
            switch value {
            case .object(let object):
                if let target = object["msgid"]?.stringValue ?? object["msgid"]?.int64Value.map(String.init), object["set"] != nil || object["removed"] != nil {
                    var set: [String: String] = [:]
                    if case .object(let values)? = object["set"] { for (key, value) in values { set[key] = value.stringValue } }
                    let removed = object["removed"]?.arrayValue?.compactMap(\.stringValue) ?? []
                    return (target, set, removed, object["cleared"] == true)
                }
                for nested in object.values { if let found = carrier(in: nested) { return found } }
            case .array(let items):
                for nested in items { if let found = carrier(in: nested) { return found } }
            case .string(let text) where text.hasPrefix("{"):
                if let parsed = try? JSONValue.parse(Data(text.utf8)) { return carrier(in: parsed) }
            default: break
            }
            return nil
        }
    }

    /// How the target shows changes: natively (edits, expansions) or otherwise.
    struct TargetTraits: Sendable {
        var edits: Bool
        /// `native`, `carrier` (NIM) or `none`.
        var expansions: String
        var reactions: Bool

        static func of(_ vendor: String) -> TargetTraits {
            switch vendor {
            case "wukong": TargetTraits(edits: true, expansions: "native", reactions: true)
            case "rongcloud": TargetTraits(edits: false, expansions: "native", reactions: false)
            case "nim": TargetTraits(edits: false, expansions: "carrier", reactions: false)
            default: TargetTraits(edits: false, expansions: "none", reactions: false)
            }
        }
    }

    /// One conversation: `sourceOrder` the original texts in the source's order (the workload's and any
    /// burst's; deleted ones left out), `entries` the workload's account of its messages, `target` the
    /// target's records of the conversation in its order. Returns every problem found (empty: all as it
    /// should be); the first is the once-and-in-order comparison, when that fails.
    /// `fed`: on a WuKong source, the edited texts each message's extras feed ever served, by source
    /// message id (`GET /_sandbox/extras-served`; nil elsewhere): WuKongIM keeps only a message's latest
    /// edit, so an earlier edit no feed read ever served was overwritten before the bridge could see it.
    /// `reactionsFed`: on a WuKong source, the reaction toggles a feed read served, as
    /// `message|user|emoji|n` for the row's n-th toggle (`GET /_sandbox/reactions-served`; nil elsewhere):
    /// the business server keeps one row per message, user and emoji, so a toggle toggled again before any
    /// read served it was never there to relay, and its notice may be absent.
    /// `repairedLate`: originals whose missing copy `verify --repair` sent; such a copy lands after newer
    /// messages (docs/verify.md), so only its count is judged — once — not its place.
    static func check(conversation: String, sourceOrder: [String], entries: [WorkLog.Entry], target: [Record],
                      traits: TargetTraits, fed: [String: Set<String>]? = nil, reactionsFed: Set<String>? = nil,
                      repairedLate: Set<String> = []) -> [String] {
        var problems: [String] = []
        var byVersion: [String: WorkLog.Entry] = [:]
        for entry in entries { for version in entry.versions { byVersion[version] = entry } }
        let originals = Set(sourceOrder)
        let deleted = Set(entries.filter(\.deleted).map(\.original))
        // Once and in order: a copy counts at its first showing for a message the source recalled, and only
        // when not recalled for one it did not (a recalled second copy is the bridge's own retraction).
        var got: [String] = []
        var seenEnded = Set<String>()
        var copies: [String: [Record]] = [:]
        for record in target {
            let original = byVersion[record.text]?.original ?? record.text
            guard originals.contains(original) || deleted.contains(original) else { continue }
            copies[original, default: []].append(record)
            if deleted.contains(original) { continue }
            if byVersion[record.text]?.ended == true {
                if seenEnded.insert(original).inserted { got.append(original) }
            } else if !record.recalled {
                got.append(original)
            }
        }
        // A message recalled before the bridge relayed it may never show on the target (NIM's history, for
        // one, drops it): absent is as recalled as a recalled copy.
        let unseen = Set(entries.filter { $0.ended && copies[$0.original] == nil }.map(\.original))
        let expected = sourceOrder.filter { !unseen.contains($0) }
        // A message the source recalled has no place left in the source's history to keep (NIM's drops it):
        // its copy, recalled, is judged by its count, not its place. The bridge may relay it after a newer one
        // that a migration copied meanwhile from a history read after the recall (seed 44, docs/reliability.md).
        let recalledOnSource = Set(entries.filter { $0.recalled && !$0.deleted }.map(\.original)).intersection(expected)
        let placeless = repairedLate.intersection(expected).union(recalledOnSource)
        for original in placeless.sorted() {
            let count = got.filter { $0 == original }.count
            if count != 1 {
                let what = repairedLate.contains(original) ? "a copy verify --repair sent" : "recalled on the source"
                problems.append("conversation \(conversation): \(original), \(what), shown \(count) times on the target"
                                + (count == 0 ? " (LOST)" : " (DOUBLED)"))
            }
        }
        if let problem = ChaosChecker.compare(conversation: conversation, expected: expected.filter { !placeless.contains($0) },
                                              got: got.filter { !placeless.contains($0) }) {
            problems.append(problem)
        }

        let shownTexts = target.map(\.text)
        var carriers: [String: [Record]] = [:]
        for record in target { if let carrier = record.carrier { carriers[carrier.target, default: []].append(record) } }
        for entry in entries {
            let mine = copies[entry.original] ?? []
            let name = "\(conversation) \(entry.original)"
            if entry.ended {
                let shown = mine.filter { !$0.recalled }
                if !shown.isEmpty {
                    problems.append("FINAL STATE \(name): \(entry.deleted ? "deleted" : "recalled") on the source, \(shown.count) of \(mine.count) copies on the target not recalled")
                }
            } else if let copy = mine.first(where: { !$0.recalled }) {
                let text = entry.edits.last ?? entry.original
                if traits.edits && copy.text != text {
                    problems.append("FINAL STATE \(name): the copy shows \"\(copy.text)\", the source \"\(text)\"")
                }
                var shown: [String: String]?
                switch traits.expansions {
                case "native": shown = copy.expansion
                case "carrier":
                    var values: [String: String] = [:]
                    var previous: Record.Change?
                    for carrier in (carriers[copy.id] ?? []).compactMap(\.carrier) {
                        // Every change the workload makes differs from the one before it (a new value, or
                        // the removal of a key held): the same change carried twice in a row was applied twice.
                        let change = Record.Change(carrier)
                        if change == previous {
                            problems.append("FINAL STATE \(name): the expansion change \(change.described) carried twice in a row on the target")
                        }
                        previous = change
                        if carrier.cleared { values = [:] }
                        for key in carrier.removed { values[key] = nil }
                        for (key, value) in carrier.set { values[key] = value }
                    }
                    shown = values
                default: shown = nil
                }
                if let shown, shown != entry.expansion {
                    problems.append("FINAL STATE \(name): expansion on the target \(describe(shown)), on the source \(describe(entry.expansion))")
                }
            }
            if !traits.edits {
                // A copy sent after some edits (a catch-up or a repair reads the message as it is now) shows
                // the latest of them itself: their notices may be absent (at most one each).
                let carried = entry.edits.lastIndex { edit in mine.contains { $0.text == edit } } ?? -1
                // An edit overwritten before any feed read served it (not the last) was never there to relay.
                let overwritten = { (index: Int, edit: String) in
                    fed.map { index < entry.edits.count - 1 && !($0[entry.id.rawValue] ?? []).contains(edit) } ?? false
                }
                for (index, edit) in entry.edits.enumerated() {
                    let count = shownTexts.filter { $0 == "✎ \(edit)" }.count
                    if count > 1 || (count == 0 && index > carried && !overwritten(index, edit)) {
                        problems.append("FINAL STATE \(name): the edit notice \"✎ \(edit)\" shown \(count) times on the target, expected once")
                    }
                }
            }
        }
        if !traits.reactions {
            let expected = entries.flatMap(\.reactionNotices).sorted()
            let notices = Set(expected)
            let shown = shownTexts.filter { notices.contains($0) || isReactionNotice($0) }.sorted()
            // Notices of toggles no read served before the row was toggled again: each may be absent.
            var excusable: [String: Int] = [:]
            if let reactionsFed {
                for entry in entries {
                    var toggles: [String: Int] = [:]
                    let counts = Dictionary(entry.reactionRows.map { ($0, 1) }, uniquingKeysWith: +)
                    for (notice, row) in zip(entry.reactionNotices, entry.reactionRows) {
                        toggles[row, default: 0] += 1
                        let n = toggles[row]!
                        if n < counts[row]!, !reactionsFed.contains("\(entry.id.rawValue)|\(row)|\(n)") { excusable[notice, default: 0] += 1 }
                    }
                }
            }
            var missing = Dictionary(expected.map { ($0, 1) }, uniquingKeysWith: +)
            var extra = false
            for notice in shown {
                if let left = missing[notice], left > 0 { missing[notice] = left - 1 } else { extra = true }
            }
            let unexcused = missing.contains { notice, count in count > excusable[notice, default: 0] }
            if extra || unexcused {
                problems.append("FINAL STATE \(conversation): reaction notices on the target \(ChaosChecker.sample(shown)) (\(shown.count)), expected \(ChaosChecker.sample(expected)) (\(expected.count))")
            }
        }
        return problems
    }

    static func isReactionNotice(_ text: String) -> Bool {
        ConversationScript.emoji.contains { text == "\($0) +1" || text == "\($0) −1" }
    }

    static func describe(_ values: [String: String]) -> String {
        "{" + values.sorted { $0.key < $1.key }.map { "\($0.key): \($0.value)" }.joined(separator: ", ") + "}"
    }
}
