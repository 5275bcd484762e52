/// The narrow interface every backend implements: identity, capabilities, sending, an event stream and
/// paged history. Everything else is an opt-in protocol below; callers check `capabilities` (or cast)
/// before using one.
///
/// Contract:
/// - `send` validates the content against `capabilities` (kinds, text length, `validate()`) before any
///   I/O and returns the stored message with the backend's id and time.
/// - `events()` returns a new subscription each call; events arrive in the order the backend observed
///   them, and a redelivered vendor callback yields an event with the same `eventID`.
/// - `history` pages one conversation; messages in a page are ordered oldest → newest.
public protocol IMBackend: Sendable {
    var id: BackendID { get }
    var capabilities: Capabilities { get }
    func send(_ message: OutgoingMessage) async throws -> Message
    func events() -> AsyncStream<IMEvent>
    func history(_ query: HistoryQuery) async throws -> HistoryPage
    /// The history position of `message` in this backend's own form, for `.before`, `.after` and
    /// `.around` anchors: apps never build cursors by hand. The default uses `seq`; backends whose
    /// history is positioned by time and id (RongCloud, NIM, JMessage) answer with their own form.
    func cursor(for message: Message) throws -> HistoryCursor
}

extension IMBackend {
    public func cursor(for message: Message) throws -> HistoryCursor {
        guard let seq = message.seq else {
            throw IMError(.invalidArgument, "message \(message.id) has no seq, and \(id) positions history by seq")
        }
        return HistoryCursor(seq: seq)
    }
}

/// Taking a message back. Rules (window, who may recall) come from `Capabilities`.
public protocol Recalling: IMBackend {
    func recall(_ message: MessageID, in conversation: ConversationRef, by user: UserID) async throws
}

/// Whom a deletion takes a message away from.
public enum DeletionScope: String, Hashable, Sendable, Codable, CaseIterable {
    /// Gone for everyone, with no "recalled" trace (RongCloud's recall with `isDelete=1`, WuKong's
    /// `DELETE /v1/message/mutual`).
    case everyone
    /// Gone from one user's view only (WuKong's `DELETE /v1/message`).
    case oneUser = "one_user"
}

/// Deleting messages (docs/mappings.md, "Deletion"). Unlike a recall, a deletion for everyone leaves no
/// trace in the conversation. A scope not in `deletionScopes` is refused with `unsupported`.
public protocol Deleting: IMBackend {
    var deletionScopes: Set<DeletionScope> { get }
    /// Deletes `message` for everyone (`forUser` nil) or from `forUser`'s view; `by` is who deletes (the
    /// sender, where the vendor allows only the sender). A message already deleted counts as deleted.
    func delete(_ message: MessageID, in conversation: ConversationRef, by user: UserID, forUser: UserID?) async throws
}

/// Replacing a message's content; only the latest edit is kept.
public protocol Editing: IMBackend {
    func edit(_ message: MessageID, in conversation: ConversationRef, by user: UserID, content: MessageContent) async throws
}

/// Key/value expansions on messages sent with expansion enabled.
public protocol ExpansionUpdating: IMBackend {
    /// Applies a change and returns what changed; refused whole when a limit is broken.
    func updateExpansion(of message: MessageID, in conversation: ConversationRef, by user: UserID,
                         _ change: ExpansionChange) async throws -> ExpansionDelta
    func expansion(of message: MessageID, in conversation: ConversationRef) async throws -> Expansion
}

/// Expansion changes carried as messages, where the vendor keeps no expansion state (NIM's `fallback`:
/// a type-100 `imbridge.expansion` message, docs/adapters/nim.md). Receivers see an `expansionChanged`
/// event instead of a message; there is no `expansion(of:)` to ask and no limit checked but the caller's.
public protocol ExpansionChangeSending: IMBackend {
    /// Sends `delta` for `target` from `user` into `conversation`; returns the carrier message. `clientID`
    /// goes with the carrier as a sent message's does, so that a sender that retries can ask whether an
    /// earlier attempt got through (`ClientIDLookup`) instead of carrying the change twice.
    @discardableResult
    func sendExpansionChange(_ delta: ExpansionDelta, of target: MessageID, in conversation: ConversationRef,
                             by user: UserID, clientID: ClientMessageID?) async throws -> Message
}

