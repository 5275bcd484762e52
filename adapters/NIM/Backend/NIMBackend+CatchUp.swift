import IMAdapterKit
import IMCore

/// Catch-up (docs/architecture.md, "Catch-up"): a message of `/history/query*` becomes the event the
/// message copy gives it (`nim:msg:<msgid>`). History is positioned by time, so a gap is not visible in
/// live traffic; a user's teams (`/team/joinTeams.action`) come from `GroupDirectory` where the backend
/// has it.
extension NIMBackend: CatchUpSource {
    public func catchUpEvent(for message: Message) -> IMEvent? {
        if case .command = message.content { return nil }
        // An expansion carrier is a change to another message, as the copy's events make it.
        if let change = NIMExpansionCarrier.change(in: message) {
            return IMEvent(eventID: EventID("nim:exp:\(message.id)"), backend: id,
                           kind: .expansionChanged(messageID: change.target, conversation: message.conversation,
                                                   by: message.sender, delta: change.delta))
        }
        return IMEvent(eventID: EventID("nim:msg:\(message.id)"), backend: id, kind: .message(message))
    }

    public var gapSignal: CatchUpGapSignal { .none }
}
