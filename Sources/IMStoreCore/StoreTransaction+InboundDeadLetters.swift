import Foundation
import IMCore

/// Inbound dead letters: poison messages kept with their raw bytes until an operator retries them.
extension StoreTransaction {
    /// Keeps a poison message; false when (backend, key) is kept already (a redelivery: nothing changes).
    @discardableResult
    public func keepInbound(backend: BackendID, key: String, format: String, payload: Data, reason: String, at now: Int64) throws -> Bool {
        try ops.keepInbound(backend: backend, key: key, format: format, payload: payload, reason: reason, at: now)
    }

    /// Inbound dead letters, oldest first (all, or the given ids).
    public func inboundDeadLetters(ids: [Int64]? = nil, limit: Int = 1000) throws -> [InboundDeadLetter] {
        try ops.inboundDeadLetters(ids: ids, limit: limit)
    }

    /// Forgets an inbound dead letter (its retry converted and was taken in the same transaction).
    public func removeInboundDeadLetter(_ id: Int64) throws { try ops.removeInboundDeadLetter(id) }

    /// Notes a retry that still did not convert: the new reason, one more retry.
    public func failedInboundRetry(_ id: Int64, reason: String) throws { try ops.failedInboundRetry(id, reason: reason) }

    public func inboundDeadLetterCount() throws -> Int { try ops.inboundDeadLetterCount() }
}
