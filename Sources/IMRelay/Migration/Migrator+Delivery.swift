import Foundation
import IMCore

/// Writing one copy to the target: user provisioning, pacing, retries, and finding the copy an earlier
/// attempt left (so a message is never written twice).
extension Migrator {
    /// Sends once: when an earlier attempt (at `earlierAttemptAt`) may have got through, finds it on the
    /// target first — by client id where the target can look one up, else among its newest messages.
    func deliver(_ outgoing: OutgoingMessage, to conversation: ConversationRef, earlierAttemptAt: Int64?) async throws -> Message {
        let sender = outgoing.sender
        let startedAt = earlierAttemptAt ?? clock.nowMs()
        if let earlierAttemptAt, let existing = try await findEarlierCopy(of: outgoing, in: conversation, since: earlierAttemptAt) {
            return existing
        }
        if !ensuredUsers.contains(sender), let provisioning = target as? any UserProvisioning,
           target.capabilities.support(.userProvisioning).isNative {
            try await onTarget { try await provisioning.ensureUser(UserProfile(id: sender, name: sender.rawValue)) }
            ensuredUsers.insert(sender)
        }
        // A retryable failure may still have committed on the vendor's side (a timeout, a reset after the
        // accept): look for that copy before each retry, so a retry never writes a second one.
        var attempt = 0
        while true {
            if attempt > 0, let existing = try await findEarlierCopy(of: outgoing, in: conversation, since: startedAt) {
                return existing
            }
            do {
                await limiter?.acquire()
                return try await target.send(outgoing)
            } catch let error as IMError where error.isRetryable && attempt < 50 {
                let delay = retry.delayMs(attempt: attempt, retryAfterMs: error.retryAfterMs)
                attempt += 1
                try await Task.sleep(nanoseconds: UInt64(delay) * 1_000_000)
            }
        }
    }

    /// The copy an earlier attempt left on the target without an id-map row, if any: looked up by client id
    /// where the target can; else the newest message among the target's last 50 that carries our client
    /// id, or (target without client ids) has the same sender, kind and digest, was stored after the attempt
    /// started (5 s skew allowed) and is no other message's copy.
    func findEarlierCopy(of outgoing: OutgoingMessage, in conversation: ConversationRef, since attemptAt: Int64) async throws -> Message? {
        if let lookup = target as? any ClientIDLookup, let id = outgoing.clientMessageID {
            return try await onTarget { try await lookup.message(withClientID: id, in: conversation) }
        }
        let page = try await onTarget {
            try await self.target.history(HistoryQuery(conversation: conversation, anchor: .latest, limit: 50))
        }
        let targetID = target.id
        for candidate in page.messages.reversed() {
            if let id = candidate.clientMessageID, let ours = outgoing.clientMessageID {
                if id == ours { return candidate }
                continue
            }
            guard candidate.sender == outgoing.sender, candidate.sentAt >= attemptAt - 5_000,
                  candidate.currentContent.kind == outgoing.content.kind, candidate.currentContent.digest == outgoing.content.digest,
                  try !store.read({ try $0.isBridgeCreated(candidate.id, on: targetID) }) else { continue }
            return candidate
        }
        return nil
    }

    /// A call to the target other than a send (recall, user, lookup), paced like the sends: some vendors'
    /// limits count every API call (JMessage's 600/min).
    func onTarget<T: Sendable>(_ body: @Sendable () async throws -> T) async throws -> T {
        let limiter = self.limiter
        return try await withRetry {
            await limiter?.acquire()
            return try await body()
        }
    }

    func withRetry<T: Sendable>(_ body: @Sendable () async throws -> T) async throws -> T {
        var attempt = 0
        while true {
            do {
                return try await body()
            } catch let error as IMError where error.isRetryable && attempt < 50 {
                let delay = retry.delayMs(attempt: attempt, retryAfterMs: error.retryAfterMs)
                attempt += 1
                try await Task.sleep(nanoseconds: UInt64(delay) * 1_000_000)
            }
        }
    }
}
