import Foundation
import IMCore
import IMRelay
import IMOutbox

/// What `imbridge verify` found (docs/verify.md): per route leg and conversation, the drift between the
/// source's history and the target's, each item naming both sides' message ids.
public struct VerifyReport: Codable, Sendable {
    /// The kinds of drift (the `kind` label of `imbridge_verify_drift`).
    public enum Kind: String, Codable, Sendable, CaseIterable {
        /// A source message with no copy on the target.
        case missing
        /// A second copy of a message on the target.
        case doubled
        /// Two copies shown in the opposite order of their originals.
        case outOfOrder = "out_of_order"
        /// The copy's content is not the source's (an edit not applied where the target edits, or a copy changed).
        case content
        /// Recalled on one side only.
        case recall
        /// An expansion value that differs.
        case expansion
    }

    /// One drift found, and what `--repair` did about it.
    public struct Item: Codable, Sendable, Hashable {
        public var kind: Kind
        public var sourceMessage: String
        /// The target's copy (for `missing`, the copy the id map named, if any; for `doubled`, the second copy).
        public var targetMessage: String?
        public var detail: String
        /// `queued`, `repaired`, `failed: …`, `not repairable: …`; nil without `--repair`.
        public var repair: String?
        /// The outbox actions that fix it (none: not repairable, `repair` says why).
        var fix: [RelayAction] = []
        /// Why it cannot be fixed through the outbox.
        var unfixable: String?
        /// For a missing copy the id map never named: what `--repair` checks before it sends one.
        var guarded: Guard?

        enum CodingKeys: String, CodingKey {
            case kind, detail, repair
            case sourceMessage = "source_message"
            case targetMessage = "target_message"
        }
    }

    /// One source conversation and its copy on one target.
    public struct Conversation: Codable, Sendable {
        /// The route's index in the configuration (from 0).
        public var route: Int
        public var source: String
        public var target: String
        /// Source messages in the window that the route relays as messages.
        public var sourceMessages = 0
        /// Target messages read.
        public var targetMessages = 0
        /// Copies found by sender, kind, digest and time because the id map did not name them.
        public var matchedByContent = 0
        /// Source messages with an entry still pending in the target's lane, or relayed while the
        /// conversation was read (not drift).
        public var inFlight = 0
        /// Source messages the bridge had neither queued nor relayed, sent within the settle horizon (not drift).
        public var settling = 0
        public var items: [Item] = []
        /// Why this conversation could not be read (then it counts for exit status 2).
        public var error: String?
        /// The leg compared (for `--repair`).
        var pair: Verifier.Pair? = nil

        init(route: Int, source: String, target: String) {
            self.route = route
            self.source = source
            self.target = target
        }

        enum CodingKeys: String, CodingKey {
            case route, source, target, items, error, settling
            case sourceMessages = "source_messages"
            case targetMessages = "target_messages"
            case matchedByContent = "matched_by_content"
            case inFlight = "in_flight"
        }
    }

    public var startedAtMs: Int64
    public var finishedAtMs: Int64 = 0
    public var sinceMs: Int64?
    public var untilMs: Int64?
    public var conversations: [Conversation] = []
    /// History calls made, per backend.
    public var readCalls: [String: Int] = [:]
    /// Whether `--repair` ran.
    public var repaired = false

    enum CodingKeys: String, CodingKey {
        case conversations, repaired
        case startedAtMs = "started_at_ms"
        case finishedAtMs = "finished_at_ms"
        case sinceMs = "since_ms"
        case untilMs = "until_ms"
        case readCalls = "read_calls"
        case counts
        case unreadable
    }

