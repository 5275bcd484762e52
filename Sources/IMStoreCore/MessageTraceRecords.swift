import Foundation
import IMCore

/// One attempt of an outbox entry that did not end in a recorded delivery: retried later, requeued
/// behind the message it refers to, or buried as a dead letter (docs/operations.md, "Where is my
/// message: `imbridge trace`"). A delivered entry's final attempt is its outbox row (done, `finished_at`)
/// and its id-map row: it costs no row here, so the relay's hot path writes nothing more.
package struct AttemptRecord: Sendable, Hashable {
    package enum Outcome: String, Sendable { case retry, requeued, dead }
    package var outboxID: Int64
    /// 1 for the entry's first attempt.
    package var attempt: Int
    package var at: Int64
    package var outcome: Outcome
    /// `HealthBoard.errorClass` of the failure (`rate_limited`, `unavailable`, `vendor_error` …).
    package var errorClass: String
    /// The neutral error code (`IMError.code`), and the vendor's own code when a vendor answered.
    package var errorCode: String?
    package var vendorCode: String?
    /// The error as text (at most 500 characters; secrets never reach an error's text).
    package var error: String
    /// When the next attempt was due (a retry or a requeue).
    package var retryAt: Int64?
    /// The bridge instance (`ha.instance`, the lease owner) that made the attempt.
    package var instance: String

    package init(outboxID: Int64, attempt: Int, at: Int64, outcome: Outcome, errorClass: String, errorCode: String? = nil,
                 vendorCode: String? = nil, error: String, retryAt: Int64? = nil, instance: String) {
        (self.outboxID, self.attempt, self.at, self.outcome, self.errorClass) = (outboxID, attempt, at, outcome, errorClass)
        (self.errorCode, self.vendorCode, self.error, self.retryAt, self.instance) = (errorCode, vendorCode, String(error.prefix(500)), retryAt, instance)
    }
}

/// Who took an inbound event in, kept on its ledger row (docs/operations.md, "Where is my message:
/// `imbridge trace`"): the listener whose callback carried it (its address, as the callback span's
/// `imbridge.listener`) or the way it came without a callback (`poll`, `catch-up`, `migration`, `verify`),
/// and the bridge instance that recorded it (its lease owner: `ha.instance` and a unique suffix).
public struct EventOrigin: Sendable, Hashable {
    public var listener: String
    public var instance: String
    public init(listener: String, instance: String) { (self.listener, self.instance) = (listener, instance) }

    /// An event a poller (or a stream) read: no callback, no listener.
    public static let poll = "poll"
    /// An event catch-up read from the vendor's history, or a live message it held and recorded in order.
    public static let catchUp = "catch-up"
    /// A recent message a migration copied, recorded so that live intake does not relay it again.
    public static let migration = "migration"
    /// A missing copy `imbridge verify` repaired, recorded so that the bridge does not relay it again.
    public static let verify = "verify"
}

/// A ledger row: an inbound event recorded (or a duplicate's first recording).
package struct LedgerRecord: Sendable, Hashable {
    package var backend: BackendID
    package var eventID: EventID
    package var kind: String
    package var receivedAt: Int64
    /// Nil for rows written before the store kept it (schema v11), or by a caller that did not say.
    package var origin: EventOrigin?
    package init(backend: BackendID, eventID: EventID, kind: String, receivedAt: Int64, origin: EventOrigin? = nil) {
        (self.backend, self.eventID, self.kind, self.receivedAt, self.origin) = (backend, eventID, kind, receivedAt, origin)
    }
}

/// An id-map row with its times (`MessageMapping` plus when it was written and the source's own time).
package struct MappingRecord: Sendable, Hashable {
    package var mapping: MessageMapping
    package var createdAt: Int64
    package var sourceTime: Int64?
    package init(mapping: MessageMapping, createdAt: Int64, sourceTime: Int64?) {
        (self.mapping, self.createdAt, self.sourceTime) = (mapping, createdAt, sourceTime)
    }
}

/// An outbox row in any state, with when it finished (done or dead).
package struct TracedEntry: Sendable, Hashable {
    package var entry: OutboxEntry
    package var finishedAt: Int64?
    package init(entry: OutboxEntry, finishedAt: Int64?) { (self.entry, self.finishedAt) = (entry, finishedAt) }
}

/// The operator's questions about one message: read only, not on the relay's path. The ledger and the
/// outbox have no index on event ids, so these scan them (bounded by the retention); fine for a
/// command an operator runs, not for a loop.
extension StoreTransaction {
    /// Notes a failed attempt (in the transaction that reschedules, requeues or buries the entry).
    package func recordAttempt(_ attempt: AttemptRecord) throws { try ops.recordAttempt(attempt) }

    /// Ledger rows whose event id is `key` or ends in `:key` (`msg:<id>`, `nim:msg:<id>`, `recall:<id>` …).
    package func ledgerRecords(matching key: String, limit: Int = 200) throws -> [LedgerRecord] {
        try ops.ledgerRecords(matching: key, limit: limit).filter { $0.eventID.rawValue == key || $0.eventID.rawValue.hasSuffix(":" + key) }
    }

    /// Id-map rows naming `message` on either side.
    package func mappingRecords(of message: String) throws -> [MappingRecord] { try ops.mappingRecords(of: message) }

    /// Outbox rows queued for a source event whose id is `key` or ends in `:key`, by id.
    package func tracedEntries(matching key: String, limit: Int = 200) throws -> [TracedEntry] {
        try ops.tracedEntries(matching: key, limit: limit).filter {
            $0.entry.sourceEventID.rawValue == key || $0.entry.sourceEventID.rawValue.hasSuffix(":" + key)
        }
    }

    /// Outbox rows created between `from` and `to` (ms), oldest first, at most `limit`.
    package func tracedEntries(createdFrom from: Int64, to: Int64, limit: Int) throws -> [TracedEntry] {
        try ops.tracedEntries(createdFrom: from, to: to, limit: limit)
    }

    /// Id-map rows whose `to_conversation` is `conversation` (on `backend`, when given) with a time
    /// (the source's own, else when the row was written) between `from` and `to`.
    package func mappingRecords(in conversation: ConversationRef, on backend: BackendID?, from: Int64, to: Int64,
                                limit: Int) throws -> [MappingRecord] {
        try ops.mappingRecords(in: conversation, on: backend, from: from, to: to, limit: limit)
    }

    /// The failed attempts of these outbox entries, in order.
    package func attempts(of outboxIDs: [Int64]) throws -> [AttemptRecord] {
        outboxIDs.isEmpty ? [] : try ops.attempts(of: outboxIDs).sorted { ($0.outboxID, $0.attempt, $0.at) < ($1.outboxID, $1.attempt, $1.at) }
    }

    /// Inbound dead letters kept under `key` (the vendor's message id).
    package func inboundDeadLetters(key: String) throws -> [InboundDeadLetter] { try ops.inboundDeadLetters(key: key) }
}

/// `LIKE` pattern for "ends with `:key`", with `\` as the escape character.
package func endsWithColonPattern(_ key: String) -> String {
    var escaped = ""
    for character in key {
        if character == "%" || character == "_" || character == "\\" { escaped.append("\\") }
        escaped.append(character)
    }
    return "%:" + escaped
}
