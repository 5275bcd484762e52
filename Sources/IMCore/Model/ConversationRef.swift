/// Where a message lives.
///
/// Rules enforced here:
/// - A **direct** conversation is the *unordered* pair of its two users: `direct("bob", "alice")` and
///   `direct("alice", "bob")` are equal, hash alike, and share the canonical id `"alice,bob"` (sorted,
///   comma-joined). Vendors that name a person conversation by the peer (WuKong's `channel_id`,
///   RongCloud's `targetId`) are normalised into this form by their codec, so the bridge never has to
///   know who was looking.
/// - Every other kind is named by one id as the backend names it.
public struct ConversationRef: Hashable, Sendable, Codable, CustomStringConvertible {
    public enum Kind: Hashable, Sendable, Codable, CustomStringConvertible {
        case direct, group, chatroom, system
        case other(String)

        public init(_ name: String) {
            switch name {
            case "direct": self = .direct
            case "group": self = .group
            case "chatroom": self = .chatroom
            case "system": self = .system
            default: self = .other(name)
            }
        }

        public var description: String {
            switch self {
            case .direct: "direct"
            case .group: "group"
            case .chatroom: "chatroom"
            case .system: "system"
            case .other(let name): name
            }
        }

        public init(from decoder: any Decoder) throws {
            self.init(try decoder.singleValueContainer().decode(String.self))
        }

        public func encode(to encoder: any Encoder) throws {
            var container = encoder.singleValueContainer()
            try container.encode(description)
        }
    }

    public let kind: Kind
    /// For `direct`, the two user ids sorted and joined by a comma; otherwise the backend's id.
    public let id: String

    /// The canonical direct conversation between two users, in either order.
    public static func direct(_ a: UserID, _ b: UserID) -> ConversationRef {
        let pair = [a.rawValue, b.rawValue].sorted()
        return ConversationRef(uncheckedKind: .direct, id: pair.joined(separator: ","))
    }

    public static func group(_ id: GroupID) -> ConversationRef { ConversationRef(uncheckedKind: .group, id: id.rawValue) }
    public static func chatroom(_ id: String) -> ConversationRef { ConversationRef(uncheckedKind: .chatroom, id: id) }
    public static func system(_ id: String) -> ConversationRef { ConversationRef(uncheckedKind: .system, id: id) }
    public static func other(_ kind: String, _ id: String) -> ConversationRef {
        ConversationRef(uncheckedKind: .other(kind), id: id)
    }

    /// Parses `KIND:ID` (`group:g1`, `direct:alice,bob`); a direct id is re-normalised.
    public init(parsing text: String) throws {
        guard let colon = text.firstIndex(of: ":") else {
            throw IMError(.invalidArgument, "conversation '\(text)' is not KIND:ID")
        }
        let kind = Kind(String(text[..<colon]))
        let id = String(text[text.index(after: colon)...])
        guard !id.isEmpty else { throw IMError(.invalidArgument, "conversation '\(text)' has an empty id") }
        if kind == .direct {
            let users = id.split(separator: ",", omittingEmptySubsequences: false)
            guard users.count == 2, users.allSatisfy({ !$0.isEmpty }) else {
                throw IMError(.invalidArgument, "direct conversation '\(text)' must name two users: direct:A,B")
            }
            self = .direct(UserID(String(users[0])), UserID(String(users[1])))
        } else {
            self.init(uncheckedKind: kind, id: id)
        }
    }

    private init(uncheckedKind kind: Kind, id: String) {
        self.kind = kind
        self.id = id
    }

    public init(from decoder: any Decoder) throws {
        try self.init(parsing: try decoder.singleValueContainer().decode(String.self))
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(description)
    }

    /// The two users of a direct conversation; empty for every other kind.
    public var participants: [UserID] {
        guard kind == .direct else { return [] }
        return id.split(separator: ",").map { UserID(String($0)) }
    }

    /// For a direct conversation, the user who is not `user` (nil if `user` is not a participant).
    public func peer(of user: UserID) -> UserID? {
        let users = participants
        guard users.count == 2 else { return nil }
        if users[0] == user { return users[1] }
        if users[1] == user { return users[0] }
        return nil
    }

    public var groupID: GroupID? { kind == .group ? GroupID(id) : nil }

    /// `KIND:ID`, the form used in configuration and logs.
    public var description: String { "\(kind):\(id)" }
}
