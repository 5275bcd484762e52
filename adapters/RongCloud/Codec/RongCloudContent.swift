import IMCore

/// A RongCloud `content` decoded into the neutral model.
///
/// `leftovers` are the content JSON fields the neutral model has no home for (`user`, `extra`,
/// `mentionedInfo.mentionedContent`, a quote's `referMsg`, …). The message codec keeps them in
/// `Message.vendorExtras[RongCloudContent.leftoversKey]`, and encoding merges them back, so a
/// RongCloud → neutral → RongCloud round trip yields the same JSON value.
public struct RongCloudContent: Hashable, Sendable {
    public var content: MessageContent
    public var mentions: Mentions
    public var reply: ReplyRef?
    public var leftovers: [String: JSONValue]

    /// The `vendorExtras` key holding `leftovers`. Its presence marks a message that came from
    /// RongCloud; fields the neutral model does not carry (a file's `type`) are derived only for
    /// messages without it.
    public static let leftoversKey = "rongcloud.content"

    public init(content: MessageContent, mentions: Mentions = Mentions(), reply: ReplyRef? = nil,
                leftovers: [String: JSONValue] = [:]) {
        self.content = content
        self.mentions = mentions
        self.reply = reply
        self.leftovers = leftovers
    }
}

/// The wire form of a content: `objectName` and the `content` text.
public struct RongCloudWireContent: Hashable, Sendable {
    public var objectName: String
    public var content: String
    public init(objectName: String, content: String) {
        self.objectName = objectName
        self.content = content
    }
}

/// Reading mapped fields out of a content object while collecting what is left.
struct ContentFields {
    var remaining: [String: JSONValue]

    init(_ object: [String: JSONValue]) { remaining = object }

    mutating func take(_ key: String) -> JSONValue? {
        guard let value = remaining.removeValue(forKey: key) else { return nil }
        return value == .null ? nil : value
    }

    mutating func string(_ key: String) -> String? { take(key)?.stringValue }
}

/// Building a content object from neutral values: absent values are left out.
struct ContentObject {
    private(set) var object: [String: JSONValue] = [:]

    subscript(key: String) -> JSONValue? {
        get { object[key] }
        set { object[key] = newValue }
    }

    mutating func set(_ key: String, _ value: String?) { if let value { object[key] = .string(value) } }

    /// Adds leftovers for keys this object did not write; nested objects merge one level deep.
    mutating func merge(_ leftovers: [String: JSONValue]) {
        for (key, value) in leftovers {
            if case .object(let extra)? = object[key], case .object(let nested) = value {
                object[key] = .object(extra.merging(nested) { mine, _ in mine })
            } else if object[key] == nil {
                object[key] = value
            }
        }
    }

    var json: String { JSONValue.object(object).jsonString() }
}
