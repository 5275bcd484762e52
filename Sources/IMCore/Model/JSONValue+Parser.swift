import Foundation

/// A strict, allocation-light UTF-8 JSON parser for `JSONValue.parse`.
///
/// Contract: whatever it accepts, it returns exactly what `JSONDecoder().decode(JSONValue.self, …)` returns
/// for the same bytes (integers as `.int` when they fit Int64, otherwise `.double`; the first of duplicate
/// keys wins). It refuses anything unusual — a byte-order mark, UTF-16 input, trailing commas, invalid
/// UTF-8, lone surrogates, nesting deeper than `maxDepth` — and `JSONValue.parse` then hands the bytes to
/// `JSONDecoder`, so the lenient corners and the error for malformed input stay Foundation's. A number with
/// a fraction or an exponent whose value is integral (`1.0`, `1e2`) is also delegated, alone, to
/// `JSONDecoder`, whose rules for turning those into integers are its own.
struct JSONFastParser {
    struct Refused: Error {}

    static let maxDepth = 256

    private let bytes: UnsafeBufferPointer<UInt8>
    private var index = 0

    private init(_ bytes: UnsafeBufferPointer<UInt8>) { self.bytes = bytes }

    /// The value of the whole document, or `Refused`.
    static func parse(_ data: Data) throws(Refused) -> JSONValue {
        let result: Result<JSONValue, Refused> = data.withUnsafeBytes { raw in
            Result { () throws(Refused) in try parse(raw.bindMemory(to: UInt8.self)) }
        }
        return try result.get()
    }

    /// The value of the whole document held in `bytes` (UTF-8), or `Refused`.
    static func parse(_ bytes: UnsafeBufferPointer<UInt8>) throws(Refused) -> JSONValue {
        var parser = JSONFastParser(bytes)
        parser.skipWhitespace()
        let value = try parser.value(depth: 0)
        parser.skipWhitespace()
        guard parser.index == parser.bytes.count else { throw Refused() }
        return value
    }

    private mutating func skipWhitespace() {
        while index < bytes.count {
            switch bytes[index] {
            case 0x20, 0x09, 0x0A, 0x0D: index += 1
            default: return
            }
        }
    }

    private mutating func value(depth: Int) throws(Refused) -> JSONValue {
        guard index < bytes.count, depth < Self.maxDepth else { throw Refused() }
        switch bytes[index] {
        case UInt8(ascii: "{"): return try object(depth: depth + 1)
        case UInt8(ascii: "["): return try array(depth: depth + 1)
        case UInt8(ascii: "\""): return .string(try string())
        case UInt8(ascii: "t"): try literal("true"); return .bool(true)
        case UInt8(ascii: "f"): try literal("false"); return .bool(false)
        case UInt8(ascii: "n"): try literal("null"); return .null
        default: return try number()
        }
    }

    private mutating func literal(_ word: StaticString) throws(Refused) {
        let count = word.utf8CodeUnitCount
        guard bytes.count - index >= count else { throw Refused() }
        let start = word.utf8Start
        for offset in 0..<count where bytes[index + offset] != start[offset] { throw Refused() }
        index += count
    }

    private mutating func array(depth: Int) throws(Refused) -> JSONValue {
        index += 1
        var elements: [JSONValue] = []
        skipWhitespace()
        if index < bytes.count, bytes[index] == UInt8(ascii: "]") { index += 1; return .array(elements) }
        while true {
            skipWhitespace()
            elements.append(try value(depth: depth))
            skipWhitespace()
            guard index < bytes.count else { throw Refused() }
            let byte = bytes[index]
            index += 1
            if byte == UInt8(ascii: "]") { return .array(elements) }
            guard byte == UInt8(ascii: ",") else { throw Refused() }
        }
    }

    private mutating func object(depth: Int) throws(Refused) -> JSONValue {
        index += 1
        skipWhitespace()
        if index < bytes.count, bytes[index] == UInt8(ascii: "}") { index += 1; return .object([:]) }
        // Room for a small object's members from the start: no regrowing (and rehashing) at the second,
        // fourth … member.
        var members = [String: JSONValue].withCapacity(4)
        while true {
            skipWhitespace()
            guard index < bytes.count, bytes[index] == UInt8(ascii: "\"") else { throw Refused() }
            let key = try string()
            skipWhitespace()
            guard index < bytes.count, bytes[index] == UInt8(ascii: ":") else { throw Refused() }
            index += 1
            skipWhitespace()
            let member = try value(depth: depth)
            // JSONDecoder keeps the first of duplicates: one hash of the key when it is new (the usual
            // case), a second one only to put the first value back.
            if let first = members.updateValue(member, forKey: key) { members[key] = first }
            skipWhitespace()
            guard index < bytes.count else { throw Refused() }
            let byte = bytes[index]
            index += 1
            if byte == UInt8(ascii: "}") { return .object(members) }
            guard byte == UInt8(ascii: ",") else { throw Refused() }
        }
    }

