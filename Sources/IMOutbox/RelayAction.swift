import IMCore

/// One unit of work for a lane, stored as the outbox payload (JSON). Message references name the
/// **source** message; the executor resolves them through the id map when it runs, so an edit queued
/// behind its original's send finds the id the send produced.
public enum RelayAction: Sendable, Hashable, Codable {
    /// Send a translated message and map it to `source`. `replyToSource` is resolved at send time.
    case send(outgoing: OutgoingMessage, source: MessageID, replyToSource: MessageID?)
    /// Send a fallback notice (not mapped).
    case notice(outgoing: OutgoingMessage, replyToSource: MessageID?)
    case edit(source: MessageID, by: UserID, content: MessageContent)
    case recall(source: MessageID, by: UserID)
    /// Delete the copy of `source` for everyone (`forUser` nil) or from the target user `forUser`'s view
    /// (docs/mappings.md, "Deletion").
    case delete(source: MessageID, by: UserID, forUser: UserID?)
    case expansion(source: MessageID, by: UserID, delta: ExpansionDelta)
    case reaction(source: MessageID, by: UserID, emoji: String, added: Bool)
    case read(upToSource: MessageID, by: UserID)
    /// Bring the target user `puppet` up to the profile (name, avatar) that `source` has on the source
    /// backend, read when the entry runs (docs/architecture.md, "Profiles"). Its lane is the puppet's
    /// own (`ProfileCheckpoint.lane`), so a failing profile write never holds a message back.
    case profile(source: UserID, puppet: UserID)
    /// Create the group `target` on the target backend, or bring it up to the source group `source`
    /// (name, avatar, announcement, owner, members as `users` names them there), read when the entry runs
    /// (docs/architecture.md, "Groups"). Queued ahead of a group's first relayed event, and for periodic
    /// comparisons in a lane of its own. A nil `target` is the group the conversation map (`PortalMap`)
    /// names for `source`, created — with the id the target gives — and recorded there when it has none.
    case group(source: GroupID, target: GroupID?, users: UserMode)
    /// Create the user `profile.id` on the target with `profile`, or bring its name, avatar and extra
    /// fields up to it (`Delivery.bringUser`): a migration's user phase (docs/migration.md). `known`: the
    /// source described the user (else `profile` is the bare id, written only where the user is missing).
    case user(profile: UserProfile, known: Bool)
    /// Take back a copy of `source` this bridge left on the target after another instance had taken the
    /// lane over: `copy` when the late attempt was answered, else the copy the earlier-copy search finds
    /// for `outgoing` (with its client id) stored since `attemptAt` — unless it is the copy the id map names
    /// (the other instance found it instead of sending its own). Queued by the instance whose late attempt
    /// the fence caught (docs/high-availability.md, "Fenced deliveries").
    case retract(source: MessageID, copy: MessageID?, outgoing: OutgoingMessage, attemptAt: Int64)
    /// Take back an expansion carrier (a target keeping no expansions, NIM) this bridge left on the target
    /// after another instance had taken the lane over and sent its own: of the carriers of `source`'s copy
    /// with `clientID` (the `expansion` entry's), sent by `by`, the oldest stays and the others are recalled
    /// (docs/high-availability.md, "Fenced deliveries").
    case retractCarrier(source: MessageID, by: UserID, clientID: ClientMessageID, attemptAt: Int64)
    /// The source group `source` was dissolved (by `by`, where the vendor says): dissolve the target group
    /// (`GroupDissolving`), or — `keep`, the route's `on_dissolve: keep`, or a target that cannot dissolve
    /// groups — leave it and send `notice` into it. Queued in the group's lane, after its earlier events
    /// (docs/architecture.md, "Portals").
    case dissolve(source: GroupID, keep: Bool, notice: OutgoingMessage)

    public var kindName: String {
        switch self {
        case .send: "send"
        case .notice: "notice"
        case .edit: "edit"
        case .recall: "recall"
        case .delete: "delete"
        case .expansion: "expansion"
        case .reaction: "reaction"
        case .read: "read"
        case .profile: "profile"
        case .group: "group"
        case .user: "user"
        case .retract: "retract"
        case .retractCarrier: "retractCarrier"
        case .dissolve: "dissolve"
        }
    }
}

/// What translation decided for one leg: the actions to queue and the fallbacks it applied.
package struct Planned: Sendable {
    package var actions: [RelayAction] = []
    /// (feature name, policy): a `Feature` raw value, or `text_length` for cut texts.
    package var fallbacks: [(feature: String, policy: FallbackPolicy)] = []

    package init() {}
}