extension ExpansionChangeSending {
    /// The carrier without a client id.
    @discardableResult
    public func sendExpansionChange(_ delta: ExpansionDelta, of target: MessageID, in conversation: ConversationRef,
                                    by user: UserID) async throws -> Message {
        try await sendExpansionChange(delta, of: target, in: conversation, by: user, clientID: nil)
    }
}

/// Emoji reactions: the same user adding the same emoji again removes it.
public protocol Reacting: IMBackend {
    /// Returns true when the reaction was added, false when it was removed.
    func toggleReaction(_ emoji: String, on message: MessageID, in conversation: ConversationRef,
                        by user: UserID) async throws -> Bool
    func reactions(on message: MessageID, in conversation: ConversationRef) async throws -> [Reaction]
}

/// Read state.
public protocol ReadReceipting: IMBackend {
    /// Marks everything in the conversation up to and including `message` read for `user`.
    func markRead(_ conversation: ConversationRef, by user: UserID, upTo message: MessageID) async throws
    func readCounts(of message: MessageID, in conversation: ConversationRef) async throws -> ReadCounts
}

/// Moving media in and out of the backend's file store.
public protocol MediaTransferring: IMBackend {
    /// Uploads an attachment in `needsUpload` state; returns it `uploaded` with its remote URL.
    func upload(_ attachment: MediaAttachment) async throws -> MediaAttachment
    /// Fetches an attachment in `needsDownload` state into `directory`; returns it `downloaded`.
    func download(_ attachment: MediaAttachment, into directory: String) async throws -> MediaAttachment
}

/// One row of a user's conversation list.
public struct ConversationSummary: Hashable, Sendable, Codable {
    public var conversation: ConversationRef
    public var lastMessage: Message?
    public var unreadCount: Int
    public var isMuted: Bool
    /// Time of the last message (or of creation), milliseconds; the list is sorted by it, newest first.
    public var updatedAt: Int64
    public var mentionsMe: Bool
    /// Pinned to the top (`ConversationStateSetting.setPinned`); pinned conversations are listed first.
    public var isPinned: Bool
    public init(conversation: ConversationRef, lastMessage: Message?, unreadCount: Int, isMuted: Bool, updatedAt: Int64,
                mentionsMe: Bool = false, isPinned: Bool = false) {
        self.conversation = conversation
        self.lastMessage = lastMessage
        self.unreadCount = unreadCount
        self.isMuted = isMuted
        self.updatedAt = updatedAt
        self.mentionsMe = mentionsMe
        self.isPinned = isPinned
    }
}

/// Per-user conversation lists and unread counts.
public protocol ConversationListing: IMBackend {
    /// Newest first.
    func conversations(for user: UserID) async throws -> [ConversationSummary]
    func unreadCount(in conversation: ConversationRef, for user: UserID) async throws -> Int
    /// Sum of unread counts over conversations the user has not muted.
    func totalUnread(for user: UserID) async throws -> Int
    func setMuted(_ muted: Bool, conversation: ConversationRef, for user: UserID) async throws
}

/// Per-user conversation state beyond the list (the WuKongIM SDK guide's conversation manager: clearing a
/// conversation's unread count, 置顶 pinning, @-reminders with a done state). Which of these a vendor's
/// server API offers is `Capabilities.conversationState`; the rest are refused with `unsupported`.
public protocol ConversationStateSetting: ConversationListing {
    /// Everything in the conversation becomes read for `user` (no read receipt is sent).
    func clearUnread(in conversation: ConversationRef, for user: UserID) async throws
    /// Pins the conversation to the top of `user`'s list (listed first, newest first among pinned).
    func setPinned(_ pinned: Bool, conversation: ConversationRef, for user: UserID) async throws
    /// `user`'s @-reminders in the conversation (messages mentioning them or everyone), oldest first.
    func reminders(in conversation: ConversationRef, for user: UserID) async throws -> [ConversationReminder]
    /// Marks one reminder done: it stays listed, with `done` set.
    func markReminderDone(_ message: MessageID, in conversation: ConversationRef, for user: UserID) async throws
}