    /// A string starting at the opening quote; leaves `index` after the closing quote.
    private mutating func string() throws(Refused) -> String {
        index += 1
        let start = index
        var seen: UInt8 = 0   // every byte or'ed: below 0x80, the string is ASCII and valid UTF-8
        // Fast path: no escapes up to the closing quote.
        while index < bytes.count {
            let byte = bytes[index]
            if byte == UInt8(ascii: "\"") {
                let utf8 = UnsafeBufferPointer(rebasing: bytes[start..<index])
                let text = seen < 0x80 ? String(decoding: utf8, as: UTF8.self) : try Self.text(utf8)
                index += 1
                return text
            }
            seen |= byte
            if byte == UInt8(ascii: "\\") { break }
            guard byte >= 0x20 else { throw Refused() }
            index += 1
        }
        var buffer = Array(bytes[start..<index])
        while index < bytes.count {
            let byte = bytes[index]
            index += 1
            switch byte {
            case UInt8(ascii: "\""):
                return try buffer.withUnsafeBufferPointer { pointer throws(Refused) in try Self.text(pointer) }
            case UInt8(ascii: "\\"):
                try escape(into: &buffer)
            case 0..<0x20:
                throw Refused()
            default:
                buffer.append(byte)
            }
        }
        throw Refused()
    }

    /// The string of valid UTF-8 bytes. Not `String(validating:as:)`, which is generic over the encoding
    /// and looked up type metadata on every call (a tenth of a text round trip, docs/performance.md
    /// "Codec round trips"), nor `isValidUTF8` before `String(decoding:as:)`, which checks the bytes a
    /// second time: `String(decoding:as:)` alone, which replaces each invalid sequence with U+FFFD
    /// (EF BF BD). Its bytes are the input's exactly when the input is valid: at the first invalid
    /// sequence it writes EF BF BD, which the input cannot hold there (those three bytes are valid).
    private static func text(_ utf8: UnsafeBufferPointer<UInt8>) throws(Refused) -> String {
        var text = String(decoding: utf8, as: UTF8.self)
        let same = text.withUTF8 { decoded in
            decoded.count == utf8.count && (utf8.count == 0 || memcmp(decoded.baseAddress!, utf8.baseAddress!, utf8.count) == 0)
        }
        guard same else { throw Refused() }
        return text
    }

    /// Well-formed UTF-8 as the Unicode Standard defines it (chapter 3, table "Well-Formed UTF-8 Byte
    /// Sequences"): no overlong forms, no surrogates, nothing above U+10FFFF, no truncated sequence.
    static func isValidUTF8(_ utf8: UnsafeBufferPointer<UInt8>) -> Bool {
        guard let base = utf8.baseAddress else { return true }
        let count = utf8.count
        var index = 0
        while index < count {
            // Eight ASCII bytes at a time.
            if count - index >= 8, UnsafeRawPointer(base + index).loadUnaligned(as: UInt64.self) & 0x8080_8080_8080_8080 == 0 {
                index += 8
                continue
            }
            let lead = base[index]
            if lead < 0x80 { index += 1; continue }
            let length: Int
            var low: UInt8 = 0x80, high: UInt8 = 0xBF   // the range of the second byte
            switch lead {
            case 0xC2...0xDF: length = 2
            case 0xE0: length = 3; low = 0xA0
            case 0xE1...0xEC, 0xEE...0xEF: length = 3
            case 0xED: length = 3; high = 0x9F
            case 0xF0: length = 4; low = 0x90
            case 0xF1...0xF3: length = 4
            case 0xF4: length = 4; high = 0x8F
            default: return false
            }
            guard count - index >= length else { return false }
            let second = base[index + 1]
            guard second >= low, second <= high else { return false }
            if length > 2, base[index + 2] & 0xC0 != 0x80 { return false }
            if length > 3, base[index + 3] & 0xC0 != 0x80 { return false }
            index += length
        }
        return true
    }

