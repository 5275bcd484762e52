import Foundation
import IMCore
import IMRelay

/// The calls a migration makes itself: reads of the source (profiles, groups, history pages), and a dry
/// run's reads of the target (`onTarget`, paced by the target's global limits), retried in place with the
/// relay's failure classes. Every write to the target goes through the outbox (`RelayEngine.queueMigration`,
/// `queueAccount`).
extension Migrator {
    /// An account call to the target (profiles, groups, lookups), paced by the target's
    /// global limits: some vendors' limits count every API call (JMessage's 600/min).
    func onTarget<T: Sendable>(_ body: @Sendable () async throws -> T) async throws -> T {
        let pacing = delivery.migrationPacing
        return try await withRetry {
            await pacing?.call()
            return try await body()
        }
    }

    func withRetry<T: Sendable>(_ body: @Sendable () async throws -> T) async throws -> T {
        var attempt = 0
        while true {
            do {
                return try await body()
            } catch {
                try await pause(after: error, attempt: &attempt)
            }
        }
    }

    /// Waits out a retryable failure (at most 50 in a row), or rethrows one that is not.
    func pause(after error: any Error, attempt: inout Int) async throws {
        guard attempt < 50, case .retry(let delay) = delivery.classify(error, attempt: attempt) else { throw error }
        attempt += 1
        try await Task.sleep(nanoseconds: UInt64(delay) * 1_000_000)
    }
}
