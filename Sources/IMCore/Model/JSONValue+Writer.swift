import Foundation

/// Serialises a `JSONValue` to compact UTF-8 JSON, byte for byte what `JSONEncoder` with
/// `[.sortedKeys, .withoutEscapingSlashes]` writes:
/// - object keys sorted by their UTF-8 bytes;
/// - strings escape `"`, `\`, and control characters (`\b \f \n \r \t`, the others as `\u00xx`);
///   `/` and all non-ASCII characters are written as they are;
/// - integers in decimal; doubles as Swift's shortest round-trip `description` without a trailing `.0`
///   (`1e+20`, `0.1`, `1`);
/// - a NaN or infinite double cannot be written: the result is nil (`jsonData()` then gives `null`, as it
///   did when `JSONEncoder` threw).
struct JSONFastWriter {
    private(set) var bytes: [UInt8] = []

    static func data(_ value: JSONValue) -> Data? {
        var writer = JSONFastWriter()
        writer.bytes.reserveCapacity(64)
        guard writer.write(value) else { return nil }
        return Data(writer.bytes)
    }

    /// False when a double is not finite.
    private mutating func write(_ value: JSONValue) -> Bool {
        switch value {
        case .null: bytes.append(contentsOf: "null".utf8)
        case .bool(let flag): bytes.append(contentsOf: flag ? "true".utf8 : "false".utf8)
        case .int(let number): bytes.append(contentsOf: String(number).utf8)
        case .double(let number):
            guard number.isFinite else { return false }
            var text = number.description
            if text.hasSuffix(".0") { text.removeLast(2) }
            bytes.append(contentsOf: text.utf8)
        case .string(let text): write(text)
        case .array(let elements):
            bytes.append(UInt8(ascii: "["))
            for (offset, element) in elements.enumerated() {
                if offset > 0 { bytes.append(UInt8(ascii: ",")) }
                guard write(element) else { return false }
            }
            bytes.append(UInt8(ascii: "]"))
        case .object(let members):
            bytes.append(UInt8(ascii: "{"))
            let sorted = members.count < 2 ? Array(members) : members.sorted { $0.key.utf8.lexicographicallyPrecedes($1.key.utf8) }
            for (offset, member) in sorted.enumerated() {
                if offset > 0 { bytes.append(UInt8(ascii: ",")) }
                write(member.key)
                bytes.append(UInt8(ascii: ":"))
                guard write(member.value) else { return false }
            }
            bytes.append(UInt8(ascii: "}"))
        }
        return true
    }

    private mutating func write(_ text: String) {
        bytes.append(UInt8(ascii: "\""))
        var text = text
        text.withUTF8 { utf8 in
            var clean = 0   // start of the run not yet copied
            for (offset, byte) in utf8.enumerated() where byte < 0x20 || byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") {
                bytes.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[clean..<offset]))
                clean = offset + 1
                bytes.append(UInt8(ascii: "\\"))
                switch byte {
                case UInt8(ascii: "\""), UInt8(ascii: "\\"): bytes.append(byte)
                case 0x08: bytes.append(UInt8(ascii: "b"))
                case 0x0C: bytes.append(UInt8(ascii: "f"))
                case 0x0A: bytes.append(UInt8(ascii: "n"))
                case 0x0D: bytes.append(UInt8(ascii: "r"))
                case 0x09: bytes.append(UInt8(ascii: "t"))
                default:
                    bytes.append(contentsOf: "u00".utf8)
                    bytes.append(Self.hex[Int(byte >> 4)])
                    bytes.append(Self.hex[Int(byte & 0xF)])
                }
            }
            bytes.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[clean...]))
        }
        bytes.append(UInt8(ascii: "\""))
    }

    private static let hex: [UInt8] = Array("0123456789abcdef".utf8)
}
