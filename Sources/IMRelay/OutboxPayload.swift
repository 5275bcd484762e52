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

    init(action: RelayAction, route: Route, eventTimeMs: Int64, sourceConversation: ConversationRef? = nil) {
        self.action = action
        self.route = route
        self.eventTimeMs = eventTimeMs
        self.sourceConversation = sourceConversation
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
