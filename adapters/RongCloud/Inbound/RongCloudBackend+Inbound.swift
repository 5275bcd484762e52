import IMAdapterKit
import IMCore
import IMHTTP

/// The routing callback through the shared exchange: `RongCloudInbound.batch(from:)` (verify + parse;
/// the callback implies no follow-up fetch; an unconvertible message is set aside, see `batch(from:)`) → `sink.accept` → RongCloud's answers
/// (`RongCloudInbound.answers`). Accepted events are also published on `events()`.
extension RongCloudBackend: InboundHandling {
    /// Before the body: the method and the signature, which covers only query or header values
    /// (`RongCloudInbound.verifyHead`); a body over `RongCloudInbound.maxBodyBytes` is answered 413.
    public func admit(_ head: HTTPRequestData, sink: any EventSink) async -> BodyAdmission {
        CallbackExchange(backend: id, answers: RongCloudInbound.answers).admit(head, sink: sink, maxBodyBytes: RongCloudInbound.maxBodyBytes) {
            try inbound.verifyHead($0)
        }
    }

    public func handle(_ request: HTTPRequestData, sink: any EventSink) async -> HTTPResponseData {
        await CallbackExchange(backend: id, answers: RongCloudInbound.answers, fanout: fanout)
            .run(request, sink: sink, batch: { request in
                let (batch, mark) = try inbound.batchAndMark(from: request)
                // A signature taken before with another body is refused (`CallbackMarks`).
                do {
                    try await callbackMarks.check(mark, sink: sink, now: clock.nowMs())
                } catch let error as IMError where error.code != .authenticationFailed {
                    // The mark could not be kept (the store down): RongCloud may give up on this callback.
                    sink.unrecorded(batch.events)
                    throw error
                }
                return batch
            })
    }

    /// Converts a set-aside routed message again (see `InboundHandling.replay`).
    public func replay(_ message: SetAsideMessage) async throws -> InboundBatch {
        guard message.format == RongCloudInbound.setAsideFormat else {
            throw IMError(.unsupported, "RongCloud cannot replay a set-aside message of format '\(message.format)'")
        }
        return try inbound.batch(fromBody: message.raw)
    }
}
