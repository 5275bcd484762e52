import IMCore
import IMHTTP

extension NIMBackend {
    /// The bridge's entry point (see `CallbackReceiving`): verifies and parses one message copy,
    /// publishes its events on `events()` and returns them with NIM's acknowledgement. Pure CPU work,
    /// well within NIM's 5 s answer window.
    public func receiveCallback(_ request: HTTPRequestData) async throws -> CallbackOutcome {
        CallbackOutcome(events: try receive(request), response: Self.acknowledgement)
    }

    /// NIM counts HTTP 200 **and 500** as delivered (vendor doc §6.1), so nothing that should be
    /// redelivered may answer 500: signature failures answer 401, malformed bodies 400 (a forged or
    /// broken request gains nothing from a retry), anything else 503 so NIM tries again.
    public func callbackFailureResponse(for error: IMError) -> HTTPResponseData {
        switch error.code {
        case .authenticationFailed: .text("unauthorized: \(error.message)", status: 401)
        case .malformedPayload, .invalidArgument: .text("bad request: \(error.message)", status: 400)
        default: .text("error: \(error.message)", status: 503)
        }
    }

    /// Looks for a message sent with `id` (carried in `ext`, see `NIMExtension`) among the newest 100
    /// of the conversation (NIM v1 has no lookup by client id; a bridge asks right after a crash, so the
    /// message, if it got through, is recent). Messages this process sent are found without a call.
    public func message(withClientID id: ClientMessageID, in conversation: ConversationRef) async throws -> Message? {
        if let known = state.withLock({ state in state.clientIDs[id].flatMap { state.recent[$0] } }) { return known }
        let viewer: UserID? = conversation.kind == .group ? teamQueryAccid.map { UserID($0) } : nil
        let page = try await history(HistoryQuery(conversation: conversation, anchor: .latest, limit: 100, viewer: viewer))
        return page.messages.last { $0.clientMessageID == id }
    }
}
