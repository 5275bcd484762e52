import IMAdapterKit
import IMCore
import IMHTTP

/// The webhook (`/callbacks/<backend>`): `handle` runs one callback exchange — verify the shared
/// secret and parse the body (`WuKongInbound.parse`), map each message (`WuKongInboundMapper`), run
/// the extras/reaction syncs the CMD messages ask for, push every event into the sink, then answer
/// WuKongIM (`WuKongInbound.answers`: 200 `{"status":200}` after the sink took the events; 401/400
/// for a refused request; 500, which WuKongIM redelivers, when a sync or the sink failed). Accepted
/// events are also published on `events()` (a repeated `eventID` is dropped there, not in the sink).
extension WuKongBackend: InboundHandling {
    public func handle(_ request: HTTPRequestData, sink: any EventSink) async -> HTTPResponseData {
        await CallbackExchange(backend: id, answers: WuKongInbound.answers, fanout: hub).run(request, sink: sink) {
            try await events(from: $0)
        }
    }

    /// The events of one webhook request, including those of the syncs its CMD messages ask for. A
    /// redelivered request gives the same `eventID`s. Throws the refusal (`authentication_failed`,
    /// `malformed_payload`) or a sync's error.
    public func events(from request: HTTPRequestData) async throws -> [IMEvent] {
        guard case .messages(let messages, _) = try inbound.parse(request) else { return [] }
        var events: [IMEvent] = []
        for wire in messages {
            for action in try mapper.actions(for: wire) {
                switch action {
                case .event(let event):
                    events.append(event)
                case .syncExtras(let conversation, let actor, let at):
                    events += try await syncExtras(conversation, actor: actor, at: at)
                case .syncReactions(let conversation, _, _):
                    events += try await syncReactions(conversation)
                }
            }
        }
        return events
    }
}
