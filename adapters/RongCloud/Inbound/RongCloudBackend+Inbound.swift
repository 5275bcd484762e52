import IMAdapterKit
import IMCore
import IMHTTP

/// The routing callback through the shared exchange: `RongCloudInbound.events(from:)` (verify + parse;
/// the callback implies no follow-up fetch) → `sink.accept` → RongCloud's answers
/// (`RongCloudInbound.answers`). Accepted events are also published on `events()`.
extension RongCloudBackend: InboundHandling {
    public func handle(_ request: HTTPRequestData, sink: any EventSink) async -> HTTPResponseData {
        await CallbackExchange(backend: id, answers: RongCloudInbound.answers, fanout: fanout)
            .run(request, sink: sink) { try inbound.events(from: $0) }
    }
}
