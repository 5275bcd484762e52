import IMCore

/// What a source adds so that changes to old messages (edits, recalls, deletions, expansion changes) made
/// while the bridge was down are caught up like new messages (docs/architecture.md, "Catch-up of changes").
/// A vendor gives these changes in one of two ways, and a source adopts the protocol that fits its API:
///
/// - `ChangeFeedSource`: the vendor keeps a feed of changes, read from a position (WuKong's business
///   server: per conversation, the extras version and the reaction seq). The bridge keeps the positions in
///   its store (`FeedPosition`), written in the transaction that records the events read up to them.
/// - `ChangeWindowSource`: history shows each message in its current state (RongCloud: a recalled message
///   as its recall notice, an `isDelete` recall gone, the expansion's current keys; NIM: a recalled
///   message gone). The bridge re-reads a window of recent history and compares it with what it knows.

/// A position in one conversation's change feed.
public struct FeedPosition: Sendable, Hashable {
    public var backend: BackendID
    public var conversation: ConversationRef
    /// The feed's name within the backend (`extras`, `reactions`).
    public var feed: String
    /// The stored position the read started from; nil when none was stored (the read began at the feed's start).
    public var from: Int64?
    /// The position the read reached (the newest version read).
    public var to: Int64

    public init(backend: BackendID, conversation: ConversationRef, feed: String, from: Int64?, to: Int64) {
        (self.backend, self.conversation, self.feed, self.from, self.to) = (backend, conversation, feed, from, to)
    }

    /// The position's row in the bridge store's checkpoints: `feed/<backend>/<feed>/<conversation>`, the
    /// value a decimal number.
    public var checkpointName: String { Self.checkpointName(backend: backend, conversation: conversation, feed: feed) }

    public static let checkpointPrefix = "feed/"

    public static func checkpointName(backend: BackendID, conversation: ConversationRef, feed: String) -> String {
        "\(checkpointPrefix)\(backend.rawValue)/\(feed)/\(conversation)"
    }
}

/// A source with a change feed (see above). Contract:
/// - `readChanges(of:)` reads the conversation's feeds from their positions — the last read's in memory,
///   else the stored one (`useStoredPositions`), else the feed's start — and returns the events (with the
///   `eventID`s the callback path gives the same changes) and the positions reached, in the batch's
///   `positions`. The sink stores those with the events, and refuses the batch (a retry) when a position it
///   holds is behind the one a read started from: what lies between was read but never recorded.
/// - The live path (a callback that asks for a sync) does the same and puts its positions in its batch.
/// - `forgetPositions()` is called when a batch with positions was not recorded: the next read starts
///   from the stored positions again.
public protocol ChangeFeedSource: CatchUpSource {
    /// Where the positions the bridge stored are read from; nil (the default): they are kept in memory
    /// only, as for an app that uses the backend alone.
    func useStoredPositions(_ positions: (any CheckpointStorage)?) async
    func readChanges(of conversation: ConversationRef) async throws -> InboundBatch
    func forgetPositions() async
    /// The conversation sequence (`Message.seq`) of each of `messages` the source's history lists, for a
    /// feed read from its start: a change to a message past the conversation's catch-up position is to a
    /// message still on its way (its callback late), not to one from before the bridge. Empty (the
    /// default) when the source numbers no sequence; then such changes are left out.
    func sequences(of messages: [MessageID], in conversation: ConversationRef) async throws -> [MessageID: Int64]
}

extension ChangeFeedSource {
    public func sequences(of messages: [MessageID], in conversation: ConversationRef) async throws -> [MessageID: Int64] { [:] }
}

/// A source whose history shows messages in their current state (see above). Contract:
/// - `recentMessages` returns the conversation's messages sent at or after `sentSince`, oldest first, as
///   history shows them now (`recall`, `expansion` with per-key versions where the vendor gives them), all
///   of them (paging is the source's business).
/// - `recallEvent(for:)` (`CatchUpSource`) gives a recalled message's recall as its callback does.
/// - `absenceEvent` is the event for a message the bridge relayed that history no longer lists: what
///   the vendor's history drops — RongCloud a message recalled with `isDelete` (a deletion), NIM a recalled
///   message (a recall) — with the callback's `eventID`, by `sender` (the message's, as the bridge
///   recorded it; the vendors let only the sender do this); nil when absence says nothing.
/// - `showsInHistory(_:)` answers whether history still shows `message` as sent (listed, not recalled):
///   false when the source's history has dropped it (what `absenceEvent` stands for), nil when history
///   cannot tell (the default). The bridge asks it only of a message whose callback comes after catch-up
///   read past the message's time without meeting it (docs/architecture.md, "Callbacks behind the
///   catch-up position"), never on the ordinary live path.
public protocol ChangeWindowSource: CatchUpSource {
    func recentMessages(of conversation: ConversationRef, sentSince: Int64, viewer: UserID?) async throws -> [Message]
    func absenceEvent(of message: MessageID, in conversation: ConversationRef, at: Int64, by sender: UserID?) -> IMEvent?
    func showsInHistory(_ message: Message) async throws -> Bool?
    /// Whether `message`, as a history page of this backend lists it, is the adapter's own record of a
    /// message the vendor's history no longer lists (NIM's tombstones of messages this process saw
    /// recalled). Catch-up reads it as absent, as the vendor shows it: recorded from the read, it would be
    /// relayed behind newer messages; a callback of it still to come is screened instead. False by default.
    func isLocalTombstone(_ message: Message) -> Bool
}

extension ChangeWindowSource {
    /// History cannot tell (a source that does not look its messages up again).
    public func showsInHistory(_ message: Message) async throws -> Bool? { nil }

    public func isLocalTombstone(_ message: Message) -> Bool { false }
}
