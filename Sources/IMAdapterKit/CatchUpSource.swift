import IMCore

/// What the bridge's catch-up (docs/architecture.md, "Catch-up") needs from a source backend besides
/// `IMBackend.history` and `IMBackend.cursor(for:)`: the event a live callback would have produced for
/// a message read from history, how a gap shows in live traffic, and which conversations a user is in.
///
/// Contract:
/// - `catchUpEvent(for:)` returns the event with the same `eventID` the backend's callback gives the
///   same message, so the ledger keeps one copy whichever way it arrives first; nil for what a callback
///   would not relay as a message (a transient command, or the vendor's own bookkeeping such as WuKong's
///   "group created" notice, which a migration does not copy either: `vendor_notice`).
/// - `gapSignal` is `.sequence` only where a conversation's messages carry consecutive `seq` numbers
///   (WuKongIM `message_seq`): a live message whose seq is more than one past the last one seen shows a gap.
/// - `catchUpConversations(of:)` lists the conversations `user` takes part in where the vendor can say
///   (it throws `unsupported` otherwise); catch-up asks it for users it knows from earlier traffic.
public protocol CatchUpSource: IMBackend {
    func catchUpEvent(for message: Message) -> IMEvent?
    var gapSignal: CatchUpGapSignal { get }
    func catchUpConversations(of user: UserID) async throws -> [ConversationRef]
    /// The event a callback gives for the recall that left `message` recalled (the same `eventID`, so a
    /// recall that reached the bridge both ways — a callback, and a read of history that shows it recalled:
    /// a change window's, a migration's — is recorded once); nil when not recalled, or when the source
    /// cannot name it (the default).
    func recallEvent(for message: Message) -> IMEvent?
}

/// How a backend's live traffic shows that messages were missed.
public enum CatchUpGapSignal: String, Sendable {
    /// Consecutive per-conversation sequence numbers: a jump is a gap, seen at once.
    case sequence
    /// Time-positioned history (RongCloud, NIM): a gap is not visible in live traffic; catch-up finds it
    /// on start and every `catch_up.interval`.
    case none
}

extension CatchUpSource {
    public func recallEvent(for message: Message) -> IMEvent? { nil }

    /// The recall `message` shows (`Message.recall`), as the event `<prefix>recall:<message id>` by the
    /// recall's operator at its time: how every shipped adapter's callbacks name a recall, so that an
    /// adapter's `recallEvent(for:)` is this with its own prefix.
    public func recallEvent(for message: Message, eventIDPrefix prefix: String) -> IMEvent? {
        guard let recall = message.recall else { return nil }
        return IMEvent(eventID: EventID("\(prefix)recall:\(message.id)"), backend: id,
                       kind: .recalled(messageID: message.id, conversation: message.conversation, by: recall.by, at: recall.at))
    }

    /// By default a user's groups, where the backend is a `GroupDirectory` (RongCloud
    /// `/user/group/query.json`, NIM `/team/joinTeams.action`); `unsupported` otherwise.
    public func catchUpConversations(of user: UserID) async throws -> [ConversationRef] {
        guard let directory = self as? any GroupDirectory else {
            throw IMError(.unsupported, "\(id) cannot list the conversations of a user")
        }
        return try await directory.groups(of: user).map { .group($0) }
    }
}

/// A backend that is not a `CatchUpSource` and whose intake records a message under an event id other
/// than `msg:<message id>` (JMessage: `jmessage:msg:<msgid>`): that id, which `imbridge verify --repair`
/// writes to the ledger with a copy it sends, so that the intake does not relay the message again
/// (docs/verify.md, "Beside a running bridge").
public protocol MessageEventNaming: IMBackend {
    func messageEventID(for message: Message) -> EventID
}
