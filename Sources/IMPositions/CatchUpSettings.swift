import Foundation
import IMCore
import IMConfig

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
    /// How far back a source whose history shows messages in their current state (RongCloud, NIM:
    /// `ChangeWindowSource`) is re-read for changes to old messages — recalls, deletions, expansions —
    /// on every catch-up (`change_window`, default 6 h, at most `max_age`: a change found again must still
    /// meet its ledger row). Changes to older messages made while the bridge was down are not found there.
    public var changeWindowMs: Int64 = 6 * 3_600_000

    public init(enabled: Bool = true, maxAgeMs: Int64 = 24 * 3_600_000, maxMessagesPerConversation: Int = 1000, intervalMs: Int64 = 300_000,
                changeWindowMs: Int64 = 6 * 3_600_000) {
        self.enabled = enabled
        self.maxAgeMs = maxAgeMs
        self.maxMessagesPerConversation = maxMessagesPerConversation
        self.intervalMs = intervalMs
        self.changeWindowMs = min(changeWindowMs, maxAgeMs)
    }

    /// Decodes `catch_up:`; `max_age` and `interval` are durations (`24h`, `5m`; a bare number is still
    /// read as seconds, with a warning). `retention` (0: for ever) caps `max_age`: an older message may
    /// have left the ledger, and reading it again would relay it twice.
    package static func decode(_ section: ConfigSection, retention: ConfigDuration) -> CatchUpSettings {
        var settings = CatchUpSettings()
        if let enabled = section.read("enabled", { node -> Bool? in try node.isPresent ? node.bool() : nil }) { settings.enabled = enabled }
        if let age = section.duration("max_age", range: .positive, bare: .seconds) {
            if retention != .zero, age.value > retention {
                section.add(age.node.error("must not exceed retention (\(retention)): older messages may have left the ledger and would be relayed twice"))
            } else {
                settings.maxAgeMs = age.value.milliseconds
            }
        }
        if let count = section.read("max_messages_per_conversation", { node -> Int? in
            guard let count = try node.optionalInt() else { return nil }
            guard count >= 1 else { throw node.error("expected a whole number ≥ 1, got \(node.shown(count))") }
            return count
        }) { settings.maxMessagesPerConversation = count }
        if let interval = section.duration("interval", range: DurationRange(minimum: .seconds(1)), bare: .seconds) {
            settings.intervalMs = interval.value.milliseconds
        }
        if let window = section.duration("change_window", range: .positive, bare: .seconds) {
            if window.value.milliseconds > settings.maxAgeMs {
                section.add(window.node.error("must not exceed max_age (\(ConfigDuration.milliseconds(settings.maxAgeMs))): a change found again to an older message may have left the ledger and would be relayed twice"))
            } else {
                settings.changeWindowMs = window.value.milliseconds
            }
        } else {
            settings.changeWindowMs = min(settings.changeWindowMs, settings.maxAgeMs)
        }
        return settings
    }
}
