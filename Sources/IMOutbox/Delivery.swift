import Foundation
import IMCore
import IMHTTP
import IMStore
import Synchronization

/// Writing to one target backend: the single path the relay's lanes and migration share, for every
/// action kind — a send (below) and the changes to a copy already there (`edit`, `recall`,
/// `updateExpansion`, `setReaction`, `markRead`) — with one failure classification (`classify`).
///
/// - **Provisioning**: a sender is created on a target that needs users to exist (`UserProvisioning`),
///   once per `Delivery`, with the profile the bridge last wrote for it (`ProfileSync`) where there is one.
/// - **Profiles**: `syncProfile` brings a puppet's name and avatar up to its source user's. Every write
///   of one user (provisioning, profile) runs one at a time (`userWrites`), so a provisioning call that
///   resets the name (RongCloud's token call) cannot land after the profile write.
/// - **Media**: with `media: rehost`, attachments are fetched from the source and uploaded to the
///   target first (`MediaRehoster`).
/// - **Earlier copies**: when an earlier attempt of the same message may have reached the target (a
///   retry, a crash between the vendor's accept and our commit), `send` first looks for that copy —
///   by client id where the target can look one up (`ClientIDLookup`), else among the target's newest
///   messages — and returns it instead of writing a second one.
/// - **Failures** are classified once, in `classify`: retry later (with the backoff, or the vendor's
///   `Retry-After`, and after a timed-out request at least as long as it was in flight), wait for a
///   message not relayed yet, or permanent.
public final class Delivery: Sendable {
    public let target: any IMBackend
    package let store: BridgeStore
    public let retry: RetryPolicy
    package let provisioned = Mutex<Set<UserID>>([])
    package let rehoster = MediaRehoster()
    package let userWrites = KeyedLock<UserID>()
    /// The target's documented rate, applied to the entries a migration queued (`OutboxPayload.migration`).
    package let migrationPacing: MigrationPacing?

    public init(target: any IMBackend, store: BridgeStore, retry: RetryPolicy) {
        self.target = target
        self.store = store
        self.retry = retry
        self.migrationPacing = nil
    }

    package init(target: any IMBackend, store: BridgeStore, retry: RetryPolicy, migrationPacing: MigrationPacing?) {
        self.target = target
        self.store = store
        self.retry = retry
        self.migrationPacing = migrationPacing
    }

    /// What to do about a failure.
    public enum Failure: Sendable, Equatable {
        /// Try again after this pause (rate limit, outage, timeout).
        case retry(afterMs: Int64)
        /// The message this change refers to has no counterpart on the target yet.
        case waitForMessage
        /// It will never work (a refusal, a missing feature): dead letter / counted as failed.
        case permanent
    }

    /// The one classification of failures for relay and migration; `attempt` counts failures so far.
    public func classify(_ error: any Error, attempt: Int) -> Failure {
        guard let error = error as? IMError else { return .permanent }
        if error.details["unmapped"] != nil { return .waitForMessage }
        guard error.isRetryable else { return .permanent }
        let delay = retry.delayMs(attempt: attempt, retryAfterMs: error.retryAfterMs)
        // A request abandoned after it went out may still be carried out by a slow server. The next
        // attempt first looks for its copy; waiting at least as long as the request was in flight makes
        // that lookup happen twice the timeout after the send, so it sees the copy of any send the server
        // carries out within that time instead of writing a second one.
        return .retry(afterMs: max(delay, error.abandonedAfterMs ?? 0))
    }

