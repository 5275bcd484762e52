import Foundation
import IMCore
import Synchronization

/// The last scheduled audit, as the status page (`audit` in `/status.json`) shows it.
public struct VerifyAuditSummary: Codable, Sendable, Equatable {
    public var ranAtMs: Int64
    public var durationMs: Int64
    public var windowMs: Int64
    public var conversations: Int
    public var sourceMessages: Int
    /// Drift items by kind (every kind, 0 where none).
    public var drift: [String: Int]
    public var unreadable: Int
    /// The first `shownItems` items, each naming both sides' message ids.
    public var items: [Item]
    public var readCalls: Int

    public struct Item: Codable, Sendable, Equatable {
        public var kind: String
        public var source: String
        public var target: String
        public var sourceMessage: String
        public var targetMessage: String?
        public var detail: String

        public init(kind: String, source: String, target: String, sourceMessage: String, targetMessage: String?, detail: String) {
            (self.kind, self.source, self.target, self.sourceMessage, self.targetMessage, self.detail) = (kind, source, target, sourceMessage, targetMessage, detail)
        }
    }

    public static let shownItems = 20

    /// A summary (`IMVerify` makes one from its report: `VerifyAuditSummary(_:windowMs:)`).
    public init(ranAtMs: Int64, durationMs: Int64, windowMs: Int64, conversations: Int, sourceMessages: Int, drift: [String: Int],
                unreadable: Int, items: [Item], readCalls: Int) {
        (self.ranAtMs, self.durationMs, self.windowMs, self.conversations, self.sourceMessages) = (ranAtMs, durationMs, windowMs, conversations, sourceMessages)
        (self.drift, self.unreadable, self.items, self.readCalls) = (drift, unreadable, items, readCalls)
    }
}

/// Where the last audit is kept for the status page (one per engine, on its `RelayMetrics`).
public final class VerifyAuditBoard: Sendable {
    private let state = Mutex<(enabled: Bool, last: VerifyAuditSummary?)>((false, nil))
    public init() {}
    public var enabled: Bool { state.withLock { $0.enabled } }
    public var last: VerifyAuditSummary? { state.withLock { $0.last } }
    package func enable() { state.withLock { $0.enabled = true } }
    package func record(_ summary: VerifyAuditSummary) { state.withLock { $0.last = summary } }
}
