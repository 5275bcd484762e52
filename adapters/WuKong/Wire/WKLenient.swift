import Foundation

/// Lenient decoding helpers for WuKong JSON: numbers that some versions send as strings (or the
/// reverse), 0/1 flags that may arrive as booleans. Output is always the v2.2.5 form.
extension KeyedDecodingContainer {
    func lenientInt64(_ key: Key) throws -> Int64? {
        if try !contains(key) || decodeNil(forKey: key) { return nil }
        if let value = try? decode(Int64.self, forKey: key) { return value }
        if let value = try? decode(UInt64.self, forKey: key) { return Int64(truncatingIfNeeded: value) }
        if let value = try? decode(Double.self, forKey: key), let exact = Int64(exactly: value.rounded()) { return exact }
        if let text = try? decode(String.self, forKey: key) {
            if text.isEmpty { return nil }
            if let value = Int64(text) { return value }
        }
        if let flag = try? decode(Bool.self, forKey: key) { return flag ? 1 : 0 }
        throw DecodingError.dataCorruptedError(forKey: key, in: self, debugDescription: "expected an integer")
    }

    func lenientString(_ key: Key) throws -> String? {
        if try !contains(key) || decodeNil(forKey: key) { return nil }
        if let text = try? decode(String.self, forKey: key) { return text }
        if let value = try? decode(Int64.self, forKey: key) { return String(value) }
        if let value = try? decode(UInt64.self, forKey: key) { return String(value) }
        throw DecodingError.dataCorruptedError(forKey: key, in: self, debugDescription: "expected a string")
    }
}

extension KeyedEncodingContainer {
    /// Encodes a 0/1 flag only when it is set (Go `omitempty` style is not used by WuKongIM for
    /// header flags, so callers choose).
    mutating func encodeNonZero(_ value: Int64?, forKey key: Key) throws {
        if let value, value != 0 { try encode(value, forKey: key) }
    }
}

/// The JSON coders WuKong wire types use: `Data` as standard base64 with padding (Go `[]byte`),
/// slashes unescaped, keys sorted so equal values give equal bytes.
public enum WuKongJSON {
    public static func encoder() -> JSONEncoder {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        encoder.dataEncodingStrategy = .base64
        return encoder
    }

    public static func decoder() -> JSONDecoder {
        let decoder = JSONDecoder()
        decoder.dataDecodingStrategy = .base64
        return decoder
    }

    public static func encode<T: Encodable>(_ value: T) throws -> Data { try encoder().encode(value) }

    public static func decode<T: Decodable>(_ type: T.Type, from data: Data) throws -> T {
        try decoder().decode(type, from: data)
    }
}
