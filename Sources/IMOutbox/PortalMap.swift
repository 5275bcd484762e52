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
