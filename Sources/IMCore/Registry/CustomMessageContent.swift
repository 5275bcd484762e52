import Foundation

/// An app-defined message type, the Swift form of WuKong's `registerMessageContent:` and NIM's
/// `NIMCustomAttachmentCoding`.
///
/// Contract:
/// - `contentType` is a stable name, unique within one `ContentRegistry`; it is what mappings key on
///   (`"order_card"`, `"gif"` …), never a vendor number.
/// - The Codable form is the payload: it is what travels on the wire inside the vendor's custom type.
/// - `validate()` throws `IMError(.invalidContent)` when the value must not be sent (the WuKongIM custom-message guide's
///   `isValid`); it runs before every send and after every decode.
/// - `attachments` lists media the content refers to; `replacingAttachments` puts re-hosted media
///   back in the same order, so a bridge can move media between vendors without knowing the type.
public protocol CustomMessageContent: Codable, Sendable, Hashable {
    static var contentType: String { get }
    var digest: String { get }
    var searchableText: String { get }
    func validate() throws
    var attachments: [MediaAttachment] { get }
    func replacingAttachments(_ attachments: [MediaAttachment]) -> Self
}

extension CustomMessageContent {
    public var searchableText: String { digest }
    public func validate() throws {}
    public var attachments: [MediaAttachment] { [] }
    public func replacingAttachments(_ attachments: [MediaAttachment]) -> Self { self }
}

/// A custom content as it travels: its type name, its payload text, and — when the type is registered —
/// the typed value.
///
/// Rules:
/// - `payload` is the exact text received. An unregistered type keeps it untouched, so writing it back
///   produces the same bytes; equality and hashing use `typeName` + `payload` only.
/// - A value built by the app is encoded once (sorted keys) into `payload` at construction.
public struct CustomContent: Hashable, Sendable, Codable {
    public let typeName: String
    public let payload: String
    public let value: (any CustomMessageContent)?

    /// Wraps a typed value; the payload is its JSON encoding with sorted keys.
    public init<T: CustomMessageContent>(_ value: T) {
        self.typeName = T.contentType
        self.value = value
        self.payload = Self.encodePayload(value)
    }

    /// A raw payload of a type this process does not know (yet).
    public init(raw typeName: String, payload: String) {
        self.typeName = typeName
        self.payload = payload
        self.value = nil
    }

    init(typeName: String, payload: String, value: any CustomMessageContent) {
        self.typeName = typeName
        self.payload = payload
        self.value = value
    }

    static func encodePayload(_ value: some CustomMessageContent) -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return (try? encoder.encode(value)).map { String(decoding: $0, as: UTF8.self) } ?? "{}"
    }

    public var isRegistered: Bool { value != nil }

    /// The typed value, if this content is of type `T`.
    public func `as`<T: CustomMessageContent>(_ type: T.Type) -> T? { value as? T }

    /// The payload as JSON, when it is JSON.
    public var json: JSONValue? { try? JSONValue.parse(payload) }

    /// The registered type's digest; `[<typeName>]` for an unregistered one.
    public var digest: String { value?.digest ?? "[\(typeName)]" }
    public var searchableText: String { value?.searchableText ?? "" }
    public var attachments: [MediaAttachment] { value?.attachments ?? [] }

    public func validate() throws { try value?.validate() }

    /// The same content with its media replaced (see `CustomMessageContent.replacingAttachments`).
    public func replacingAttachments(_ attachments: [MediaAttachment]) -> CustomContent {
        guard let value else { return self }
        return Self.rewrap(value, attachments)
    }

    private static func rewrap<T: CustomMessageContent>(_ value: T, _ attachments: [MediaAttachment]) -> CustomContent {
        CustomContent(value.replacingAttachments(attachments))
    }

    public static func == (lhs: CustomContent, rhs: CustomContent) -> Bool {
        lhs.typeName == rhs.typeName && lhs.payload == rhs.payload
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(typeName)
        hasher.combine(payload)
    }

    private enum CodingKeys: String, CodingKey { case typeName = "type", payload }

    /// Decodes raw; pass the result through `ContentRegistry.resolve` to get the typed value back.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        self.init(raw: try container.decode(String.self, forKey: .typeName),
                  payload: try container.decode(String.self, forKey: .payload))
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(typeName, forKey: .typeName)
        try container.encode(payload, forKey: .payload)
    }
}
