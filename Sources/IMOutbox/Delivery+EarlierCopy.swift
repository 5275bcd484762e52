import Foundation
import IMCore
import IMHTTP
import IMStore
import Synchronization

/// The earlier-copy search: before a send that may already have reached the target is tried again, the
/// copy its earlier attempt may have left is looked for (docs/limits.md).
extension Delivery {
    /// The copy an earlier attempt left on the target without an id-map row, if any: looked up by client
    /// id where the target can; else the newest message among the target's last `earlierCopyWindow` (500)
    /// that carries our client id, or (target without client ids) has the same sender, kind and digest, was
    /// stored after the attempt started (5 s skew allowed; or carries exactly the `sentAt` the send asked
    /// for) and is no other message's copy.
    ///
    /// Both read the conversation as the copy's own sender (who wrote into it, so can read it) when the
    /// target's settings name nobody else. A lookup that cannot run — the target down, a setting missing,
    /// any refusal — is never taken as "no copy" (sending again could double the message) nor as the
    /// send's permanent failure (that would lose it): it fails as retryable (`lookupFailed`), and the lane
    /// tries the whole entry again later.
    public func findEarlierCopy(of outgoing: OutgoingMessage, in conversation: ConversationRef, since attemptAt: Int64) async throws -> Message? {
        do {
            return try await searchEarlierCopy(of: outgoing, in: conversation, since: attemptAt)
        } catch {
            throw Self.lookupFailed(error)
        }
    }

    /// False when both quote a message and not the same one: a notice (`👍 +1`, `✎ …`) of one puppet about
    /// one message is not the copy of its notice about another, sent a second earlier (a reaction notice
    /// retried after an attempt of unknown outcome found the other and was never sent; seed 342,
    /// docs/reliability.md). A candidate without a quote is not told apart by it: the target may not
    /// carry the quote (RongCloud quotes only texts).
    static func quotesTheSame(_ candidate: Message, _ outgoing: OutgoingMessage) -> Bool {
        guard let wanted = outgoing.reply?.messageID, let shown = candidate.reply?.messageID else { return true }
        return wanted == shown
    }

    /// The failure of an earlier-copy lookup, as the send's failure: always retryable, keeping the
    /// vendor's `Retry-After` and the in-flight time of a timed-out request.
    public static func lookupFailed(_ error: any Error) -> IMError {
        let cause = error as? IMError
        var details = cause?.details ?? [:]
        details[lookupFailedKey] = cause?.code.rawValue ?? "error"
        details["unmapped"] = nil
        return IMError(cause?.isRetryable == true ? cause!.code : .unavailable,
                       "could not check the target for an earlier attempt's copy, so nothing was sent; tried again later: \(error)",
                       vendorCode: cause?.vendorCode, vendorMessage: cause?.vendorMessage, isRetryable: true,
                       retryAfterMs: cause?.retryAfterMs, details: details)
    }

    /// How many of the target's newest messages the earlier-copy search reads where the target has no
    /// client-id lookup. A copy behind more messages than this (a busy conversation, a long wait before
    /// the retry) is not found, and the message is sent again. RongCloud's adapter pages back from now,
    /// 100 rows a call (`RongCloudBackend.history`), so this costs it five calls, on a retry only; WuKong
    /// serves up to 10,000 in one `/channel/messagesync` call
    /// (docs/adapters/wukong.md). It was 50, and native traffic of a busy group pushed copies out of it
    /// (docs/limits.md).
    package static let earlierCopyWindow = 500

    /// `details` key of a send that failed because its earlier-copy lookup did (the lookup's error code).
    public static let lookupFailedKey = "earlier_copy_lookup_failed"

    package func searchEarlierCopy(of outgoing: OutgoingMessage, in conversation: ConversationRef, since attemptAt: Int64) async throws -> Message? {
        if let lookup = target as? any ClientIDLookup, let id = outgoing.clientMessageID {
            return try await lookup.message(withClientID: id, in: conversation, readingAs: outgoing.sender)
        }
        guard target.capabilities.support(.history) != .rejected else { return nil }
        let query = HistoryQuery(conversation: conversation, anchor: .latest, limit: Self.earlierCopyWindow)
        let page: HistoryPage
        do {
            page = try await target.history(query)
        } catch let error as IMError where error.code == .invalidArgument && !error.isRetryable {
            // The target reads this conversation as a configured user and none is set (a RongCloud group
            // without `history_viewer`): read it as the copy's sender.
            var asSender = query
            asSender.viewer = outgoing.sender
            page = try await target.history(asSender)
        }
        let targetID = target.id
        // Newest first. A copy the bridge recorded (the id map names it) is an earlier entry's of this
        // conversation's lane, which sends one entry at a time: whatever this entry's earlier attempt left
        // lies after the newest such copy in the target's order, so a candidate there is taken whatever its
        // time — the target's clock may be minutes off the bridge's (Finding 37, docs/reliability.md). That
        // copy may be any sender's: until it is met, every candidate is looked up, not only the outgoing
        // sender's (Finding 53, docs/reliability.md). One read transaction for all the lookups.
        let newestFirst = Array(page.messages.reversed())
        return try await store.reading { tx in
            var recordedSeen = false
            var afterRecorded: Message?
            for candidate in newestFirst {
                if let id = candidate.clientMessageID, let ours = outgoing.clientMessageID {
                    if id == ours { return candidate }
                    continue
                }
                let alike = candidate.sender == outgoing.sender && candidate.currentContent.kind == outgoing.content.kind
                    && candidate.currentContent.digest == outgoing.content.digest && Self.quotesTheSame(candidate, outgoing)
                // Once a recorded copy was met, only a candidate like the outgoing message can still matter:
                // the store is not asked about the others.
                if recordedSeen && !alike { continue }
                if try tx.isBridgeCreated(candidate.id, on: targetID) {
                    recordedSeen = true
                    continue
                }
                guard alike else { continue }
                // Stored after the attempt began — or at exactly the time the send asked for, on a target
                // that keeps a requested `sentAt` (the relay asks for the source's time, which may be long
                // before the attempt when intake or the lane was slow).
                let stampedAsAsked = outgoing.sentAt.map { $0 == candidate.sentAt } ?? false
                if candidate.sentAt >= attemptAt - 5_000 || stampedAsAsked { return candidate }
                if !recordedSeen, afterRecorded == nil { afterRecorded = candidate }
            }
            return recordedSeen ? afterRecorded : nil
        }
    }
}
