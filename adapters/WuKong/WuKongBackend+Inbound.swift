import IMAdapterKit
import IMCore
import IMHTTP

extension WuKongBackend: InboundHandling {
    public func handle(_ request: HTTPRequestData, sink: any EventSink) async -> HTTPResponseData {
        let answers = CallbackAnswers(success: .json(WKStatus.ok), refusal: { [self] in callbackFailureResponse(for: $0) },
                                      retry: { [self] in callbackFailureResponse(for: $0) })
        return await CallbackExchange(backend: id, answers: answers).run(request, sink: sink) { try await receiveCallback($0).events }
    }
}
