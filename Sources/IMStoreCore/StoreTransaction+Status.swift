import Foundation
import IMCore

/// What the status page and `/healthz` read: lane depths and ages, the newest dead letters.
extension StoreTransaction {
    /// Pending entries per lane.
    public func laneDepths() throws -> [String: Int] { try ops.laneDepths() }

    /// The `created_at` of the oldest pending outbox entry for each target backend that has any
    /// (`/healthz` shows its age).
    public func oldestPendingByTarget() throws -> [BackendID: Int64] {
        Dictionary(uniqueKeysWithValues: try ops.oldestPendingByTarget().map { (BackendID($0.key), $0.value) })
    }

    /// Up to `limit` lanes with pending work, the one whose oldest pending entry is oldest first (then
    /// the deeper one): the lanes an operator looks at first. Cost: one grouped scan of the pending entries.
    public func laneSummaries(limit: Int) throws -> [LaneSummary] { try ops.laneSummaries(limit: max(0, limit)) }

    /// The `limit` newest outbound dead letters, newest first (`deadLetters` lists oldest first).
    public func recentDeadLetters(limit: Int) throws -> [OutboxEntry] { try ops.recentDeadLetters(limit: max(0, limit)) }

    /// The `limit` newest inbound dead letters, newest first.
    public func recentInboundDeadLetters(limit: Int) throws -> [InboundDeadLetter] { try ops.recentInboundDeadLetters(limit: max(0, limit)) }
}