    public init(startedAtMs: Int64, sinceMs: Int64?, untilMs: Int64?) {
        self.startedAtMs = startedAtMs
        self.sinceMs = sinceMs
        self.untilMs = untilMs
    }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        startedAtMs = try c.decode(Int64.self, forKey: .startedAtMs)
        finishedAtMs = try c.decode(Int64.self, forKey: .finishedAtMs)
        sinceMs = try c.decodeIfPresent(Int64.self, forKey: .sinceMs)
        untilMs = try c.decodeIfPresent(Int64.self, forKey: .untilMs)
        conversations = try c.decode([Conversation].self, forKey: .conversations)
        readCalls = try c.decode([String: Int].self, forKey: .readCalls)
        repaired = try c.decode(Bool.self, forKey: .repaired)
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(startedAtMs, forKey: .startedAtMs)
        try c.encode(finishedAtMs, forKey: .finishedAtMs)
        try c.encodeIfPresent(sinceMs, forKey: .sinceMs)
        try c.encodeIfPresent(untilMs, forKey: .untilMs)
        try c.encode(conversations, forKey: .conversations)
        try c.encode(readCalls, forKey: .readCalls)
        try c.encode(repaired, forKey: .repaired)
        try c.encode(Dictionary(uniqueKeysWithValues: counts.map { ($0.key.rawValue, $0.value) }), forKey: .counts)
        try c.encode(unreadable, forKey: .unreadable)
    }

    /// Drift items by kind (every kind present, 0 where none).
    public var counts: [Kind: Int] {
        var counts = Dictionary(uniqueKeysWithValues: Kind.allCases.map { ($0, 0) })
        for conversation in conversations { for item in conversation.items { counts[item.kind, default: 0] += 1 } }
        return counts
    }

    public var driftCount: Int { conversations.reduce(0) { $0 + $1.items.count } }
    /// Conversations that could not be read.
    public var unreadable: Int { conversations.filter { $0.error != nil }.count }

    /// 0 clean, 1 drift found, 2 some conversation could not be read (docs/verify.md, "Exit status").
    public var exitCode: Int32 { unreadable > 0 ? 2 : driftCount > 0 ? 1 : 0 }

    public func json() throws -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        return try encoder.encode(self)
    }

    /// The terminal table: one line per drift item, then one summary line.
    public var table: String {
        var lines: [String] = []
        let header = ["conversation", "kind", "source message", "target message", "detail"] + (repaired ? ["repair"] : [])
        var rows: [[String]] = []
        for conversation in conversations {
            let name = "\(conversation.source) → \(conversation.target)"
            if let error = conversation.error { rows.append([name, "unreadable", "", "", error] + (repaired ? [""] : [])) }
            for item in conversation.items {
                rows.append([name, item.kind.rawValue, item.sourceMessage, item.targetMessage ?? "—", item.detail]
                            + (repaired ? [item.repair ?? ""] : []))
            }
        }
        if !rows.isEmpty {
            let widths = header.indices.map { column in min(60, ([header] + rows).map { $0[column].count }.max() ?? 0) }
            func line(_ cells: [String]) -> String {
                cells.enumerated().map { column, cell in
                    let cut = cell.count > widths[column] ? String(cell.prefix(widths[column] - 1)) + "…" : cell
                    return cut.padding(toLength: widths[column], withPad: " ", startingAt: 0)
                }.joined(separator: "  ").trimmingCharacters(in: .whitespaces)
            }
            lines.append(line(header))
            lines += rows.map(line)
        }
        let kinds = counts.filter { $0.value > 0 }.sorted { $0.key.rawValue < $1.key.rawValue }.map { "\($0.value) \($0.key.rawValue)" }
        let read = conversations.reduce(0) { $0 + $1.sourceMessages }
        var summary = "verify: \(conversations.count) conversation(s), \(read) source message(s) checked; "
        summary += driftCount == 0 ? "no drift" : "\(driftCount) drift item(s): \(kinds.joined(separator: ", "))"
        if unreadable > 0 { summary += "; \(unreadable) conversation(s) could not be read" }
        let inFlight = conversations.reduce(0) { $0 + $1.inFlight }, settling = conversations.reduce(0) { $0 + $1.settling }
        if inFlight > 0 { summary += "; \(inFlight) in flight in the bridge (not judged)" }
        if settling > 0 { summary += "; \(settling) settling, sent within the settle horizon (not judged)" }
        summary += "; \(readCalls.values.reduce(0, +)) history call(s)"
        lines.append(summary)
        return lines.joined(separator: "\n")
    }
}
