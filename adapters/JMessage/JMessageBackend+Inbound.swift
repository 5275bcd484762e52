import IMAdapterKit
import IMCore
import IMHTTP

extension JMessageBackend: InboundHandling {
    /// The routing push (`/callbacks/<backend>`): 200 with an empty body once the sink took the events.
    public func handle(_ request: HTTPRequestData, sink: any EventSink) async -> HTTPResponseData {
        await CallbackExchange(backend: id, answers: CallbackAnswers(success: HTTPResponseData(status: 200)))
            .run(request, sink: sink) { try await receiveCallback($0).events }
    }

    /// How often `startIntake` polls report v2; nil turns the poller off (routing push only).
    public func setPollInterval(_ intervalMs: Int64?) {
        state.withLock { $0.intakePollIntervalMs = intervalMs }
    }

    /// Starts the report poller (unless turned off), its events pushed into `sink`.
    public func startIntake(into sink: any EventSink) async throws {
        guard let interval = state.withLock({ $0.intakePollIntervalMs }) else { return }
        try await start(pollIntervalMs: interval)
        let pump = StreamIntake(self)
        state.withLock { $0.pump = pump }
        try await pump.startIntake(into: sink)
    }

    public func stopIntake() async {
        let pump = state.withLock { state -> StreamIntake? in
            defer { state.pump = nil }
            return state.pump
        }
        await pump?.stopIntake()
        await stop()
    }
}
