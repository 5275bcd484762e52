import IMAdapterKit
import IMCore
import IMHTTP

extension NIMBackend: InboundHandling {
    /// One message-copy callback through the shared exchange: verify and parse (`NIMInbound.events(from:)`,
    /// pure CPU work, well within NIM's 5 s answer window), hand the events to `sink`, answer NIM
    /// (`NIMInbound.answers`). The backend also notes the messages and recalls it saw (recall needs a
    /// message's send time; history shows recalled messages as tombstones).
    public func handle(_ request: HTTPRequestData, sink: any EventSink) async -> HTTPResponseData {
        await CallbackExchange(backend: id, answers: NIMInbound.answers, fanout: fanout).run(request, sink: sink) { request in
            let events = try inbound.events(from: request)
            for event in events { observe(event) }
            return events
        }
    }
}