/// Conversation state operations a vendor's server API offers (`Capabilities.conversationState`).
public enum ConversationStateOperation: String, Hashable, Sendable, Codable, CaseIterable {
    case clearUnread = "clear_unread"
    case pinning
    case reminders
}

/// One @-reminder: a message that mentions the user (`all`: through @all), and whether it was dealt with.
public struct ConversationReminder: Hashable, Sendable, Codable {
    public var messageID: MessageID
    public var sender: UserID
    public var all: Bool
    public var done: Bool
    public init(messageID: MessageID, sender: UserID, all: Bool, done: Bool = false) {
        self.messageID = messageID
        self.sender = sender
        self.all = all
        self.done = done
    }
}

/// A user as the backend should know them.
public struct UserProfile: Hashable, Sendable, Codable {
    public var id: UserID
    public var name: String?
    public var avatar: String?
    /// The vendor's other profile fields, under the vendor's own names (NIM `sign`, `ex`; JMessage
    /// `signature`, `extras`; …). A migration carries them over where the target has a field of that name
    /// and keeps the rest in the target's free-form field where it has one.
    public var extra: [String: JSONValue]
    public init(id: UserID, name: String? = nil, avatar: String? = nil, extra: [String: JSONValue] = [:]) {
        self.id = id
        self.name = name
        self.avatar = avatar
        self.extra = extra
    }

    private enum CodingKeys: String, CodingKey { case id, name, avatar, extra }
    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        id = try c.decode(UserID.self, forKey: .id)
        name = try c.decodeIfPresent(String.self, forKey: .name)
        avatar = try c.decodeIfPresent(String.self, forKey: .avatar)
        extra = try c.decodeIfPresent([String: JSONValue].self, forKey: .extra) ?? [:]
    }
}

/// A group (WuKong group channel, RongCloud group, NIM team, JMessage group) as the backend knows it.
public struct GroupProfile: Hashable, Sendable, Codable {
    /// The backend's id. Vendors that assign ids themselves (NIM `tid`, JMessage `gid`) ignore it on
    /// creation and answer with theirs.
    public var id: GroupID
    public var name: String?
    public var avatar: String?
    /// The owner (NIM and JMessage need one to create a group); nil where the vendor has no owner.
    public var owner: UserID?
    /// Every member, the owner included, in the backend's order.
    public var members: [UserID]
    public var announcement: String?
    /// The vendor's other group fields under its own names (NIM `intro`, `custom`; …).
    public var extra: [String: JSONValue]
    public init(id: GroupID, name: String? = nil, avatar: String? = nil, owner: UserID? = nil, members: [UserID] = [],
                announcement: String? = nil, extra: [String: JSONValue] = [:]) {
        self.id = id
        self.name = name
        self.avatar = avatar
        self.owner = owner
        self.members = members
        self.announcement = announcement
        self.extra = extra
    }

    /// The group's conversation.
    public var conversation: ConversationRef { .group(id) }
}

/// Creating users on demand (bridge puppets). Creating an existing user is not an error.
public protocol UserProvisioning: IMBackend {
    func ensureUser(_ profile: UserProfile) async throws
}

/// Finding a message by the idempotency key it was sent with (WuKong `GET /message/byclientmsgno`).
/// The bridge asks before re-sending something whose earlier attempt may have reached the vendor
/// (a crash between the vendor's accept and our commit), so that it is never written twice.
///
/// `viewer`: a user who can read the conversation (the bridge passes the copy's own sender, who just wrote
/// into it), for vendors whose group history is read as a member (NIM); others ignore it.
public protocol ClientIDLookup: IMBackend {
    func message(withClientID id: ClientMessageID, in conversation: ConversationRef, readingAs viewer: UserID?) async throws -> Message?
    /// Every message carrying `id`, oldest first, on a vendor that keeps two sends with one client id as
    /// two messages (WuKongIM); by default the one `message(withClientID:)` finds.
    func messages(withClientID id: ClientMessageID, in conversation: ConversationRef, readingAs viewer: UserID?) async throws -> [Message]
}

