import IMCore
import IMConfig
import IMMapping

/// A value a settings type refuses while it decodes (a `custom_types` key that is not a type number):
/// `AdapterSettings.decode` turns it into the one error shape, `FILE:LINE: backends.<name>.<key>: …`,
/// quoting `part` as errors may show it (`AdapterSettings.quoted`: `***` for a secret, `the value of
/// ${NAME}` for one from the environment).
public struct SettingRefusal: Error, Sendable {
    public var key: String
    public var message: String
    /// The part of the value the message is about, shown before it.
    public var part: String?

    public init(_ key: String, _ message: String, quoting part: String? = nil) {
        self.key = key
        self.message = message
        self.part = part
    }
}

extension AdapterSettings {
    /// The adapter's settings type (`WuKongSettings` …), decoded from these checked settings. Its
    /// `CodingKeys` are the setting keys; a field is a `String`, `Bool`, `Int`/`Int64`, `Duration` (a
    /// duration setting, also from its deprecated key), `[String]` (a URL list) or `[String: String]` (a
    /// map, from its YAML mapping or its deprecated string), each optional or not. A field keeps its
    /// default when the setting is not written (`KeyedDecodingContainer.read`), so each default is written
    /// once, on the field. Every failure is `refuse(key, …)`.
    public func decode<T: Decodable>(_ type: T.Type) throws -> T {
        do {
            return try T(from: SettingsDecoder(settings: self))
        } catch let refusal as SettingRefusal {
            throw refuse(refusal.key, refusal.part.map { "\(quoted(refusal.key, $0)) \(refusal.message)" } ?? refusal.message)
        } catch let error as DecodingError {
            switch error {
            case .keyNotFound(let key, _):
                throw refuse(key.stringValue, "is required")
            case .typeMismatch(_, let context), .valueNotFound(_, let context), .dataCorrupted(let context):
                throw refuse(context.codingPath.first?.stringValue ?? "?", context.debugDescription)
            @unknown default:
                throw refuse("?", "\(error)")
            }
        }
    }

    /// Whether `key` was written (as a value, a mapping, or under its deprecated name).
    func isWritten(_ key: String) -> Bool {
        if self[key] != nil || maps[key] != nil { return true }
        guard let legacy = schema.first(where: { $0.key == key })?.legacy else { return false }
        return self[legacy.key] != nil
    }
}

extension KeyedDecodingContainer {
    /// Replaces `value` (the field's default) with the setting when it is written.
    public func read<T: Decodable>(_ value: inout T, _ key: Key) throws {
        if let decoded = try decodeIfPresent(T.self, forKey: key) { value = decoded }
    }

    /// Replaces `value` with the setting when it is written; nil stays nil otherwise.
    public func read<T: Decodable>(_ value: inout T?, _ key: Key) throws {
        if let decoded = try decodeIfPresent(T.self, forKey: key) { value = decoded }
    }
}

extension ConfigDuration {
    /// A Swift `Duration` in whole milliseconds (rounded down).
    public init(_ duration: Duration) {
        let (seconds, attoseconds) = duration.components
        self.init(milliseconds: seconds * 1000 + attoseconds / 1_000_000_000_000_000)
    }
}

extension Duration {
    /// Whole seconds, rounded up (per-request timeouts are set in seconds).
    public var secondsRoundedUp: Int64 { (ConfigDuration(self).milliseconds + 999) / 1000 }

    /// Whole milliseconds, rounded down.
    public var wholeMilliseconds: Int64 { ConfigDuration(self).milliseconds }
}

/// Reads a settings type from `AdapterSettings` (`AdapterSettings.decode`): one keyed container, the
/// settings by key; no nesting.
struct SettingsDecoder: Decoder {
    let settings: AdapterSettings
    var codingPath: [any CodingKey] { [] }
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> {
        KeyedDecodingContainer(SettingsContainer<Key>(settings: settings))
    }

