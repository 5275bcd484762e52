/// A position in one conversation's history. Seq-based backends use the per-conversation sequence
/// (`HistoryCursor(seq:)`); time-based ones (NIM, JMessage) encode time and id in `rawValue`.
public struct HistoryCursor: Hashable, Sendable, Codable, CustomStringConvertible {
    public var rawValue: String
    public init(_ rawValue: String) { self.rawValue = rawValue }
    public init(seq: Int64) { self.rawValue = String(seq) }
    public var seq: Int64? { Int64(rawValue) }
    public var description: String { rawValue }
}

/// Where a history page starts (the anchors the vendors' client SDKs page by: newest, oldest, before, after, around):
/// - `latest`: the newest `limit` messages;
/// - `oldest`: the first `limit` messages (what migration reads first);
/// - `before(c)`: the `limit` messages just older than `c`, excluding `c` (pull down: from 100 with
///   limit 10 → 90…99);
/// - `after(c)`: the `limit` messages just newer than `c`, excluding `c` (pull up: 101…110);
/// - `around(c)`: `c` itself with `(limit − 1) / 2` older and the rest newer (20 with limit 10 → 16…25);
///   when one side runs short the other side fills the page.
public enum HistoryAnchor: Hashable, Sendable, Codable {
    case latest
    case oldest
    case before(HistoryCursor)
    case after(HistoryCursor)
    case around(HistoryCursor)
}

public struct HistoryQuery: Hashable, Sendable, Codable {
    public var conversation: ConversationRef
    public var anchor: HistoryAnchor
    public var limit: Int
    /// Whose view (some vendors keep per-user history); nil for the server's view.
    public var viewer: UserID?
    public init(conversation: ConversationRef, anchor: HistoryAnchor = .latest, limit: Int = 20, viewer: UserID? = nil) {
        self.conversation = conversation
        self.anchor = anchor
        self.limit = limit
        self.viewer = viewer
    }
}

/// One page, oldest → newest. `olderCursor`/`newerCursor` continue in either direction; `hasOlder` and
/// `hasNewer` say whether anything is there.
public struct HistoryPage: Hashable, Sendable, Codable {
    public var messages: [Message]
    public var olderCursor: HistoryCursor?
    public var newerCursor: HistoryCursor?
    public var hasOlder: Bool
    public var hasNewer: Bool
    public init(messages: [Message], olderCursor: HistoryCursor?, newerCursor: HistoryCursor?, hasOlder: Bool, hasNewer: Bool) {
        self.messages = messages
        self.olderCursor = olderCursor
        self.newerCursor = newerCursor
        self.hasOlder = hasOlder
        self.hasNewer = hasNewer
    }
}

/// How a vendor's adapter positions history (docs/adapters/<vendor>.md, "History"), so that a memory
/// world under the vendor's preset pages as the adapter does and app code paging with the wrong kind
/// of cursor fails in memory as in production.
public struct HistoryPositioning: Hashable, Sendable, Codable {
    public enum CursorForm: String, Hashable, Sendable, Codable {
        /// `HistoryCursor(seq:)`: the per-conversation `seq` (WuKong's `message_seq`).
        case seq
        /// `"<time>:<id>"`: RongCloud's `msgTime:msgUID`, NIM's and JMessage's `<ms>:<msgid>`.
        case timeAndID = "time_and_id"
    }

    public var cursorForm: CursorForm
    /// Whether the vendor's message ids are numbers (NIM's and JMessage's msgid).
    public var numericMessageIDs: Bool
    /// Whether the message `send` returns carries its `seq`: not on WuKong, whose send reply names only
    /// the message id (history and events have it).
    public var sendAnswersSeq: Bool
    /// The adapter's refusal of a cursor not in its form, with `{cursor}` where the cursor goes.
    public var refusalTemplate: String

    public init(cursorForm: CursorForm, numericMessageIDs: Bool = false, sendAnswersSeq: Bool = true, refusalTemplate: String) {
        self.cursorForm = cursorForm
        self.numericMessageIDs = numericMessageIDs
        self.sendAnswersSeq = sendAnswersSeq
        self.refusalTemplate = refusalTemplate
    }

    /// By `seq`, for a value made without a preset.
    public static let seq = HistoryPositioning(cursorForm: .seq, refusalTemplate: "history cursors are seq numbers, not '{cursor}'")

    /// The error the adapter gives for `cursor`, not in its form.
    public func refusal(_ cursor: HistoryCursor) -> IMError {
        IMError(.invalidArgument, refusalTemplate.replacing("{cursor}", with: cursor.rawValue))
    }
}
