import Foundation
import IMCore

/// Writing one copy to the target through the shared `Delivery`, paced to the target's rate and
/// retried in place (a migration has no lanes to reschedule).
extension Migrator {
    /// Sends once: when an earlier attempt (at `earlierAttemptAt`) may have got through, or a retryable
    /// failure may have committed on the vendor's side (a timeout, a reset after the accept), the copy it
    /// left is found before anything is written again.
    func deliver(_ outgoing: OutgoingMessage, to conversation: ConversationRef, earlierAttemptAt: Int64?,
                 media: Route.Media) async throws -> Message {
        let startedAt = earlierAttemptAt ?? clock.nowMs()
        let (delivery, pacing, source) = (self.delivery, self.pacing, self.source)
        var attempt = 0
        while true {
            do {
                await pacing.send(in: conversation.kind)
                return try await delivery.send(outgoing, in: conversation, earlierAttemptAt: attempt > 0 ? startedAt : earlierAttemptAt,
                                               media: media, source: source)
            } catch {
                try await pause(after: error, attempt: &attempt)
            }
        }
    }

    /// A call to the target other than a send (recall, lookup, profiles, groups), paced by the target's
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
