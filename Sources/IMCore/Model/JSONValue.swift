import Foundation

/// A free-form JSON value for fields that have no fixed shape (command data, vendor extras, notice
/// parameters). Integers and floating-point numbers are kept apart so that an id such as
/// `9007199254740993` survives a round trip.
public enum JSONValue: Hashable, Sendable, Codable {
    case null
    case bool(Bool)
    case int(Int64)
    case double(Double)
    case string(String)
    case array([JSONValue])
    case object([String: JSONValue])

    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if container.decodeNil() {
            self = .null
        } else if let value = try? container.decode(Bool.self) {
            self = .bool(value)
        } else if let value = try? container.decode(Int64.self) {
            self = .int(value)
        } else if let value = try? container.decode(Double.self) {
            self = .double(value)
        } else if let value = try? container.decode(String.self) {
            self = .string(value)
        } else if let value = try? container.decode([JSONValue].self) {
            self = .array(value)
        } else {
            self = .object(try container.decode([String: JSONValue].self))
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        switch self {
        case .null: try container.encodeNil()
        case .bool(let value): try container.encode(value)
        case .int(let value): try container.encode(value)
        case .double(let value): try container.encode(value)
        case .string(let value): try container.encode(value)
        case .array(let value): try container.encode(value)
        case .object(let value): try container.encode(value)
        }
    }

    public subscript(key: String) -> JSONValue? {
        if case .object(let object) = self { return object[key] }
        return nil
    }

    public var stringValue: String? {
        switch self {
        case .string(let value): value
        case .int(let value): String(value)
        case .double(let value): String(value)
        case .bool(let value): value ? "true" : "false"
        default: nil
        }
    }

    /// Accepts numbers and numeric strings, as vendors that send "all values as strings" need.
    public var int64Value: Int64? {
        switch self {
        case .int(let value): value
        case .double(let value): Int64(exactly: value.rounded()) ?? nil
        case .string(let value): Int64(value) ?? Double(value).flatMap { Int64(exactly: $0.rounded()) }
        case .bool(let value): value ? 1 : 0
        default: nil
        }
    }

    public var doubleValue: Double? {
        switch self {
        case .int(let value): Double(value)
        case .double(let value): value
        case .string(let value): Double(value)
        default: nil
        }
    }

    public var objectValue: [String: JSONValue]? {
        if case .object(let object) = self { return object }
        return nil
    }

    public var arrayValue: [JSONValue]? {
        if case .array(let array) = self { return array }
        return nil
    }

    /// Parses JSON text; any JSON value is accepted at the top level. Same results and errors as decoding
    /// with `JSONDecoder` (which it uses for anything its own strict parser refuses, see `JSONFastParser`).
    public static func parse(_ data: Data) throws -> JSONValue {
        if let value = try? JSONFastParser.parse(data) { return value }
        return try parseWithFoundation(data)
    }

    private static func parseWithFoundation(_ data: Data) throws -> JSONValue {
        do {
            return try JSONDecoder().decode(JSONValue.self, from: data)
        } catch {
            throw IMError(.malformedPayload, "not JSON: \(error)")
        }
    }

    /// As `parse(_: Data)`, reading the text's UTF-8 in place (no `Data` is made unless the strict
    /// parser refuses the text).
    public static func parse(_ text: String) throws -> JSONValue {
        var text = text
        let fast: JSONValue? = text.withUTF8 { utf8 in try? JSONFastParser.parse(utf8) }
        if let fast { return fast }
        return try parseWithFoundation(Data(text.utf8))
    }

    /// Compact JSON with sorted keys, so that equal values serialise to equal bytes (the bytes
    /// `JSONEncoder` writes with `[.sortedKeys, .withoutEscapingSlashes]`, see `JSONFastWriter`);
    /// `null` when a double is NaN or infinite.
    public func jsonData() -> Data { JSONFastWriter.data(self) ?? Data("null".utf8) }

    /// `jsonData()`, or nil when a double is NaN or infinite (where `JSONEncoder` throws).
    public func finiteJSONData() -> Data? { JSONFastWriter.data(self) }

    /// `jsonData()` as text (made from the writer's bytes directly, not through `Data`).
    public func jsonString() -> String { JSONFastWriter.string(self) ?? "null" }
}

extension JSONValue: ExpressibleByStringLiteral, ExpressibleByIntegerLiteral, ExpressibleByBooleanLiteral,
    ExpressibleByFloatLiteral, ExpressibleByArrayLiteral, ExpressibleByDictionaryLiteral, ExpressibleByNilLiteral {
    public init(stringLiteral value: String) { self = .string(value) }
    public init(integerLiteral value: Int64) { self = .int(value) }
    public init(booleanLiteral value: Bool) { self = .bool(value) }
    public init(floatLiteral value: Double) { self = .double(value) }
    public init(arrayLiteral elements: JSONValue...) { self = .array(elements) }
    public init(dictionaryLiteral elements: (String, JSONValue)...) {
        self = .object(Dictionary(elements, uniquingKeysWith: { _, last in last }))
    }
    public init(nilLiteral: ()) { self = .null }
}

extension Dictionary where Key == String, Value == JSONValue {
    /// An empty object with room for `capacity` members (none when 0), allocated by code specialised for
    /// these types. `Dictionary(minimumCapacity:)` and `reserveCapacity(_:)` are not inlinable: the
    /// standard library's generic code looks up the storage's type metadata in the runtime on every
    /// call (4 % of a codec text round trip, docs/performance.md "Codec round trips"); this initialiser
    /// is emitted into the caller.
    @inlinable
    public static func withCapacity(_ capacity: Int) -> [String: JSONValue] {
        Dictionary(_unsafeUninitializedCapacity: capacity, allowingDuplicates: false) { _, _ in 0 }
    }
}
