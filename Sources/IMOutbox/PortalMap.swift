import IMCore
import IMStore

/// The conversation map the bridge keeps itself (docs/architecture.md, "Groups"): which group on a
/// target stands for a source group, for targets that give new groups ids of their own (NIM `tid`,
/// JMessage `gid`, WuKong's business-server `group_no`). Kept as store checkpoints, so every instance,
/// `imbridge migrate` and `imbridge verify` on the store read the same map:
///
/// - `portal:<source>:<conversation>-><target>` holds the target conversation's id;
/// - `…:pending` holds the time a creation was asked for and is cleared when its id is recorded: a
///   creation whose answer was lost (a crash, a timeout) leaves it set, and the next attempt looks for
///   that group among the owner's groups on the target (`Delivery.earlierGroup`) before creating one.
public enum PortalMap {
    public static func key(source: BackendID, conversation: ConversationRef, target: BackendID) -> String {
        "portal:\(source):\(conversation)->\(target)"
    }

    package static func pendingKey(_ key: String) -> String { key + ":pending" }

    /// The prefix of migration's own group map of earlier versions (`migrate-group:<source>:<group>-><target>`).
    package static let legacyPrefix = "migrate-group:"

    /// The target group `key` names, if any.
    package static func group(_ key: String, _ tx: StoreTransaction) throws -> GroupID? {
        try tx.checkpoint(key).flatMap { $0.isEmpty ? nil : GroupID($0) }
    }

    /// Records `id` for `key` and clears its pending creation.
    package static func record(_ id: GroupID, for key: String, at now: Int64, _ tx: StoreTransaction) throws {
        try tx.setCheckpoint(key, id.rawValue, at: now)
        try tx.setCheckpoint(pendingKey(key), "", at: now)
    }

    /// Records that `target`'s group `id` stands for `source`'s `group`, in both directions (events of the
    /// target group relayed back find the source group), and clears the pending creation.
    package static func link(_ group: GroupID, on source: BackendID, to id: GroupID, on target: BackendID, at now: Int64,
                             _ tx: StoreTransaction) throws {
        try record(id, for: key(source: source, conversation: .group(group), target: target), at: now, tx)
        try tx.setCheckpoint(key(source: target, conversation: .group(id), target: source), group.rawValue, at: now)
    }

    /// Forgets the portal of `source`'s `group` on `target`, both directions; returns the target group it named.
    package static func unlink(_ group: GroupID, on source: BackendID, target: BackendID, at now: Int64,
                               _ tx: StoreTransaction) throws -> GroupID? {
        let forward = key(source: source, conversation: .group(group), target: target)
        guard let id = try self.group(forward, tx) else { return nil }
        try tx.setCheckpoint(forward, "", at: now)
        let back = key(source: target, conversation: .group(id), target: source)
        if try self.group(back, tx) == group { try tx.setCheckpoint(back, "", at: now) }
        return id
    }

    /// One recorded portal: `source`'s `group` is `target`'s `targetGroup`.
    public struct Portal: Sendable, Equatable, Codable {
        public var source: BackendID
        public var group: GroupID
        public var target: BackendID
        public var targetGroup: GroupID
        /// When it was recorded (ms since 1970).
        public var since: Int64?
    }

    /// Every portal in the map, each once (the direction it was recorded in first, by time): the reverse
    /// entry `link` writes is not listed again.
    package static func all(_ tx: StoreTransaction) throws -> [Portal] {
        var found: [Portal] = []
        var seen = Set<String>()
        for (name, value) in try tx.checkpoints(prefix: "portal:") where !value.isEmpty && !name.hasSuffix(":pending") {
            guard let parsed = parse(name) else { continue }
            let portal = Portal(source: parsed.source, group: parsed.group, target: parsed.target, targetGroup: GroupID(value))
            let pair = [("\(portal.source)|\(portal.group)"), ("\(portal.target)|\(portal.targetGroup)")].sorted().joined(separator: "~")
            guard seen.insert(pair).inserted else { continue }
            found.append(portal)
        }
        return found
    }