    /// Sends `outgoing` to `conversation` on the target. `earlierAttemptAt`: when an earlier attempt may
    /// have got through (nil on a first attempt), the copy it left is returned instead of a new send.
    /// `media: .rehost` moves the attachments from `source` to the target first. `beforeWrite` runs right
    /// before the message is written (the relay's lease check); it throws to write nothing.
    public func send(_ outgoing: OutgoingMessage, in conversation: ConversationRef, earlierAttemptAt: Int64?,
                     media: Route.Media = .link, source: (any IMBackend)? = nil,
                     beforeWrite: @escaping @Sendable () throws -> Void = {}) async throws -> Message {
        if let earlierAttemptAt, let existing = try await findEarlierCopy(of: outgoing, in: conversation, since: earlierAttemptAt) {
            // The earlier attempt may have ended between the message and its expansion (`ExpansionEnabling`).
            if let initial = outgoing.expansion, let enabling = target as? any ExpansionEnabling {
                try await enabling.enableExpansion(of: existing.id, in: conversation, by: outgoing.sender, initial: initial)
            }
            return existing
        }
        var outgoing = outgoing
        if media == .rehost, !outgoing.content.attachments.isEmpty {
            outgoing.content = try await rehoster.rehost(outgoing.content, from: source, to: target)
        }
        try await provision(outgoing.sender)
        try beforeWrite()
        // Asked again by the HTTP client right before each request's body is written (`WriteGate`). A send
        // of several requests refused after the first went out has left its message on the target.
        let gate = WriteGate.Check(beforeWrite)
        do {
            return try await WriteGate.$check.withValue(gate) { try await target.send(outgoing) }
        } catch where gate.passes > 0 && !(error is IMError) {
            throw WriteGate.RefusedAfterWrite(refusal: error, passes: gate.passes)
        }
    }

    /// Every copy of `outgoing` on the target: all the messages carrying its client id where the target
    /// looks them up, else the late copies `searchLateCopies` finds after `recorded`. A late attempt's
    /// retraction asks this — the copy the id map names and the late one carry the same client id, and a
    /// lookup that returns one of them may return the recorded one. Fails as `findEarlierCopy` does
    /// (`lookupFailed`).
    public func findCopies(of outgoing: OutgoingMessage, in conversation: ConversationRef, since attemptAt: Int64,
                           after recorded: MessageID) async throws -> [Message] {
        do {
            if let lookup = target as? any ClientIDLookup, let id = outgoing.clientMessageID {
                return try await lookup.messages(withClientID: id, in: conversation, readingAs: outgoing.sender)
            }
            return try await searchLateCopies(of: outgoing, in: conversation, since: attemptAt, after: recorded)
        } catch {
            throw Self.lookupFailed(error)
        }
    }

    /// The expansion carriers sent with `clientID` (one `expansion` entry's), oldest first, read as `sender`;
    /// none on a target without a client-id lookup. Fails as `findEarlierCopy` does (`lookupFailed`).
    public func findCarriers(withClientID clientID: ClientMessageID, in conversation: ConversationRef,
                             sender: UserID) async throws -> [Message] {
        guard let lookup = target as? any ClientIDLookup else { return [] }
        do {
            return try await lookup.messages(withClientID: clientID, in: conversation, readingAs: sender)
        } catch {
            throw Self.lookupFailed(error)
        }
    }

    /// On a target with no client-id lookup (RongCloud), the copies of `outgoing` a late attempt left: the
    /// messages of its sender with its content that the id map names as no copy, stored after `recorded`
    /// (the copy the lane's takeover made, which the late attempt's request reached the target behind) —
    /// whatever their time, since the target's clock may be minutes off the bridge's — or, with `recorded`
    /// not among the newest 200, stored after the attempt began. By the time the retraction runs, the lane
    /// has recorded later entries' copies after the late one: the earlier-copy search's rule (a candidate
    /// after the newest recorded copy) does not hold here (seed 186, docs/reliability.md).
    package func searchLateCopies(of outgoing: OutgoingMessage, in conversation: ConversationRef, since attemptAt: Int64,
                                  after recorded: MessageID) async throws -> [Message] {
        guard target.capabilities.support(.history) != .rejected else { return [] }
        var query = HistoryQuery(conversation: conversation, anchor: .latest, limit: 200)
        let page: HistoryPage
        do {
            page = try await target.history(query)
        } catch let error as IMError where error.code == .invalidArgument && !error.isRetryable {
            query.viewer = outgoing.sender
            page = try await target.history(query)
        }
        let targetID = target.id
        let reachesRecorded = page.messages.contains { $0.id == recorded }
        var late: [Message] = []
        for candidate in page.messages.reversed() {
            if candidate.id == recorded { break }
            guard candidate.sender == outgoing.sender, candidate.clientMessageID == nil || candidate.clientMessageID == outgoing.clientMessageID,
                  candidate.currentContent.kind == outgoing.content.kind, candidate.currentContent.digest == outgoing.content.digest,
                  Self.quotesTheSame(candidate, outgoing)
            else { continue }
            if try await store.reading({ [id = candidate.id] in try $0.isBridgeCreated(id, on: targetID) }) { continue }
            if reachesRecorded || candidate.sentAt >= attemptAt - 5_000 { late.append(candidate) }
        }
        return late
    }