    func unkeyedContainer() throws -> any UnkeyedDecodingContainer {
        throw DecodingError.typeMismatch([Any].self, .init(codingPath: [], debugDescription: "settings are a mapping"))
    }

    func singleValueContainer() throws -> any SingleValueDecodingContainer {
        throw DecodingError.typeMismatch(Any.self, .init(codingPath: [], debugDescription: "settings are a mapping"))
    }
}

struct SettingsContainer<Key: CodingKey>: KeyedDecodingContainerProtocol {
    let settings: AdapterSettings
    var codingPath: [any CodingKey] { [] }

    var allKeys: [Key] { settings.schema.map(\.key).filter(settings.isWritten).compactMap { Key(stringValue: $0) } }

    func contains(_ key: Key) -> Bool { settings.isWritten(key.stringValue) }

    func decodeNil(forKey key: Key) throws -> Bool { !contains(key) }

    /// The setting as `type`, from the readers the schema's kinds were checked for.
    func value<T>(_ type: T.Type, _ key: Key) throws -> T {
        let name = key.stringValue
        guard contains(key) else {
            throw DecodingError.keyNotFound(key, .init(codingPath: [key], debugDescription: "not written"))
        }
        let value: Any? = switch type {
        case is String.Type: settings[name]
        case is Bool.Type: settings.flag(name)
        case is Int64.Type: settings.integer(name)
        case is Int.Type: settings.integer(name).map { Int($0) }
        case is Duration.Type: settings.duration(name)?.duration
        case is [String: String].Type: settings.map(name)
        case is [String].Type: settings.list(name)
        default: nil
        }
        guard let typed = value as? T else {
            throw DecodingError.typeMismatch(type, .init(codingPath: [key], debugDescription: "cannot be read as \(type)"))
        }
        return typed
    }

    func decode(_ type: String.Type, forKey key: Key) throws -> String { try value(type, key) }
    func decode(_ type: Bool.Type, forKey key: Key) throws -> Bool { try value(type, key) }
    func decode(_ type: Int.Type, forKey key: Key) throws -> Int { try value(type, key) }
    func decode(_ type: Int64.Type, forKey key: Key) throws -> Int64 { try value(type, key) }
    func decode<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T { try value(type, key) }
    func decode(_ type: Double.Type, forKey key: Key) throws -> Double { try value(type, key) }
    func decode(_ type: Float.Type, forKey key: Key) throws -> Float { try value(type, key) }
    func decode(_ type: Int8.Type, forKey key: Key) throws -> Int8 { try value(type, key) }
    func decode(_ type: Int16.Type, forKey key: Key) throws -> Int16 { try value(type, key) }
    func decode(_ type: Int32.Type, forKey key: Key) throws -> Int32 { try value(type, key) }
    func decode(_ type: UInt.Type, forKey key: Key) throws -> UInt { try value(type, key) }
    func decode(_ type: UInt8.Type, forKey key: Key) throws -> UInt8 { try value(type, key) }
    func decode(_ type: UInt16.Type, forKey key: Key) throws -> UInt16 { try value(type, key) }
    func decode(_ type: UInt32.Type, forKey key: Key) throws -> UInt32 { try value(type, key) }
    func decode(_ type: UInt64.Type, forKey key: Key) throws -> UInt64 { try value(type, key) }

    func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type, forKey key: Key) throws -> KeyedDecodingContainer<NestedKey> {
        throw DecodingError.typeMismatch(type, .init(codingPath: [key], debugDescription: "settings do not nest"))
    }

    func nestedUnkeyedContainer(forKey key: Key) throws -> any UnkeyedDecodingContainer {
        throw DecodingError.typeMismatch([Any].self, .init(codingPath: [key], debugDescription: "settings do not nest"))
    }

    func superDecoder() throws -> any Decoder { SettingsDecoder(settings: settings) }
    func superDecoder(forKey key: Key) throws -> any Decoder { SettingsDecoder(settings: settings) }
}
