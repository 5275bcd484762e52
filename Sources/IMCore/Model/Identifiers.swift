/// A string-backed identifier. Every id in the neutral model has its own type so that a user id can
/// never be passed where a message id is expected; codecs convert vendor strings at the edge and no
/// bare `String` id travels past them.
public protocol StringIdentifier: RawRepresentable, Hashable, Comparable, Codable, Sendable,
    ExpressibleByStringLiteral, CustomStringConvertible where RawValue == String {
    init(_ rawValue: String)
}

extension StringIdentifier {
    public init(rawValue: String) { self.init(rawValue) }
    public init(stringLiteral value: String) { self.init(value) }
    public var description: String { rawValue }
    public static func < (lhs: Self, rhs: Self) -> Bool { lhs.rawValue < rhs.rawValue }
    public init(from decoder: any Decoder) throws {
        self.init(try decoder.singleValueContainer().decode(String.self))
    }
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(rawValue)
    }
}

/// The name of a configured backend (`wk`, `rc`, …), unique within one bridge configuration.
public struct BackendID: StringIdentifier {
    public let rawValue: String
    public init(_ rawValue: String) { self.rawValue = rawValue }
}

/// A user as the backend names it (WuKong `uid`, RongCloud `userId`, NIM `accid`, JMessage `username`).
public struct UserID: StringIdentifier {
    public let rawValue: String
    public init(_ rawValue: String) { self.rawValue = rawValue }
}

/// A group as the backend names it (WuKong group channel id, RongCloud `groupId`, NIM `tid`, JMessage `gid`).
public struct GroupID: StringIdentifier {
    public let rawValue: String
    public init(_ rawValue: String) { self.rawValue = rawValue }
}

/// The backend's own id for a stored message (WuKong `message_id`, RongCloud `msgUID`, NIM `msgid`,
/// JMessage `msg_id`). Always a string, even where the vendor uses a number.
public struct MessageID: StringIdentifier {
    public let rawValue: String
    public init(_ rawValue: String) { self.rawValue = rawValue }
}

/// The sender-chosen idempotency key (WuKong `client_msg_no`, RongCloud `msgRandom`, NIM `msgid`
/// parameter …). Two sends with the same key to one backend produce one message where the vendor
/// supports it; the bridge prefixes its own keys so that it recognises its echo.
public struct ClientMessageID: StringIdentifier {
    public let rawValue: String
    public init(_ rawValue: String) { self.rawValue = rawValue }
}

/// A stable identity for one event, unchanged when the vendor redelivers the same callback.
public struct EventID: StringIdentifier {
    public let rawValue: String
    public init(_ rawValue: String) { self.rawValue = rawValue }
}
