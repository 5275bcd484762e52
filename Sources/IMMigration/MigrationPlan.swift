import Foundation
import IMAdapterKit
import IMCore
import IMStore
import IMRelay
import IMOutbox

/// What to migrate.
public struct MigrationPlan: Sendable {
    public var source: BackendID
    public var target: BackendID
    /// Source conversation → target conversation. A group whose target is its own id is created on the
    /// target (or found in the store's group map) before its history when `account` is on, and its
    /// history goes into the group the target gave (`targetConversation(for:users:)` names the default
    /// target of a conversation).
    public var conversations: [(ConversationRef, ConversationRef)]
    public var sinceMs: Int64?
    public var untilMs: Int64?
    public var dryRun: Bool
    /// How senders appear on the target. Default: the same ids (`.puppet(prefix: "")`) — an app that
    /// changes vendor keeps its users.
    public var users: UserMode
    public var pageSize: Int
    /// `.rehost` (default): attachments are fetched from the source and uploaded to a target that stores
    /// files, so the copies outlive the source account; `.link` keeps the source's URLs.
    public var media: Route.Media
    /// Bring the account along: the profiles of the users (given, group members, direct participants,
    /// senders) and the groups (name, avatar, announcement, owner, members) before the history. Off:
    /// history only, into conversations that must exist.
    public var account: Bool
    /// Users and groups to migrate besides those the conversations need (`--all`, `--account-file`).
    public var extraUsers: [UserID]
    public var extraGroups: [GroupID]
    /// Conversations copied at once (one lane each, order kept inside each); the target's rate limit
    /// is shared by all lanes.
    public var parallel: Int
    /// Said in the report's account notes (what the scope could not enumerate, `AccountScope.notes`).
    public var notes: [String] = []

    public init(source: BackendID, target: BackendID, conversations: [(ConversationRef, ConversationRef)], sinceMs: Int64? = nil,
                untilMs: Int64? = nil, dryRun: Bool = false, users: UserMode? = nil, pageSize: Int = 100, media: Route.Media = .rehost,
                account: Bool = true, extraUsers: [UserID] = [], extraGroups: [GroupID] = [], parallel: Int = MigrationPlan.defaultParallel) {
        self.media = media
        self.source = source
        self.target = target
        self.conversations = conversations
        self.sinceMs = sinceMs
        self.untilMs = untilMs
        self.dryRun = dryRun
        self.users = users ?? .puppet(prefix: "")
        self.pageSize = pageSize
        self.account = account
        self.extraUsers = extraUsers
        self.extraGroups = extraGroups
        self.parallel = max(1, parallel)
    }

    /// Conversations copied at once unless told otherwise.
    public static let defaultParallel = 8

    /// Where a conversation goes by default: a direct conversation between the users' target ids (the
    /// puppets' pair with a prefix), anything else under its own id.
    public static func targetConversation(for conversation: ConversationRef, users: UserMode) -> ConversationRef {
        guard conversation.kind == .direct, case .puppet(let prefix) = users, !prefix.isEmpty else { return conversation }
        let pair = conversation.participants
        guard pair.count == 2 else { return conversation }
        return .direct(UserID(prefix + pair[0].rawValue), UserID(prefix + pair[1].rawValue))
    }

    /// The target id of a source user.
    public func targetUser(_ user: UserID) -> UserID {
        switch users {
        case .puppet(let prefix): UserID(prefix + user.rawValue)
        case .relay(let account, _): account
        }
    }
}

/// Progress as it happens: `done` messages handled of `total` when known.
public struct MigrationProgress: Sendable {
    public var conversation: String
    public var done: Int
    public var total: Int?
    public var startedAt: Date
}
