/// Who a message mentions. `all` is "@所有人" (RongCloud `mentionedInfo.type` 1, WuKong `mention.all`).
public struct Mentions: Hashable, Sendable, Codable {
    public var all: Bool
    public var users: [UserID]
    public init(all: Bool = false, users: [UserID] = []) {
        self.all = all
        self.users = users
    }
    public var isEmpty: Bool { !all && users.isEmpty }

    public func mentions(_ user: UserID) -> Bool { all || users.contains(user) }
}

/// The message a reply quotes: its id on the same backend, its sender and its digest (what the quote
/// bubble shows even when the original is gone).
public struct ReplyRef: Hashable, Sendable, Codable {
    public var messageID: MessageID
    public var sender: UserID?
    public var digest: String
    public init(messageID: MessageID, sender: UserID? = nil, digest: String) {
        self.messageID = messageID
        self.sender = sender
        self.digest = digest
    }
}

/// Delivery flags. Vendors spell them differently (RongCloud `isPersisted`/`isCounted`/`disablePush`,
/// NIM `option`, WuKong `header.red_dot`/`no_persist`, JMessage `no_notification`); codecs map them.
public struct MessageOptions: Hashable, Sendable, Codable {
    public var persist: Bool
    public var countUnread: Bool
    public var push: Bool
    public var receiptRequested: Bool
    /// Text for the push notification, where it should differ from the digest.
    public var pushText: String?
    public init(persist: Bool = true, countUnread: Bool = true, push: Bool = true, receiptRequested: Bool = false,
                pushText: String? = nil) {
        self.persist = persist
        self.countUnread = countUnread
        self.push = push
        self.receiptRequested = receiptRequested
        self.pushText = pushText
    }

    /// Stored, but no unread count and no push: what history migration writes.
    public static let silent = MessageOptions(persist: true, countUnread: false, push: false)
}

/// The latest edit of a message.
public struct EditState: Hashable, Sendable, Codable {
    public var content: MessageContent
    public var editedAt: Int64
    public init(content: MessageContent, editedAt: Int64) {
        self.content = content
        self.editedAt = editedAt
    }
}

/// A recall: who took the message back and when (milliseconds).
public struct RecallState: Hashable, Sendable, Codable {
    public var by: UserID
    public var at: Int64
    public init(by: UserID, at: Int64) {
        self.by = by
        self.at = at
    }
}

/// One emoji reaction by one user.
public struct Reaction: Hashable, Sendable, Codable {
    public var user: UserID
    public var emoji: String
    public var at: Int64
    public init(user: UserID, emoji: String, at: Int64) {
        self.user = user
        self.emoji = emoji
        self.at = at
    }
}

/// Read-receipt counters of one message, as the sender sees them.
public struct ReadCounts: Hashable, Sendable, Codable {
    public var read: Int
    public var unread: Int
    public init(read: Int = 0, unread: Int = 0) {
        self.read = read
        self.unread = unread
    }
}

/// A stored message in the neutral model. Timestamps are Int64 milliseconds since 1970.
///
/// `content` is what was sent; `edit` holds the latest edit (use `currentContent` for what readers see);
/// `recall` is set once a message is taken back. `expansion` is nil unless expansion was enabled at send
/// time. `seq` is the per-conversation sequence where the backend has one (WuKong `message_seq`;
/// MemoryBackend numbers every conversation from 1). `vendorExtras` keeps vendor fields with no neutral
/// home so nothing is dropped on a round trip.
public struct Message: Hashable, Sendable, Codable {
    public var id: MessageID
    public var clientMessageID: ClientMessageID?
    public var conversation: ConversationRef
    public var sender: UserID
    public var sentAt: Int64
    public var seq: Int64?
    public var content: MessageContent
    public var mentions: Mentions
    public var reply: ReplyRef?
    public var options: MessageOptions
    public var expansion: Expansion?
    public var edit: EditState?
    public var recall: RecallState?
    public var reactions: [Reaction]
    public var readCounts: ReadCounts?
    public var vendorExtras: [String: JSONValue]

    public init(id: MessageID, clientMessageID: ClientMessageID? = nil, conversation: ConversationRef, sender: UserID,
                sentAt: Int64, seq: Int64? = nil, content: MessageContent, mentions: Mentions = Mentions(),
                reply: ReplyRef? = nil, options: MessageOptions = MessageOptions(), expansion: Expansion? = nil,
                edit: EditState? = nil, recall: RecallState? = nil, reactions: [Reaction] = [],
                readCounts: ReadCounts? = nil, vendorExtras: [String: JSONValue] = [:]) {
        self.id = id
        self.clientMessageID = clientMessageID
        self.conversation = conversation
        self.sender = sender
        self.sentAt = sentAt
        self.seq = seq
        self.content = content
        self.mentions = mentions
        self.reply = reply
        self.options = options
        self.expansion = expansion
        self.edit = edit
        self.recall = recall
        self.reactions = reactions
        self.readCounts = readCounts
        self.vendorExtras = vendorExtras
    }

    /// The content readers see now: the latest edit, or the original.
    public var currentContent: MessageContent { edit?.content ?? content }

    /// What readers see, as the app type `T` when it is one (`message.custom(as: OrderCard.self)`).
    public func custom<T: CustomMessageContent>(as type: T.Type) -> T? { currentContent.custom(as: type) }
    public var isRecalled: Bool { recall != nil }
    /// `[消息已撤回]` once recalled, else the current content's digest.
    public var digest: String { isRecalled ? "[消息已撤回]" : currentContent.digest }
}

/// What an app or the bridge asks a backend to send.
///
/// `expansion` nil means the message is sent **without** expansion and can never get one later;
/// `[:]` enables it with no initial keys. `sentAt` asks for a timestamp (history migration) where
/// the backend lets a server set one; elsewhere the backend's clock wins and the original time
/// travels in `vendorExtras`.
public struct OutgoingMessage: Hashable, Sendable, Codable {
    public var conversation: ConversationRef
    public var sender: UserID
    public var content: MessageContent
    public var clientMessageID: ClientMessageID?
    public var mentions: Mentions
    public var reply: ReplyRef?
    public var options: MessageOptions
    public var expansion: [String: String]?
    public var sentAt: Int64?
    public var vendorExtras: [String: JSONValue]

    public init(conversation: ConversationRef, sender: UserID, content: MessageContent,
                clientMessageID: ClientMessageID? = nil, mentions: Mentions = Mentions(), reply: ReplyRef? = nil,
                options: MessageOptions = MessageOptions(), expansion: [String: String]? = nil, sentAt: Int64? = nil,
                vendorExtras: [String: JSONValue] = [:]) {
        self.conversation = conversation
        self.sender = sender
        self.content = content
        self.clientMessageID = clientMessageID
        self.mentions = mentions
        self.reply = reply
        self.options = options
        self.expansion = expansion
        self.sentAt = sentAt
        self.vendorExtras = vendorExtras
    }
}
