import Foundation
import IMCore
import Synchronization

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

    /// The row's JSON: the payload's own fields, with the route's JSON (the same for every entry of a
    /// route, encoded once: it was a quarter of the encoding's cost) spliced in as its `route` member.
    /// The result is the object `JSONEncoder` writes for the whole payload, with `route` last, and it
    /// decodes as one.
    func encoded() throws -> Data {
        var body = try JSONEncoder().encode(Body(action: action, eventTimeMs: eventTimeMs, sourceConversation: sourceConversation,
                                                 requeues: requeues, migration: migration))
        guard body.count >= 2, body.last == UInt8(ascii: "}") else { return try JSONEncoder().encode(self) }
        body.removeLast()
        body.append(contentsOf: (body.count > 1 ? #","route":"# : #""route":"#).utf8)
        body.append(try Self.routeJSON(route))
        body.append(UInt8(ascii: "}"))
        return body
    }

    /// Every field but the route, under the keys the synthesized `Codable` uses.
    private struct Body: Encodable {
        var action: RelayAction
        var eventTimeMs: Int64
        var sourceConversation: ConversationRef?
        var requeues: Int?
        var migration: MigrationMark?
    }

    private static let routes = Mutex<[Route: Data]>([:])

    /// A route's JSON, kept for the routes met (a configuration's few; at most 256, then encoded each time).
    static func routeJSON(_ route: Route) throws -> Data {
        if let known = routes.withLock({ $0[route] }) { return known }
        let encoded = try JSONEncoder().encode(route)
        routes.withLock { if $0.count < 256 { $0[route] = encoded } }
        return encoded
    }

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
