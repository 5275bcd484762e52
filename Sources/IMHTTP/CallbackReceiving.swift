import IMCore

/// What a vendor callback produced: the events, and the answer the vendor expects on success
/// (RongCloud `ok`, WuKong HTTP 200, NIM `{"code":200}` …).
public struct CallbackOutcome: Sendable {
    public var events: [IMEvent]
    public var response: HTTPResponseData
    public init(events: [IMEvent], response: HTTPResponseData = .text("ok")) {
        self.events = events
        self.response = response
    }
}

/// A backend whose inbound traffic arrives as HTTP callbacks (webhooks) from the vendor.
///
/// Contract for the bridge, which serves `/callbacks/<backend>` and calls this:
/// - `receiveCallback` verifies the vendor's signature on the exact bytes and parses the request into
///   events, doing any follow-up fetch the callback implies (e.g. WuKong's extras sync after a CMD)
///   **before** it returns, so the bridge can commit all of them before answering;
/// - a forged, stale or malformed request throws an `IMError` (`authentication_failed`,
///   `malformed_payload` …) and produces no event; `callbackFailureResponse` renders that error the way
///   the vendor's receiver docs expect (status and body);
/// - a redelivered callback yields events with the same `eventID`s;
/// - the same events are also yielded on `events()` for consumers that do not use this entry point.
public protocol CallbackReceiving: IMBackend {
    func receiveCallback(_ request: HTTPRequestData) async throws -> CallbackOutcome
    func callbackFailureResponse(for error: IMError) -> HTTPResponseData
}

extension CallbackReceiving {
    /// 401 for signature failures, 400 for malformed requests, 500 for anything the vendor should retry.
    public func callbackFailureResponse(for error: IMError) -> HTTPResponseData {
        switch error.code {
        case .authenticationFailed: .text("unauthorized: \(error.message)", status: 401)
        case .malformedPayload, .invalidArgument: .text("bad request: \(error.message)", status: 400)
        default: .text("error: \(error.message)", status: 500)
        }
    }
}
