import Foundation
import IMCore
import IMMapping

/// `catch_up:` in `bridge.yaml` (docs/architecture.md, "Catch-up"): how far back the bridge reads a
/// source's history after downtime or a gap, and how often it looks on its own.
public struct CatchUpSettings: Sendable, Equatable {
    /// Off: no history is read; what a vendor gives up on is lost.
    public var enabled: Bool = true
    /// Messages older than this are not recovered (`max_age`, default 24 h).
    public var maxAgeMs: Int64 = 24 * 3_600_000
    /// How many of the newest messages are read from a conversation that has no checkpoint yet (seen for
    /// the first time: `max_messages_per_conversation`, default 1000). A conversation with a checkpoint is
    /// read from it to the end, however many messages that is (only `max_age` bounds it): skipping some
    /// would lose them, or relay them later out of order.
    public var maxMessagesPerConversation: Int = 1000
    /// How often every covered conversation is looked at without a sign of a gap (`interval`, default
    /// 5 min). This is also how long a message lost from a time-positioned vendor (RongCloud, NIM) can
    /// take to arrive.
    public var intervalMs: Int64 = 300_000

    public init(enabled: Bool = true, maxAgeMs: Int64 = 24 * 3_600_000, maxMessagesPerConversation: Int = 1000, intervalMs: Int64 = 300_000) {
        self.enabled = enabled
        self.maxAgeMs = maxAgeMs
        self.maxMessagesPerConversation = maxMessagesPerConversation
        self.intervalMs = intervalMs
    }

    public static let keys = ["enabled", "max_age", "max_messages_per_conversation", "interval"]

    /// Parses `catch_up:`; durations are whole numbers with a unit (`500ms`, `30s`, `5m`, `24h`, `7d`) or
    /// bare seconds. `retentionHours` (0: for ever) caps `max_age`: an older message may have left the
    /// ledger, and reading it again would relay it twice.
    static func parse(_ node: ConfigNode, retentionHours: Int, problems: inout ConfigProblems) -> CatchUpSettings {
        var settings = CatchUpSettings()
        guard node.isPresent else { return settings }
        guard problems.attempt({ try node.expectMapping() }) != nil else { return settings }
        problems.attempt { try node.allowOnly(Set(keys)) }
        if node["enabled"].isPresent, let enabled = problems.attempt({ try node["enabled"].bool() }) { settings.enabled = enabled }
        problems.attempt {
            guard let text = try node["max_age"].optionalString() else { return }
            let ms = try duration(text, node["max_age"])
            guard ms > 0 else { throw node["max_age"].error("expected a duration > 0, got \(node["max_age"].shown(text))") }
            if retentionHours > 0, ms > Int64(retentionHours) * 3_600_000 {
                throw node["max_age"].error("must not exceed retention_hours (\(retentionHours) h): older messages may have left the ledger and would be relayed twice")
            }
            settings.maxAgeMs = ms
        }
        problems.attempt {
            guard let count = try node["max_messages_per_conversation"].optionalInt() else { return }
            guard count >= 1 else { throw node["max_messages_per_conversation"].error("expected a whole number ≥ 1, got \(node["max_messages_per_conversation"].shown(count))") }
            settings.maxMessagesPerConversation = count
        }
        problems.attempt {
            guard let text = try node["interval"].optionalString() else { return }
            let ms = try duration(text, node["interval"])
            guard ms >= 1000 else { throw node["interval"].error("expected a duration of at least 1s, got \(node["interval"].shown(text))") }
            settings.intervalMs = ms
        }
        return settings
    }

    /// `500ms`, `30s`, `5m`, `24h`, `7d`, or bare seconds, in milliseconds.
    static func duration(_ text: String, _ node: ConfigNode) throws -> Int64 {
        let trimmed = text.trimmingCharacters(in: .whitespaces).lowercased()
        let units: [(String, Int64)] = [("ms", 1), ("s", 1000), ("m", 60_000), ("h", 3_600_000), ("d", 86_400_000)]
        for (suffix, factor) in units where trimmed.hasSuffix(suffix) {
            if let value = Int64(trimmed.dropLast(suffix.count)), value >= 0 { return value * factor }
        }
        if let seconds = Int64(trimmed), seconds >= 0 { return seconds * 1000 }
        throw node.error("expected a duration such as 30s, 5m or 24h, got \(node.shown(text))")
    }
}
