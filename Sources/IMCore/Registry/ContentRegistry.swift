import Foundation
import Synchronization

/// The table of custom content types an app knows, shared by codecs and backends.
///
/// Rules:
/// - Registering two types under one `contentType` name throws `duplicate_content_type` (registering
///   the same type twice is also refused: a registration is a declaration, not an upsert).
/// - Decoding a registered type's payload yields the typed value and runs `validate()`; a payload that
///   does not decode or validate throws `invalid_content` naming the type.
/// - An unregistered type decodes to a raw `CustomContent` that keeps its payload byte for byte.
/// Thread-safe; registration normally happens once at start-up.
public final class ContentRegistry: Sendable {
    private let types = Mutex<[String: any CustomMessageContent.Type]>([:])

    public init() {}

    public init(_ types: [any CustomMessageContent.Type]) throws {
        for type in types { try register(type) }
    }

    public func register(_ type: any CustomMessageContent.Type) throws {
        let name = type.contentType
        guard !name.isEmpty else { throw IMError(.invalidArgument, "a custom content type needs a non-empty contentType") }
        try types.withLock { table in
            if let existing = table[name] {
                throw IMError(.duplicateContentType,
                              "content type '\(name)' is already registered by \(String(describing: existing))")
            }
            table[name] = type
        }
    }

    public func isRegistered(_ typeName: String) -> Bool { types.withLock { $0[typeName] != nil } }

    public var registeredTypeNames: [String] { types.withLock { $0.keys.sorted() } }

    /// Turns a payload received from the wire into a custom content (see the type's rules).
    public func decode(typeName: String, payload: String) throws -> CustomContent {
        guard let type = types.withLock({ $0[typeName] }) else {
            return CustomContent(raw: typeName, payload: payload)
        }
        let value: any CustomMessageContent
        do {
            value = try Self.decode(type, payload)
        } catch {
            throw IMError(.invalidContent, "payload of '\(typeName)' does not decode: \(error)")
        }
        try value.validate()
        return CustomContent(typeName: typeName, payload: payload, value: value)
    }

    /// What a codec uses for a payload received from a vendor: like `decode`, except that a registered
    /// type's payload that does not decode stays a raw `CustomContent` (relayed as it came: the target
    /// app may still read it) — only a payload that decodes and then fails `validate()` throws
    /// (`invalid_content`): the app said that value must not travel, so the bridge sets the message aside.
    public func decodeOrRaw(typeName: String, payload: String) throws -> CustomContent {
        guard let type = types.withLock({ $0[typeName] }) else {
            return CustomContent(raw: typeName, payload: payload)
        }
        guard let value = try? Self.decode(type, payload) else {
            return CustomContent(raw: typeName, payload: payload)
        }
        do {
            try value.validate()
        } catch {
            throw IMError(.invalidContent, "payload of '\(typeName)' fails its validate(): \(error)", details: ["content_type": typeName])
        }
        return CustomContent(typeName: typeName, payload: payload, value: value)
    }

    private static func decode<T: CustomMessageContent>(_ type: T.Type, _ payload: String) throws -> T {
        try JSONDecoder().decode(T.self, from: Data(payload.utf8))
    }

    /// Re-types raw custom contents whose type is registered (after a store or JSON round trip).
    public func resolve(_ content: MessageContent) throws -> MessageContent {
        guard case .custom(let custom) = content, custom.value == nil else { return content }
        return .custom(try decode(typeName: custom.typeName, payload: custom.payload))
    }

    /// The typed payload of what `message` shows now (its latest edit, else its content), decoded by
    /// this registry: `let card = try registry.resolve(message, as: OrderCard.self)`. Throws, naming what
    /// is wrong: `invalid_argument` when the message is not a custom content of `T`'s type name, and
    /// `invalid_content` when `T` is not registered here or the payload does not decode or validate.
    public func resolve<T: CustomMessageContent>(_ message: Message, as type: T.Type) throws -> T {
        guard case .custom(let custom) = message.currentContent else {
            throw IMError(.invalidArgument, "message \(message.id) is \(message.currentContent.kind.rawValue), not custom '\(T.contentType)'")
        }
        guard custom.typeName == T.contentType else {
            throw IMError(.invalidArgument, "message \(message.id) carries custom '\(custom.typeName)', not '\(T.contentType)'")
        }
        guard let registered = types.withLock({ $0[T.contentType] }), ObjectIdentifier(registered) == ObjectIdentifier(T.self) else {
            throw IMError(.invalidContent, "'\(T.contentType)' is not registered as \(T.self) in this ContentRegistry: register(\(T.self).self) first",
                          details: ["content_type": T.contentType])
        }
        if let value = custom.value as? T { return value }
        guard let value = try decode(typeName: custom.typeName, payload: custom.payload).value as? T else {
            throw IMError(.invalidContent, "payload of '\(T.contentType)' did not decode as \(T.self)")
        }
        return value
    }
}
