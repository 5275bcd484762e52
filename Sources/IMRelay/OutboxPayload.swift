import Foundation
import IMCore

/// What an outbox row carries: the action, the route it came from (for its policies) and when the
/// source event happened (for the latency histogram).
struct OutboxPayload: Codable, Sendable {
    var action: RelayAction
    var route: Route
    var eventTimeMs: Int64
    var sourceConversation: ConversationRef?
    /// How often this action was put back at the end of its lane because the message it refers to was
    /// not relayed yet (vendors may deliver a change before the message itself).
    var requeues: Int?
    /// Set on the entries `imbridge migrate` queues (docs/migration.md): the executor paces them to the
    /// target's documented rate and does not send a message whose copy the id map already names.
    var migration: MigrationMark?

    init(action: RelayAction, route: Route, eventTimeMs: Int64, sourceConversation: ConversationRef? = nil,
         migration: MigrationMark? = nil) {
        self.action = action
        self.route = route
        self.eventTimeMs = eventTimeMs
        self.sourceConversation = sourceConversation
        self.migration = migration
    }

    func encoded() throws -> Data { try JSONEncoder().encode(self) }

    static func decode(_ data: Data) throws -> OutboxPayload {
        do {
            return try JSONDecoder().decode(OutboxPayload.self, from: data)
        } catch {
            throw IMError(.malformedPayload, "outbox payload does not decode: \(error)")
        }
    }
}

/// What a migration entry carries besides its action: which migration queued it (its checkpoint name,
/// so that a rerun finds its pending and dead entries) and how the copy counts in the report.
struct MigrationMark: Codable, Sendable, Hashable {
    /// `Migrator.checkpointName` of the conversation pair.
    var run: String
    /// `copied`, `converted` or `fell_back` (docs/migration.md, "Report"); nil for a follow-up (the recall).
    var tally: String?
    /// The content kind of the source message (the report's `by_kind`).
    var kind: String?
    /// The sender was written to the target with its profile by the migration's user phase: the executor
    /// does not provision it again as a bare id (which would reset the name on RongCloud).
    var senderMigrated: Bool?
}
