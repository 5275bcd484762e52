import Foundation
import IMCore

/// What a migration did, per conversation and in total (`--report FILE.json` writes it as JSON).
public struct MigrationReport: Codable, Sendable, Equatable {
    public struct Counts: Codable, Sendable, Equatable {
        /// Sent as they were.
        public var copied = 0
        /// Sent, but changed to fit the target (content kind, length, mentions …).
        public var converted = 0
        /// Sent as a fallback (a recalled message the target cannot recall becomes a notice …).
        public var fellBack = 0
        /// Not sent: reason → count (`already_copied`, `before_since`, …).
        public var skipped: [String: Int] = [:]
        /// Not sent: vendor code (or error code) → count.
        public var failed: [String: Int] = [:]
        /// Which kinds were sent, by content kind.
        public var byKind: [String: Int] = [:]

        public init() {}

        public var skippedTotal: Int { skipped.values.reduce(0, +) }
        public var failedTotal: Int { failed.values.reduce(0, +) }
        public var sentTotal: Int { copied + converted + fellBack }

        mutating func add(_ other: Counts) {
            copied += other.copied
            converted += other.converted
            fellBack += other.fellBack
            skipped.merge(other.skipped, uniquingKeysWith: +)
            failed.merge(other.failed, uniquingKeysWith: +)
            byKind.merge(other.byKind, uniquingKeysWith: +)
        }

        enum CodingKeys: String, CodingKey {
            case copied, converted, skipped, failed
            case fellBack = "fell_back"
            case byKind = "by_kind"
        }
    }

    public struct Conversation: Codable, Sendable, Equatable {
        public var source: String
        public var target: String
        public var counts = Counts()
        /// Failures with their messages: `source message id: error`.
        public var failures: [String] = []
    }

    public var source: String
    public var target: String
    public var dryRun: Bool
    public var conversations: [Conversation] = []

    public var total: Counts {
        var total = Counts()
        for conversation in conversations { total.add(conversation.counts) }
        return total
    }

    public init(source: String, target: String, dryRun: Bool, conversations: [Conversation] = []) {
        self.source = source
        self.target = target
        self.dryRun = dryRun
        self.conversations = conversations
    }

    enum CodingKeys: String, CodingKey {
        case source, target, conversations, total
        case dryRun = "dry_run"
    }

    /// The JSON carries `total` next to the conversations (read back, it is recomputed).
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(source, forKey: .source)
        try container.encode(target, forKey: .target)
        try container.encode(dryRun, forKey: .dryRun)
        try container.encode(conversations, forKey: .conversations)
        try container.encode(total, forKey: .total)
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        self.init(source: try container.decode(String.self, forKey: .source), target: try container.decode(String.self, forKey: .target),
                  dryRun: try container.decode(Bool.self, forKey: .dryRun),
                  conversations: try container.decode([Conversation].self, forKey: .conversations))
    }

    public func json() -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        return (try? encoder.encode(self)) ?? Data()
    }

    /// The human summary printed at the end of a run.
    public var summary: String {
        var lines = ["migration \(source) → \(target)\(dryRun ? " (dry run: nothing written)" : "")"]
        func describe(_ counts: Counts) -> String {
            var text = "copied \(counts.copied), converted \(counts.converted), fell back \(counts.fellBack), skipped \(counts.skippedTotal), failed \(counts.failedTotal)"
            if !counts.skipped.isEmpty { text += " | skipped: " + counts.skipped.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", ") }
            if !counts.failed.isEmpty { text += " | failed: " + counts.failed.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", ") }
            return text
        }
        for conversation in conversations { lines.append("  \(conversation.source) → \(conversation.target): \(describe(conversation.counts))") }
        lines.append("  total: \(describe(total))")
        return lines.joined(separator: "\n")
    }
}