extension ClientIDLookup {
    public func messages(withClientID id: ClientMessageID, in conversation: ConversationRef, readingAs viewer: UserID?) async throws -> [Message] {
        try await message(withClientID: id, in: conversation, readingAs: viewer).map { [$0] } ?? []
    }

    /// The lookup as whoever the backend's settings name (or need none).
    public func message(withClientID id: ClientMessageID, in conversation: ConversationRef) async throws -> Message? {
        try await message(withClientID: id, in: conversation, readingAs: nil)
    }
}

/// Reading and writing user profiles (whole-account migration). `ensureUser` (from `UserProvisioning`)
/// creates a missing user and leaves an existing one alone; `saveUser` also brings an existing one up to
/// date.
public protocol UserDirectory: UserProvisioning {
    /// The profiles of those of `ids` that exist, in the order asked; unknown ids are left out.
    func users(_ ids: [UserID]) async throws -> [UserProfile]
    /// Creates the user or updates name, avatar and extra fields.
    func saveUser(_ profile: UserProfile) async throws
    /// Every user the backend can enumerate. Throws `unsupported` where the vendor's server API cannot
    /// list users (then a migration takes its users from groups, conversations or a list given to it).
    func allUsers() async throws -> [UserID]
}

/// Reading and writing groups and their members (whole-account migration).
public protocol GroupDirectory: IMBackend {
    /// The group, or nil when it does not exist.
    func group(_ id: GroupID) async throws -> GroupProfile?
    /// Creates the group with its members and returns the id the backend gave it (`profile.id` where
    /// the vendor lets the caller choose).
    func createGroup(_ profile: GroupProfile) async throws -> GroupID
    /// Brings an existing group up to `profile`: name, avatar and announcement set, members that are
    /// missing added (members are never removed). `profile.id` is the backend's id.
    func updateGroup(_ profile: GroupProfile) async throws
    /// Every group the backend can enumerate. Throws `unsupported` where the vendor cannot list groups
    /// (WuKongIM cannot list channels; RongCloud and NIM list only a user's groups).
    func allGroups() async throws -> [GroupID]
    /// The groups `user` is a member of (RongCloud `/user/group/query.json`, NIM `/team/joinTeams.action`,
    /// JMessage `/v1/users/{username}/groups/`). Throws `unsupported` where the vendor cannot say.
    func groups(of user: UserID) async throws -> [GroupID]
}

/// Taking members out of a group: what live relay uses to keep a target group's puppets in step with the
/// source group's members (docs/architecture.md, "Groups"). `updateGroup` never removes anyone; this is
/// the one call that does.
public protocol GroupMemberRemoving: GroupDirectory {
    /// Removes `members` from the group; ids that are not members are skipped. A group whose last member
    /// is removed may cease to exist (RongCloud).
    func removeMembers(_ members: [UserID], from group: GroupID) async throws
}

/// Dissolving a group: what live relay uses when a source group is dissolved (docs/architecture.md,
/// "Portals"). Afterwards the vendor takes no message into it (as `GroupSendRefusals.dissolvedGroup`
/// says).
public protocol GroupDissolving: GroupDirectory {
    /// Dissolves the group. A group that does not exist (any more) is not an error, so that a retry after
    /// a lost answer succeeds.
    func dissolveGroup(_ group: GroupID) async throws
}

/// Who receives a group's messages where the vendor keeps a group as a channel with subscribers, which its
/// group directory may not describe (WuKongIM without a business-server record): a group the source does
/// not describe is set up on the target with these as its members (docs/architecture.md, "Portals").
public protocol GroupSubscriberListing: IMBackend {
    /// The group channel's subscribers (none for a channel the vendor does not have).
    func subscribers(of group: GroupID) async throws -> [UserID]
}

/// Listing every conversation a backend holds (server view), for `imbridge migrate --all`.
public protocol ConversationDiscovery: IMBackend {
    func allConversations() async throws -> [ConversationRef]
}
