import IMAdapterKit
import IMCore
import IMHTTP

extension NIMBackend: InboundHandling {
    /// One message-copy callback through the shared exchange: verify and parse (`NIMInbound.batch(from:)`,
    /// pure CPU work, well within NIM's 5 s answer window), hand the events to `sink`, answer NIM
    /// (`NIMInbound.answers`). The backend also notes the messages and recalls it saw (recall needs a
    /// message's send time; history shows recalled messages as tombstones).
    /// Before the body: the headers and the `CheckSum` over the `MD5` header (`NIMInbound.verifyHead`);
    /// a body over `NIMInbound.maxBodyBytes` is answered 413. That the body matches `MD5` is checked in
    /// `handle`, once it is read.
    public func admit(_ head: HTTPRequestData, sink: any EventSink) async -> BodyAdmission {
        CallbackExchange(backend: id, answers: NIMInbound.answers).admit(head, sink: sink, maxBodyBytes: NIMInbound.maxBodyBytes) {
            try inbound.verifyHead($0)
        }
    }

    public func handle(_ request: HTTPRequestData, sink: any EventSink) async -> HTTPResponseData {
        await CallbackExchange(backend: id, answers: NIMInbound.answers, fanout: fanout).run(request, sink: sink, batch: { request in
            let batch = try inbound.batch(from: request)
            for event in batch.events { observe(event) }
            return batch
        })
    }

    /// Converts a set-aside copy again (see `InboundHandling.replay`).
    public func replay(_ message: SetAsideMessage) async throws -> InboundBatch {
        guard message.format == NIMInbound.setAsideFormat else {
            throw IMError(.unsupported, "NIM cannot replay a set-aside message of format '\(message.format)'")
        }
        let batch = try inbound.batch(fromBody: message.raw)
        for event in batch.events { observe(event) }
        return batch
    }
}