    private mutating func escape(into buffer: inout [UInt8]) throws(Refused) {
        guard index < bytes.count else { throw Refused() }
        let byte = bytes[index]
        index += 1
        switch byte {
        case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): buffer.append(byte)
        case UInt8(ascii: "b"): buffer.append(0x08)
        case UInt8(ascii: "f"): buffer.append(0x0C)
        case UInt8(ascii: "n"): buffer.append(0x0A)
        case UInt8(ascii: "r"): buffer.append(0x0D)
        case UInt8(ascii: "t"): buffer.append(0x09)
        case UInt8(ascii: "u"):
            var scalar = UInt32(try hex4())
            if (0xD800..<0xDC00).contains(scalar) {
                guard bytes.count - index >= 6, bytes[index] == UInt8(ascii: "\\"), bytes[index + 1] == UInt8(ascii: "u") else { throw Refused() }
                index += 2
                let low = UInt32(try hex4())
                guard (0xDC00..<0xE000).contains(low) else { throw Refused() }
                scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
            } else if (0xDC00..<0xE000).contains(scalar) {
                throw Refused()
            }
            guard let unicode = Unicode.Scalar(scalar) else { throw Refused() }
            buffer.append(contentsOf: UTF8.encode(unicode)!)
        default:
            throw Refused()
        }
    }

    private mutating func hex4() throws(Refused) -> UInt16 {
        guard bytes.count - index >= 4 else { throw Refused() }
        var value: UInt16 = 0
        for _ in 0..<4 {
            let byte = bytes[index]
            index += 1
            let digit: UInt8
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = byte - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = byte - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = byte - UInt8(ascii: "A") + 10
            default: throw Refused()
            }
            value = value << 4 | UInt16(digit)
        }
        return value
    }

    /// A number in strict JSON grammar: `-? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)?`.
    private mutating func number() throws(Refused) -> JSONValue {
        let start = index
        let negative = bytes[index] == UInt8(ascii: "-")
        if negative { index += 1 }
        guard index < bytes.count, Self.isDigit(bytes[index]) else { throw Refused() }
        // Accumulate negatively so that Int64.min fits.
        var magnitude: Int64 = 0
        var overflow = false
        if bytes[index] == UInt8(ascii: "0") {
            index += 1
            if index < bytes.count, Self.isDigit(bytes[index]) { throw Refused() }
        } else {
            while index < bytes.count, Self.isDigit(bytes[index]) {
                let digit = Int64(bytes[index] - UInt8(ascii: "0"))
                if !overflow {
                    let (times10, o1) = magnitude.multipliedReportingOverflow(by: 10)
                    let (next, o2) = times10.subtractingReportingOverflow(digit)
                    if o1 || o2 { overflow = true } else { magnitude = next }
                }
                index += 1
            }
        }
        var integral = true
        if index < bytes.count, bytes[index] == UInt8(ascii: ".") {
            integral = false
            index += 1
            guard index < bytes.count, Self.isDigit(bytes[index]) else { throw Refused() }
            while index < bytes.count, Self.isDigit(bytes[index]) { index += 1 }
        }
        if index < bytes.count, bytes[index] == UInt8(ascii: "e") || bytes[index] == UInt8(ascii: "E") {
            integral = false
            index += 1
            if index < bytes.count, bytes[index] == UInt8(ascii: "+") || bytes[index] == UInt8(ascii: "-") { index += 1 }
            guard index < bytes.count, Self.isDigit(bytes[index]) else { throw Refused() }
            while index < bytes.count, Self.isDigit(bytes[index]) { index += 1 }
        }
        if integral && !overflow {
            if negative { return .int(magnitude) }
            guard magnitude != .min else { return try double(start) }   // 9223372036854775808
            return .int(-magnitude)
        }
        if integral { return try double(start) }
        let token = UnsafeBufferPointer(rebasing: bytes[start..<index])
        guard let value = Double(String(decoding: token, as: UTF8.self)), value.isFinite else { throw Refused() }
        if value.rounded(.towardZero) != value { return .double(value) }
        // An integral value written with a fraction or exponent: JSONDecoder's own rules decide .int/.double.
        guard let decided = try? JSONDecoder().decode(JSONValue.self, from: Data(token)) else { throw Refused() }
        return decided
    }

    private func double(_ start: Int) throws(Refused) -> JSONValue {
        let token = UnsafeBufferPointer(rebasing: bytes[start..<index])
        guard let value = Double(String(decoding: token, as: UTF8.self)), value.isFinite else { throw Refused() }
        return .double(value)
    }

    private static func isDigit(_ byte: UInt8) -> Bool { byte &- UInt8(ascii: "0") < 10 }
}
