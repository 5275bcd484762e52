/// The NIM v1 message `type` numbers (server API) and their copy-callback `msgType` names.
///
/// Only the types below exist on the wire; a number not listed here is kept by the codec as
/// `.unsupported` with its raw body (docs/adapters/nim.md).
public enum NIMMessageType: Int, Hashable, Sendable, CaseIterable {
    case text = 0
    case image = 1
    case voice = 2
    case video = 3
    case location = 4
    /// Team notification: appears in history and copies, cannot be sent.
    case notification = 5
    case file = 6
    case tip = 10
    /// Robot message: a history filter value only.
    case robot = 11
    case custom = 100

    /// The `msgType` string the message-copy callback uses (`TEXT`, `PICTURE` …).
    public var copyName: String {
        switch self {
        case .text: "TEXT"
        case .image: "PICTURE"
        case .voice: "AUDIO"
        case .video: "VIDEO"
        case .location: "LOCATION"
        case .notification: "NOTIFICATION"
        case .file: "FILE"
        case .tip: "TIPS"
        case .robot: "ROBOT"
        case .custom: "CUSTOM"
        }
    }

    /// The type a copy-callback `msgType` names (case-insensitive); nil for names that are not chat
    /// message types (`NRTC_NETCALL`, friend and team system notices …).
    public init?(copyName: String) {
        guard let match = Self.allCases.first(where: { $0.copyName == copyName.uppercased() }) else { return nil }
        self = match
    }

    /// Whether `/msg/sendMsg.action` accepts the type.
    public var isSendable: Bool { self != .notification && self != .robot }
}

/// The `ope` / `convType` side of a NIM conversation.
public enum NIMConversationType: Hashable, Sendable {
    /// `ope` 0, `convType` PERSON, recall type 7.
    case person
    /// `ope` 1 (advanced team), `convType` TEAM, recall type 8.
    case team
    /// `convType` SUPER_TEAM, recall eventType 25 (copies only; the adapter does not send to super teams).
    case superTeam

    public var ope: Int {
        switch self {
        case .person: 0
        case .team, .superTeam: 1
        }
    }

    /// The `type` value of `/msg/recall.action`.
    public var recallType: Int {
        switch self {
        case .person: 7
        case .team, .superTeam: 8
        }
    }
}
