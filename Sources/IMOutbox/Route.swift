import IMCore

/// What to do when the target lacks a feature the event needs.
public enum FallbackPolicy: String, Sendable, Codable, Hashable {
    /// Send a short notice message into the target conversation (`✎ 新内容`, `[消息已撤回]`, `status → paid` …).
    case notice
    /// Drop the event (counted in /metrics).
    case drop
}

/// How senders appear on the target.
public enum UserMode: Sendable, Hashable, Codable {
    /// Each source user is a puppet on the target named `prefix + user` (created where the target needs it).
    case puppet(prefix: String)
    /// Everything is sent by one bridge account; `nameFormat` (`{name}`/`{user}`) is put before texts.
    case relay(account: UserID, nameFormat: String)
}

/// One side of a route: a backend and a conversation, or every conversation of a kind (`id == nil`).
public struct RouteEndpoint: Sendable, Hashable, Codable, CustomStringConvertible {
    public var backend: BackendID
    public var kind: ConversationRef.Kind
    /// nil matches every conversation of `kind` and maps it to the same id on the other side.
    public var id: String?

    public init(backend: BackendID, kind: ConversationRef.Kind, id: String?) {
        self.backend = backend
        self.kind = kind
        self.id = id
    }

    /// Parses `BACKEND:KIND:ID` or `BACKEND:KIND:*` (`wk:group:g1`, `rc:group:*`).
    public init(parsing text: String) throws {
        let parts = text.split(separator: ":", maxSplits: 2, omittingEmptySubsequences: false).map(String.init)
        guard parts.count == 3, !parts[0].isEmpty, !parts[1].isEmpty, !parts[2].isEmpty else {
            throw IMError(.invalidArgument, "route endpoint '\(text)' is not BACKEND:KIND:ID (or BACKEND:KIND:*)")
        }
        backend = BackendID(parts[0])
        kind = ConversationRef.Kind(parts[1])
        id = parts[2] == "*" ? nil : parts[2]
        if let id, kind == .direct { _ = try ConversationRef(parsing: "direct:\(id)") }
    }

    public var description: String { "\(backend):\(kind):\(id ?? "*")" }
}

/// A configured relay between two conversations (or two families of conversations).
public struct Route: Sendable, Hashable, Codable {
    public enum Direction: String, Sendable, Hashable, Codable { case both, forward }
    /// Which target group a wildcard group route relays a source group into, on a target that gives new
    /// groups ids of its own (`group_ids:`, docs/configuration.md).
    public enum GroupIDs: String, Sendable, Hashable, Codable {
        /// A group the bridge sets up there and keeps in the conversation map (a portal; the default).
        case map
        /// The group of the source's id, as it is (groups made by hand under the same ids, or WuKongIM
        /// without a business server, which takes a send into any channel).
        case same
    }
    /// What a source group's dissolution does to its target group (`on_dissolve:`, docs/configuration.md).
    public enum OnDissolve: String, Sendable, Hashable, Codable {
        /// The target group is dissolved too (the default).
        case dissolve
        /// The target group is left as it is, with a notice that the source group was dissolved.
        case keep
    }
    public enum Media: String, Sendable, Hashable, Codable {
        /// Media travel as the source's URLs.
        case link
        /// Media are downloaded from the source and uploaded to the target where both can.
        case rehost
    }

    public var from: RouteEndpoint
    public var to: RouteEndpoint
    public var direction: Direction
    /// Senders on `to` (for traffic from → to).
    public var usersOnTarget: UserMode
    /// Senders on `from` (for traffic to → from, when `direction == .both`).
    public var usersOnSource: UserMode
    public var media: Media
    public var fallbacks: [Feature: FallbackPolicy]
    /// nil: `.map`.
    public var groupIDs: GroupIDs?
    /// nil: `.dissolve`.
    public var onDissolve: OnDissolve?

    public init(from: RouteEndpoint, to: RouteEndpoint, direction: Direction = .both, usersOnTarget: UserMode? = nil,
                usersOnSource: UserMode? = nil, media: Media = .link, fallbacks: [Feature: FallbackPolicy] = [:], groupIDs: GroupIDs? = nil,
                onDissolve: OnDissolve? = nil) {
        self.groupIDs = groupIDs
        self.onDissolve = onDissolve
        self.from = from
        self.to = to
        self.direction = direction
        self.usersOnTarget = usersOnTarget ?? .puppet(prefix: "\(from.backend)_")
        self.usersOnSource = usersOnSource ?? .puppet(prefix: "\(to.backend)_")
        self.media = media
        self.fallbacks = fallbacks
    }

    /// Default policies: edits, recalls, expansions and reactions become notices; read state is dropped.
    public func fallback(for feature: Feature) -> FallbackPolicy {
        fallbacks[feature] ?? (feature == .readReceipts || feature == .commands ? .drop : .notice)
    }
}

/// A route as seen from one event: where it goes and who the senders become.
public struct RouteLeg: Sendable, Hashable {
    public var route: Route
    public var target: BackendID
    public var targetConversation: ConversationRef
    public var users: UserMode
    /// The route names no conversation on the target side (`yx:group:*`): the target conversation is the
    /// source's id, or — on a target that gives groups ids of its own — the one the conversation map
    /// names (`PortalMap`).
    public var targetIsWildcard: Bool
    /// On a route both ways: who the bridge's identities on this leg's source are — the other leg's user
    /// mode, whose puppets there stand for users of this leg's target (`targetUser` maps them back).
    public var sourceIdentities: UserMode?

    package init(route: Route, target: BackendID, targetConversation: ConversationRef, users: UserMode, targetIsWildcard: Bool = false,
                 sourceIdentities: UserMode? = nil) {
        (self.route, self.target, self.targetConversation, self.users) = (route, target, targetConversation, users)
        self.targetIsWildcard = targetIsWildcard
        self.sourceIdentities = sourceIdentities
    }

    /// The target-side user for a source user. A puppet of the other leg (`rc_carol` on WuKong, standing
    /// for RongCloud's `carol`) maps back to the user it stands for, not to a puppet of a puppet
    /// (`wk_rc_carol`): an expansion change the source attributes to the bridge's own puppet is written
    /// back as that user (docs/expansions.md, "Convergence"), and a name that gained a prefix on every
    /// round trip would pass the vendor's id limit. Users of the other leg's relay account stay as they are.
    public func targetUser(_ user: UserID) -> UserID {
        switch users {
        case .puppet(let prefix):
            if case .puppet(let back)? = sourceIdentities, RouteTable.owns(.puppet(prefix: back), user), user.rawValue != back {
                return UserID(String(user.rawValue.dropFirst(back.count)))
            }
            return UserID(prefix + user.rawValue)
        case .relay(let account, _): return account
        }
    }

    /// Maps a conversation's users for direct conversations; groups keep their id.
    package func mapConversation(_ conversation: ConversationRef) -> ConversationRef {
        guard conversation.kind == .direct, case .puppet = users else { return conversation }
        let users = conversation.participants
        return .direct(targetUser(users[0]), targetUser(users[1]))
    }
}
