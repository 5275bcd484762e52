import IMAdapterKit
import IMCore
import IMHTTP

/// The one way JMessage traffic enters IMBridge: the routing push at `/callbacks/<backend>` and the
/// report v2 poller, both into the sink the bridge gives.
extension JMessageBackend: InboundHandling {
    /// The paid routing push: `JMessageInbound.batch(from:)` verifies and parses it, the sink takes
    /// the events, and JMessage gets `JMessageInbound.answers` (200 with an empty body once taken).
    /// Before the body: the Basic credentials (`JMessageInbound.verify` reads only the header); a body
    /// over `JMessageInbound.maxBodyBytes` is answered 413.
    public func admit(_ head: HTTPRequestData, sink: any EventSink) async -> BodyAdmission {
        let inbound = self.inbound
        return exchange.admit(head, sink: sink, maxBodyBytes: JMessageInbound.maxBodyBytes) { try inbound.verify($0) }
    }

    public func handle(_ request: HTTPRequestData, sink: any EventSink) async -> HTTPResponseData {
        let inbound = self.inbound
        return await exchange.run(request, sink: sink, batch: { try inbound.batch(from: $0) })
    }

    /// Converts a set-aside report message again (pushed or polled; see `InboundHandling.replay`).
    public func replay(_ message: SetAsideMessage) async throws -> InboundBatch {
        guard message.format == JMessageInbound.setAsideFormat else {
            throw IMError(.unsupported, "JMessage cannot replay a set-aside message of format '\(message.format)'")
        }
        var batch = InboundBatch()
        inbound.convert(message.raw, into: &batch)
        for index in batch.setAside.indices { batch.setAside[index].key = message.key }
        return batch
    }

    /// How often `startIntake` polls report v2; nil turns the poller off (routing push only).
    public func setPollInterval(_ intervalMs: Int64?) {
        state.withLock { $0.intakePollIntervalMs = intervalMs }
    }

    /// Starts the report poller (unless turned off): each page goes to `sink.accept`, and the poller's
    /// position is saved only after `accept` returned (see `JMessagePoller`). Accepted events, and the
    /// `recalled` events of retracts made through this backend, also appear on `events()`.
    public func startIntake(into sink: any EventSink) async throws {
        let interval = state.withLock { state -> Int64? in
            state.intakeSink = sink
            return state.intakePollIntervalMs
        }
        guard let interval else { return }
        try await start(pollIntervalMs: nil)
        startPolling(intervalMs: interval, into: PublishingSink(inner: sink, fanout: fanout))
    }

    /// Stops the poller and returns once it has.
    public func stopIntake() async {
        await stopPolling()
    }

    /// One round of the poller into `sink` (pages until nothing more waits), its events also on
    /// `events()`: for tests and tools that drive the poller by hand.
    public func pollOnce(into sink: any EventSink) async throws {
        try await poller.pollOnce(into: PublishingSink(inner: sink, fanout: fanout))
    }
}
