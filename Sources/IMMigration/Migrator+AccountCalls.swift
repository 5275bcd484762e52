import Foundation
import IMCore
import IMRelay

/// The account calls (profiles, groups): paced by the target's global limits and retried in place with
/// the relay's failure classes. Messages do not come here: they go through the outbox
/// (`RelayEngine.queueMigration`).
extension Migrator {
    /// An account call to the target (profiles, groups, lookups), paced by the target's
    /// global limits: some vendors' limits count every API call (JMessage's 600/min).
    func onTarget<T: Sendable>(_ body: @Sendable () async throws -> T) async throws -> T {
        let pacing = self.pacing
        return try await withRetry {
            await pacing.call()
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
