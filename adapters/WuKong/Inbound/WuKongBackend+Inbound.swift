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
    /// Before the body: the shared secret, the method and `?event=` (`WuKongInbound.verifiedEvent`); a
    /// body over `WuKongInbound.maxBodyBytes` is answered 413.
    public func admit(_ head: HTTPRequestData, sink: any EventSink) async -> BodyAdmission {
        CallbackExchange(backend: id, answers: WuKongInbound.answers).admit(head, sink: sink, maxBodyBytes: WuKongInbound.maxBodyBytes) {
            _ = try inbound.verifiedEvent($0)
        }
    }

    public func handle(_ request: HTTPRequestData, sink: any EventSink) async -> HTTPResponseData {
        let answer = await CallbackExchange(backend: id, answers: WuKongInbound.answers, fanout: hub).run(request, sink: sink, batch: {
            try await batch(from: $0)
        })
        // Not recorded (WuKongIM delivers it again): the syncs it ran read on from the stored positions
        // next time, not from where this one's reads ended.
        if answer.status != 200 { await sync.forget() }
        return answer
    }

    /// One webhook request as a batch: each message's events in order (syncs included), and the
    /// messages that do not decode or convert set aside (see `WuKongInbound`). A failed sync throws (the
    /// whole batch is answered with a retry: a sync failure is the business server's, not the message's).
    public func batch(from request: HTTPRequestData) async throws -> InboundBatch {
        try await batch(of: try inbound.messageItems(request))
    }

    /// Converts a set-aside message again (see `InboundHandling.replay`).
    public func replay(_ message: SetAsideMessage) async throws -> InboundBatch {
        guard message.format == WuKongInbound.setAsideFormat else {
            throw IMError(.unsupported, "WuKong cannot replay a set-aside message of format '\(message.format)'")
        }
        var item = WuKongInbound.item(message.raw)
        item.key = message.key
        return try await batch(of: [item])
    }

    func batch(of items: [WuKongInbound.Item]) async throws -> InboundBatch {
        var batch = InboundBatch()
        for item in items {
            var actions: [WuKongInboundAction] = []
            batch.convert(backend: id, key: item.key, format: WuKongInbound.setAsideFormat, raw: item.raw) {
                actions = try mapper.actions(for: try item.message.get())
                return []
            }
            for action in actions {
                switch action {
                case .event(let event):
                    batch.events.append(event)
                case .syncExtras(let conversation, let actor, let at):
                    let read = try await syncExtras(conversation, actor: actor, at: at)
                    batch.events += read.events
                    if let position = read.position { batch.positions.append(position) }
                case .syncReactions(let conversation, _, _):
                    let read = try await syncReactions(conversation)
                    batch.events += read.events
                    if let position = read.position { batch.positions.append(position) }
                }
            }
        }
        return batch
    }
}
