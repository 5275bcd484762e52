import IMCore

/// A message body as a vendor writes it: the vendor's type name (WuKong `type` 1, RongCloud
/// `RC:TxtMsg`, NIM `type` 0, JMessage `msg_type` `text`, always as a string) and the body's fields
/// (WuKong's payload without `type`, RongCloud's `content`, NIM's `body`, JMessage's `msg_body`).
public struct WireContent: Sendable, Equatable {
    public var type: String
    public var body: [String: JSONValue]

    @inlinable
    public init(type: String, body: [String: JSONValue]) {
        self.type = type
        self.body = body
    }
}

/// Neutral content with what travels beside it in a body: mentions, the quoted reply, and the
/// `vendorExtras` — the vendor's fields that have no neutral form, kept so that writing the message
/// back to the same vendor is exact (the same name as `Message.vendorExtras`, where they travel).
public struct CodedContent: Sendable, Equatable {
    public var content: MessageContent
    public var mentions: Mentions
    public var reply: ReplyRef?
    public var vendorExtras: [String: JSONValue]

    @inlinable
    public init(_ content: MessageContent, mentions: Mentions = Mentions(), reply: ReplyRef? = nil,
                vendorExtras: [String: JSONValue] = [:]) {
        self.content = content
        self.mentions = mentions
        self.reply = reply
        self.vendorExtras = vendorExtras
    }
}

/// Every adapter's content codec: one vendor body ⇄ neutral content, through the vendor's mapping
/// table plus the protocol the tables do not describe (mentions, reply quotes, unmapped custom types).
///
/// Contract: `decode(encode(x))` gives `x` back for every content the vendor can carry, and
/// `encode(decode(w))` gives `w` back for every body the vendor sends (the fields without a neutral
/// form ride in `vendorExtras`). A body that cannot be decoded throws `malformed_payload`; content the
/// vendor cannot carry throws `unsupported`.
public protocol ContentCodec: Sendable {
    func decode(_ wire: WireContent) throws -> CodedContent
    func encode(_ content: CodedContent) throws -> WireContent
}
