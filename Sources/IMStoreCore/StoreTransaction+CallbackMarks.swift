import Foundation
import IMCore

/// Callback marks (schema v9, `callback_marks`): the signatures of callbacks whose signature does not
/// cover the body, kept until their timestamp leaves the freshness window, so that every instance on one
/// store refuses a signature that comes back with another body (docs/operations.md, "Forged and replayed
/// callbacks").
extension StoreTransaction {
    /// Remembers `mark` unless (backend, key) is remembered already, and says which: `first` (now
    /// remembered), `redelivery` (remembered with the same body digest), `reused` (with another one). A
    /// remembered mark whose `expiresAt` is before `now` counts as forgotten: it is replaced.
    public func rememberCallback(_ mark: CallbackMark, at now: Int64) throws -> CallbackMark.Outcome {
        try ops.rememberCallback(mark, at: now)
    }

    /// Deletes up to `limit` marks that expired before `now`; returns how many.
    @discardableResult
    public func forgetCallbackMarks(expiredBefore now: Int64, limit: Int) throws -> Int {
        try ops.forgetCallbackMarks(expiredBefore: now, limit: limit)
    }
}
