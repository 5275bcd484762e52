import Foundation
import IMCore
import IMRelay

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

    /// The account part: users, groups and members (nil for a history-only run).
    public struct Account: Codable, Sendable, Equatable {
        /// Users created on the target, updated there (name, avatar or extra fields differed), left alone
        /// (already as on the source, or unknown to the source and present on the target), and written
        /// without knowing whether they existed (targets that cannot read profiles back).
        public var usersCreated = 0
        public var usersUpdated = 0
        public var usersSkipped = 0
        public var usersProvisioned = 0
        public var groupsCreated = 0
        /// Existing groups brought up to date (members added, name/avatar/announcement set).
        public var groupsUpdated = 0
        public var groupsSkipped = 0
        /// Members added to groups that already existed on the target (a new group's members are not counted).
        public var membersAdded = 0
        /// `user ID: error`, `group ID: error`.
        public var failures: [String] = []
        /// What the run could not do and did instead (a source that cannot list users, …).
        public var notes: [String] = []

        public init() {}

        enum CodingKeys: String, CodingKey {
            case failures, notes
            case usersCreated = "users_created", usersUpdated = "users_updated", usersSkipped = "users_skipped"
            case usersProvisioned = "users_provisioned", groupsCreated = "groups_created", groupsUpdated = "groups_updated"
            case groupsSkipped = "groups_skipped", membersAdded = "members_added"
        }
    }

    public var source: String
    public var target: String
    public var dryRun: Bool
    public var account: Account?
    public var conversations: [Conversation] = []

    public var total: Counts {
        var total = Counts()
        for conversation in conversations { total.add(conversation.counts) }
        return total
    }

    public init(source: String, target: String, dryRun: Bool, account: Account? = nil, conversations: [Conversation] = []) {
        self.account = account
        self.source = source
        self.target = target
        self.dryRun = dryRun
        self.conversations = conversations
    }

    enum CodingKeys: String, CodingKey {
        case source, target, conversations, total, account
        case dryRun = "dry_run"
    }

    /// The JSON carries `total` next to the conversations (read back, it is recomputed).
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(source, forKey: .source)
        try container.encode(target, forKey: .target)
        try container.encode(dryRun, forKey: .dryRun)
        try container.encodeIfPresent(account, forKey: .account)
        try container.encode(conversations, forKey: .conversations)
        try container.encode(total, forKey: .total)
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        self.init(source: try container.decode(String.self, forKey: .source), target: try container.decode(String.self, forKey: .target),
                  dryRun: try container.decode(Bool.self, forKey: .dryRun),
                  account: try container.decodeIfPresent(Account.self, forKey: .account),
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
        if let account {
            lines.append("  users: created \(account.usersCreated), updated \(account.usersUpdated), unchanged \(account.usersSkipped)"
                         + (account.usersProvisioned > 0 ? ", written unseen \(account.usersProvisioned)" : ""))
            lines.append("  groups: created \(account.groupsCreated), updated \(account.groupsUpdated), unchanged \(account.groupsSkipped); members added \(account.membersAdded)")
            for note in account.notes { lines.append("  note: \(note)") }
            for failure in account.failures { lines.append("  failed: \(failure)") }
        }
        for conversation in conversations { lines.append("  \(conversation.source) → \(conversation.target): \(describe(conversation.counts))") }
        lines.append("  total: \(describe(total))")
        return lines.joined(separator: "\n")
    }
}
