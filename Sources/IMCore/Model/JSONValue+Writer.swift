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
        guard let bytes = bytes(value) else { return nil }
        return Data(bytes)
    }

    /// The same bytes as text.
    static func string(_ value: JSONValue) -> String? {
        guard let bytes = bytes(value) else { return nil }
        return String(decoding: bytes, as: UTF8.self)
    }

    private static func bytes(_ value: JSONValue) -> [UInt8]? {
        var writer = JSONFastWriter()
        // A message payload's size: most are written without regrowing the buffer.
        writer.bytes.reserveCapacity(256)
        guard writer.write(value) else { return nil }
        return writer.bytes
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
            // One or two members (most payloads' objects) are put in order without an array of them.
            switch members.count {
            case 0: break
            case 1:
                let member = members.first!
                guard write(member: member.key, member.value) else { return false }
            case 2:
                var pair = members.makeIterator()
                var first = pair.next()!, second = pair.next()!
                if Self.precedes(second.key, first.key) { swap(&first, &second) }
                guard write(member: first.key, first.value) else { return false }
                bytes.append(UInt8(ascii: ","))
                guard write(member: second.key, second.value) else { return false }
            default:
                for (offset, member) in members.sorted(by: { Self.precedes($0.key, $1.key) }).enumerated() {
                    if offset > 0 { bytes.append(UInt8(ascii: ",")) }
                    guard write(member: member.key, member.value) else { return false }
                }
            }
            bytes.append(UInt8(ascii: "}"))
        }
        return true
    }

    private mutating func write(member key: String, _ value: JSONValue) -> Bool {
        write(key)
        bytes.append(UInt8(ascii: ":"))
        return write(value)
    }

    /// Whether any of the eight bytes is below 0x20, `"` or `\` (the zero-byte and less-than tests
    /// on a word, exact as to whether some byte matches).
    static func anyEscaped(_ word: UInt64) -> Bool {
        let ones: UInt64 = 0x0101_0101_0101_0101
        let highs: UInt64 = 0x8080_8080_8080_8080
        func hasZero(_ x: UInt64) -> Bool { (x &- ones) & ~x & highs != 0 }
        let control = (word &- ones &* 0x20) & ~word & highs != 0
        return control || hasZero(word ^ (ones &* 0x22)) || hasZero(word ^ (ones &* 0x5C))
    }

    /// Key order: by UTF-8 bytes.
    private static func precedes(_ a: String, _ b: String) -> Bool { a.utf8.lexicographicallyPrecedes(b.utf8) }

    private mutating func write(_ text: String) {
        bytes.append(UInt8(ascii: "\""))
        var text = text
        text.withUTF8 { utf8 in
            var clean = 0   // start of the run not yet copied
            var offset = 0
            while offset < utf8.count {
                // Eight bytes at a time while none needs escaping (each test is exact for "any byte").
                if utf8.count - offset >= 8 {
                    let word = UnsafeRawPointer(utf8.baseAddress! + offset).loadUnaligned(as: UInt64.self)
                    if !Self.anyEscaped(word) {
                        offset += 8
                        continue
                    }
                }
                let byte = utf8[offset]
                // Bytes ≥ 0x20 other than `"` and `\` (non-ASCII included) are written as they are.
                guard byte < 0x20 || byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") else {
                    offset += 1
                    continue
                }
                if clean < offset { bytes.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[clean..<offset])) }
                offset += 1
                clean = offset
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
            if clean < utf8.count { bytes.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[clean...])) }
        }
        bytes.append(UInt8(ascii: "\""))
    }

    private static let hex: [UInt8] = Array("0123456789abcdef".utf8)
}