    /// Creates `user` on a target that needs users to exist, once: with the profile the bridge last wrote
    /// for it (`ProfileCheckpoint.name`), else with its id as its name.
    public func provision(_ user: UserID) async throws {
        guard let provisioning = target as? any UserProvisioning, target.capabilities.support(.userProvisioning).isNative,
              !isProvisioned(user) else { return }
        try await userWrites.run(user) {
            guard !isProvisioned(user) else { return }
            let name = ProfileCheckpoint.name(target: target.id, puppet: user)
            let written = try await store.reading { try $0.checkpoint(name) }.flatMap { ProfileCheckpoint.decode($0, id: user) }
            try await provisioning.ensureUser(written ?? UserProfile(id: user, name: user.rawValue))
            markProvisioned(user)
        }
    }

    package func isProvisioned(_ user: UserID) -> Bool { provisioned.withLock { $0.contains(user) } }

    /// Brings `wanted.id` on the target up to `wanted`'s name and avatar (a nil one is left as it is):
    /// read first where the target reads profiles, written only when they differ (or the target cannot
    /// say). True when it wrote. `beforeWrite` runs right before the write (the relay's lease check).
    public func syncProfile(_ wanted: UserProfile, beforeWrite: @Sendable () throws -> Void = {}) async throws -> Bool {
        _ = try capability((any UserDirectory).self, .userProvisioning)
        return try await bringUser(wanted, known: true, beforeWrite: beforeWrite) != .userUnchanged
    }

    /// Records a user already written to the target with a full profile (a migration's user phase), so
    /// that `provision` does not write it again as a bare id (RongCloud's token call would reset the name).
    public func markProvisioned(_ user: UserID) {
        provisioned.withLock { _ = $0.insert(user) }
    }
}

/// The changes to a copy already on the target (the message id is the target's, from the id map).
extension Delivery {
    public func edit(_ message: MessageID, in conversation: ConversationRef, by user: UserID, content: MessageContent) async throws {
        try await capability((any Editing).self, .edit).edit(message, in: conversation, by: user, content: content)
    }

    /// A copy the target already shows recalled counts as recalled.
    public func recall(_ message: MessageID, in conversation: ConversationRef, by user: UserID) async throws {
        do {
            try await capability((any Recalling).self, .recall).recall(message, in: conversation, by: user)
        } catch let error as IMError where error.code == .alreadyRecalled {
            return
        }
    }

    /// Deletes the copy for everyone (`forUser` nil) or from `forUser`'s view (`Deleting`).
    public func delete(_ message: MessageID, in conversation: ConversationRef, by user: UserID, forUser: UserID?) async throws {
        try await capability((any Deleting).self, .recall).delete(message, in: conversation, by: user, forUser: forUser)
    }