    /// The parts of a map key (`portal:<source>:group:<group>-><target>`).
    static func parse(_ name: String) -> (source: BackendID, group: GroupID, target: BackendID)? {
        guard name.hasPrefix("portal:"), let arrow = name.range(of: "->", options: .backwards) else { return nil }
        let head = name[name.index(name.startIndex, offsetBy: 7)..<arrow.lowerBound]
        guard let colon = head.firstIndex(of: ":"), head[head.index(after: colon)...].hasPrefix("group:") else { return nil }
        let group = head[head.index(colon, offsetBy: 7)...]
        return (BackendID(String(head[..<colon])), GroupID(String(group)), BackendID(String(name[arrow.upperBound...])))
    }

    // MARK: lanes

    /// The lane kind of a portal (`LaneKey.conversation` `.other("portal", "<source>:<group>")`).
    public static let laneKind = "portal"

    /// The lane of everything relayed from `source`'s `group` into its portal on `target`: named after the
    /// source group, so that it is the same before the target group exists and after, and the group's
    /// creation runs ahead of its first message.
    public static func lane(target: BackendID, source: BackendID, group: GroupID) -> LaneKey {
        LaneKey(backend: target, conversation: .other(laneKind, "\(source):\(group)"))
    }

    /// The source group a portal lane carries, nil for any other lane.
    public static func source(of lane: LaneKey) -> (backend: BackendID, group: GroupID)? {
        guard case .other(laneKind) = lane.conversation.kind, let colon = lane.conversation.id.firstIndex(of: ":") else { return nil }
        let id = lane.conversation.id
        return (BackendID(String(id[..<colon])), GroupID(String(id[id.index(after: colon)...])))
    }

    /// Every target group some source group is mapped to on `target` (so a search for a lost creation never
    /// takes one of them). `legacy` names other prefixes kept by earlier versions (migration's own map).
    package static func mapped(on target: BackendID, _ tx: StoreTransaction, legacy: [String] = []) throws -> Set<String> {
        var taken = Set<String>()
        for prefix in ["portal:"] + legacy {
            for (name, value) in try tx.checkpoints(prefix: prefix)
            where name.hasSuffix("->\(target)") && !value.isEmpty { taken.insert(value) }
        }
        return taken
    }
}

/// What an account entry (`RelayAction.user`, `.group`) did, as the executor writes it in the
/// checkpoint its migration mark names (`MigrationMark.outcome`) and the migration reads for its report.
public enum AccountOutcome: Sendable, Equatable {
    case userCreated, userUpdated, userUnchanged, userProvisioned, userSkipped
    case groupCreated(GroupID)
    case groupUpdated(GroupID, membersAdded: Int)
    case groupUnchanged(GroupID)
    /// The source does not describe the group (no directory, unsupported, or no such group).
    case groupUndescribed

    public var text: String {
        switch self {
        case .userCreated: "user:created"
        case .userUpdated: "user:updated"
        case .userUnchanged: "user:unchanged"
        case .userProvisioned: "user:provisioned"
        case .userSkipped: "user:skipped"
        case .groupCreated(let id): "group:created:\(id.rawValue)"
        case .groupUpdated(let id, let added): "group:updated:\(added):\(id.rawValue)"
        case .groupUnchanged(let id): "group:unchanged:\(id.rawValue)"
        case .groupUndescribed: "group:undescribed"
        }
    }

    public init?(text: String) {
        let parts = text.split(separator: ":", maxSplits: 3, omittingEmptySubsequences: false).map(String.init)
        switch (parts.first, parts.count > 1 ? parts[1] : nil) {
        case ("user", "created"): self = .userCreated
        case ("user", "updated"): self = .userUpdated
        case ("user", "unchanged"): self = .userUnchanged
        case ("user", "provisioned"): self = .userProvisioned
        case ("user", "skipped"): self = .userSkipped
        case ("group", "undescribed"): self = .groupUndescribed
        case ("group", "created") where parts.count == 3: self = .groupCreated(GroupID(parts[2]))
        case ("group", "unchanged") where parts.count == 3: self = .groupUnchanged(GroupID(parts[2]))
        case ("group", "updated") where parts.count == 4:
            guard let added = Int(parts[2]) else { return nil }
            self = .groupUpdated(GroupID(parts[3]), membersAdded: added)
        default: return nil
        }
    }

    public init(_ outcome: Delivery.GroupOutcome) {
        switch outcome {
        case .created(let id): self = .groupCreated(id)
        case .updated(let id, let added): self = .groupUpdated(id, membersAdded: added)
        case .unchanged(let id): self = .groupUnchanged(id)
        }
    }
}
