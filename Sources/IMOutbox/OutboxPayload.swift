import Foundation
import IMCore
import Synchronization

/// What an outbox row carries: the action, the route it came from (for its policies) and when the
/// source event happened (for the latency histogram).
package struct OutboxPayload: Codable, Sendable {
    package var action: RelayAction
    package var route: Route
    package var eventTimeMs: Int64
    package var sourceConversation: ConversationRef?
    /// How often this action was put back at the end of its lane because the message it refers to was
    /// not relayed yet (vendors may deliver a change before the message itself).
    package var requeues: Int?
    /// Set on the entries `imbridge migrate` queues (docs/migration.md): the executor paces them to the
    /// target's documented rate and does not send a message whose copy the id map already names.
    package var migration: MigrationMark?
    /// The sender of the source message a `send` copies, set (with `eventTimeMs` then the message's own
    /// time) when intake or a migration queued it: both are kept with the copy's id-map row, for catch-up
    /// to find the message gone from the source's history (`StoreTransaction.relayedMessages`).
    package var sourceSender: UserID?
    /// Set on the `send` of a copy `imbridge verify --repair` found missing and the id map never named
    /// (docs/verify.md, "Beside a running bridge"): the executor does not send it when the id map names a
    /// copy in its conversation by then — the bridge copied the message after verify's check — and notes
    /// the entry under `skippedFirstCopyPrefix` for the repair's report.
    package var firstCopyOnly: Bool?
    /// The checkpoint, followed by the entry's id, that notes a `firstCopyOnly` send the executor skipped.
    package static let skippedFirstCopyPrefix = "verify/skipped/"

    package init(action: RelayAction, route: Route, eventTimeMs: Int64, sourceConversation: ConversationRef? = nil,
                 migration: MigrationMark? = nil) {
        self.action = action
        self.route = route
        self.eventTimeMs = eventTimeMs
        self.sourceConversation = sourceConversation
        self.migration = migration
    }

    /// The row's JSON, written by `PayloadJSON` without `Codable`: the object `JSONEncoder` writes for the
    /// payload (the same members and values, keys sorted), which decodes as one (docs/performance.md,
    /// "The outbox payload without Codable").
    package func encoded() throws -> Data {
        var members = [String: JSONValue].withCapacity(6)
        members["action"] = try PayloadJSON.write(action)
        members["route"] = try PayloadJSON.write(route)
        members["eventTimeMs"] = .int(eventTimeMs)
        if let sourceConversation { members["sourceConversation"] = .string(sourceConversation.description) }
        if let requeues { members["requeues"] = .int(Int64(requeues)) }
        if let migration { members["migration"] = PayloadJSON.write(migration) }
        if let sourceSender { members["sourceSender"] = .string(sourceSender.rawValue) }
        if let firstCopyOnly { members["firstCopyOnly"] = .bool(firstCopyOnly) }
        guard let data = JSONValue.object(members).finiteJSONData() else {
            throw IMError(.invalidContent, "outbox payload has a number JSON cannot hold (NaN or infinity)")
        }
        return data
    }

    /// Reads a row's JSON. `PayloadJSON` reads the shapes it knows; anything else (a member missing or of
    /// another type, a row no parser here accepts) is decoded by `JSONDecoder`, whose result or error is
    /// the reference the fast reader matches (`OutboxPayloadCodingTests`).
    package static func decode(_ data: Data) throws -> OutboxPayload {
        if let value = try? JSONValue.parse(data), let payload = try? PayloadJSON.read(value) { return payload }
        do {
            return try JSONDecoder().decode(OutboxPayload.self, from: data)
        } catch {
            throw IMError(.malformedPayload, "outbox payload does not decode: \(error)")
        }
    }
}

extension OutboxPayload: Equatable {}

/// What a migration entry carries besides its action: which migration queued it (its checkpoint name,
/// so that a rerun finds its pending and dead entries) and how the copy counts in the report.
package struct MigrationMark: Codable, Sendable, Hashable {
    /// `Migrator.checkpointName` of the conversation pair.
    package var run: String
    /// `copied`, `converted` or `fell_back` (docs/migration.md, "Report"); nil for a follow-up (the recall).
    package var tally: String?
    /// The content kind of the source message (the report's `by_kind`).
    package var kind: String?
    /// The sender was written to the target with its profile by the migration's user phase: the executor
    /// does not provision it again as a bare id (which would reset the name on RongCloud).
    package var senderMigrated: Bool?
    /// The checkpoint in which the executor writes what an account entry (`.user`, `.group`) did
    /// (`AccountOutcome`), for the migration's report.
    package var outcome: String?

    package init(run: String, tally: String? = nil, kind: String? = nil, senderMigrated: Bool? = nil, outcome: String? = nil) {
        (self.run, self.tally, self.kind, self.senderMigrated, self.outcome) = (run, tally, kind, senderMigrated, outcome)
    }
}