    /// Applies `delta` to the copy: natively where the target keeps expansions (a write sets values, so
    /// writing them again changes nothing), else as the target's expansion carrier message (NIM's
    /// `imbridge.expansion`, `ExpansionChangeSending`; docs/expansions.md). A carrier is a message: sent
    /// with `clientID`, and when an earlier attempt may have got through (`earlierAttemptAt`), looked up by
    /// it first (`ClientIDLookup`) and not sent again if there — a lookup that cannot run fails retryable,
    /// as a send's does (`lookupFailed`). Returns that earlier carrier when it was found (nothing sent):
    /// what it carries is the earlier attempt's change, which may differ from `delta`.
    @discardableResult
    public func updateExpansion(of message: MessageID, in conversation: ConversationRef, by user: UserID, _ delta: ExpansionDelta,
                                clientID: ClientMessageID? = nil, earlierAttemptAt: Int64? = nil) async throws -> Message? {
        try await provision(user)
        if target.capabilities.support(.expansion) == .fallback, let carrier = target as? any ExpansionChangeSending {
            if earlierAttemptAt != nil, let clientID, let lookup = target as? any ClientIDLookup {
                let earlier: Message?
                do {
                    earlier = try await lookup.message(withClientID: clientID, in: conversation, readingAs: user)
                } catch {
                    throw Self.lookupFailed(error)
                }
                if let earlier { return earlier }
            }
            _ = try await carrier.sendExpansionChange(delta, of: message, in: conversation, by: user, clientID: clientID)
            return nil
        }
        let updater = try capability((any ExpansionUpdating).self, .expansion)
        for change in delta.asChanges {
            _ = try await updater.updateExpansion(of: message, in: conversation, by: user, change)
        }
        return nil
    }

    /// Brings `user`'s `emoji` on the copy to `added` (a toggle only when it is not so already, so a
    /// retried change does not undo itself).
    public func setReaction(_ emoji: String, added: Bool, on message: MessageID, in conversation: ConversationRef, by user: UserID) async throws {
        let reacting = try capability((any Reacting).self, .reactions)
        let present = try await reacting.reactions(on: message, in: conversation).contains { $0.user == user && $0.emoji == emoji }
        if present != added { _ = try await reacting.toggleReaction(emoji, on: message, in: conversation, by: user) }
    }

    public func markRead(_ conversation: ConversationRef, by user: UserID, upTo message: MessageID) async throws {
        try await capability((any ReadReceipting).self, .readReceipts).markRead(conversation, by: user, upTo: message)
    }

    /// The target as the protocol of `feature`, or `unsupported` (permanent).
    package func capability<P>(_ type: P.Type, _ feature: Feature) throws -> P {
        guard let typed = target as? P else {
            throw IMError(.unsupported, "\(target.id) does not offer \(feature.rawValue)", isRetryable: false)
        }
        return typed
    }
}

extension UserProfile {
    /// Name, avatar, or an extra field both sides have, differ (a nil or missing one on `self` is not
    /// asked for). The one comparison of migration and live relay.
    public func differs(from existing: UserProfile) -> Bool {
        if let name, name != existing.name { return true }
        if let avatar, avatar != existing.avatar { return true }
        return extra.contains { key, value in existing.extra[key].map { $0 != value } ?? false }
    }
}

/// One holder at a time per key, waiters served in arrival order (the writes of one user on a target).
package final class KeyedLock<Key: Hashable & Sendable>: Sendable {
    private let waiting = Mutex<[Key: [CheckedContinuation<Void, Never>]]>([:])

    package func run<T>(_ key: Key, _ body: () async throws -> T) async rethrows -> T {
        await acquire(key)
        defer { release(key) }
        return try await body()
    }

    private func acquire(_ key: Key) async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let now = waiting.withLock { table -> Bool in
                guard table[key] != nil else {
                    table[key] = []
                    return true
                }
                table[key]?.append(continuation)
                return false
            }
            if now { continuation.resume() }
        }
    }

    private func release(_ key: Key) {
        let next = waiting.withLock { table -> CheckedContinuation<Void, Never>? in
            guard var queue = table[key], !queue.isEmpty else {
                table[key] = nil
                return nil
            }
            let first = queue.removeFirst()
            table[key] = queue
            return first
        }
        next?.resume()
    }
}
