import IMAdapterKit
import IMCore

/// Catch-up (docs/architecture.md, "Catch-up"): a row of `/v3/message/*/query.json` becomes the event
/// message routing gives the same message (`msg:<msgUID>`). History is positioned by time, so a gap is
/// not visible in live traffic; a user's groups (`/user/group/query.json`) come from `GroupDirectory`
/// where the backend has it.
extension RongCloudBackend: CatchUpSource {
    public func catchUpEvent(for message: Message) -> IMEvent? {
        if case .command = message.content { return nil }
        return IMEvent(eventID: EventID("msg:\(message.id)"), backend: id, kind: .message(message))
    }

    public var gapSignal: CatchUpGapSignal { .none }
}
