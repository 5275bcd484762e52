import Foundation

/// `application/x-www-form-urlencoded` bodies and query strings.
///
/// Parsing is lenient, as vendor SDKs in the wild need: `+` is a space, malformed `%` escapes are kept
/// literally, keys without `=` have an empty value, empty pairs are skipped, repeated keys are kept in
/// order. Encoding is strict (RFC 3986 unreserved characters only, space as `%20`).
public struct FormBody: Sendable {
    public var items: [(name: String, value: String)]

    public init(items: [(name: String, value: String)] = []) {
        self.items = items
    }

    /// The first value of `name`.
    public subscript(name: String) -> String? { items.first { $0.name == name }?.value }

    /// The first value of any key equal to `name` ignoring case (NIM's `pushcontent` / `pushContent`).
    public func value(caseInsensitive name: String) -> String? {
        items.first { $0.name.caseInsensitiveCompare(name) == .orderedSame }?.value
    }

    /// Every value of a repeated key (`toUserId=a&toUserId=b`).
    public func values(_ name: String) -> [String] { items.filter { $0.name == name }.map(\.value) }

    public mutating func append(_ name: String, _ value: String) { items.append((name, value)) }

    public mutating func append(_ name: String, _ value: String?) {
        if let value { items.append((name, value)) }
    }

    public var encoded: String { Self.encode(items) }

    public static func parse(_ text: String) -> [(name: String, value: String)] {
        // On the bytes, not on Characters: `&` and `=` are ASCII, so every cut is a character boundary,
        // and no grapheme breaking runs over the body (it was most of a callback's parse). Plain `while`
        // loops over the buffer: `split` and `firstIndex` over `String.UTF8View` stepped an index through
        // every byte of every routed callback, twice over for its query (docs/performance.md, "Columns by
        // position, text by bytes").
        var text = text
        return text.withUTF8 { utf8 in
            var items: [(name: String, value: String)] = []
            var start = 0
            while start < utf8.count {
                var end = start
                while end < utf8.count && utf8[end] != UInt8(ascii: "&") { end += 1 }
                if end > start {
                    var equals = start
                    while equals < end && utf8[equals] != UInt8(ascii: "=") { equals += 1 }
                    if equals < end {
                        items.append((decode(utf8, from: start, to: equals), decode(utf8, from: equals + 1, to: end)))
                    } else {
                        items.append((decode(utf8, from: start, to: end), ""))
                    }
                }
                start = end + 1
            }
            return items
        }
    }

    /// The bytes `start..<end` of `utf8` (valid UTF-8, cut at ASCII bytes) decoded leniently: `+` is a space,
    /// a `%` not followed by two hex digits is kept literally, invalid UTF-8 after unescaping is repaired.
    static func decode(_ utf8: UnsafeBufferPointer<UInt8>, from start: Int, to end: Int) -> String {
        var plain = true
        var index = start
        while index < end {
            if utf8[index] == UInt8(ascii: "%") || utf8[index] == UInt8(ascii: "+") { plain = false; break }
            index += 1
        }
        if plain { return String(decoding: UnsafeBufferPointer(rebasing: utf8[start..<end]), as: UTF8.self) }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(end - start)
        index = start
        while index < end {
            let byte = utf8[index]
            index += 1
            switch byte {
            case UInt8(ascii: "+"):
                bytes.append(UInt8(ascii: " "))
            case UInt8(ascii: "%"):
                if index + 2 <= end, let high = hexValue(utf8[index]), let low = hexValue(utf8[index + 1]) {
                    bytes.append(high << 4 | low)
                    index += 2
                } else {
                    bytes.append(byte)
                }
            default:
                bytes.append(byte)
            }
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    public static func encode(_ items: [(name: String, value: String)]) -> String {
        String(decoding: encodeBytes(items), as: UTF8.self)
    }

    /// `encode` as the UTF-8 bytes a request body carries, written into one buffer (every RongCloud
    /// and NIM request body: no string per item, no joining, no copy of the joined text).
    public static func encodeBytes(_ items: [(name: String, value: String)]) -> [UInt8] {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(items.reduce(items.count) { $0 + $1.name.utf8.count + $1.value.utf8.count })
        for (index, item) in items.enumerated() {
            if index > 0 { bytes.append(UInt8(ascii: "&")) }
            escape(item.name, into: &bytes)
            bytes.append(UInt8(ascii: "="))
            escape(item.value, into: &bytes)
        }
        return bytes
    }

    /// `escape(text)`'s bytes appended to `bytes`.
    static func escape(_ text: String, into bytes: inout [UInt8]) {
        var text = text
        text.withUTF8 { escape($0, into: &bytes) }
    }

    /// Each byte of `utf8` appended to `bytes`, percent-encoded outside the unreserved set.
    static func escape(_ utf8: UnsafeBufferPointer<UInt8>, into bytes: inout [UInt8]) {
        for byte in utf8 {
            if isUnreserved(byte) {
                bytes.append(byte)
            } else {
                bytes.append(UInt8(ascii: "%"))
                bytes.append(upperHex[Int(byte >> 4)])
                bytes.append(upperHex[Int(byte & 0x0F)])
            }
        }
    }

    /// Percent-encodes every UTF-8 byte outside the RFC 3986 unreserved set, with uppercase hex (what
    /// `addingPercentEncoding(withAllowedCharacters:)` wrote, at a fraction of its cost: every RongCloud
    /// and NIM request body goes through here).
    public static func escape(_ text: String) -> String {
        var text = text
        return text.withUTF8 { utf8 in
            guard utf8.contains(where: { !isUnreserved($0) }) else { return String(decoding: utf8, as: UTF8.self) }
            var escaped: [UInt8] = []
            escaped.reserveCapacity(utf8.count * 3)
            escape(utf8, into: &escaped)
            return String(decoding: escaped, as: UTF8.self)
        }
    }

    private static let upperHex: [UInt8] = Array("0123456789ABCDEF".utf8)

    private static func isUnreserved(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
             UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "~"):
            true
        default:
            false
        }
    }

    private static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
        default: nil
        }
    }
}

/// Lenient readings of values vendors spell in several ways.
public enum Lenient {
    /// `true`/`True`/`TRUE`/`1`/`yes` → true; `false`/`False`/`0`/`no` → false; anything else → nil.
    public static func bool(_ text: String?) -> Bool? {
        guard let text else { return nil }
        // The plain spelling first: Foundation's trimming is far dearer than the comparison.
        return word(text) ?? word(text.trimmingCharacters(in: .whitespaces).lowercased())
    }

    private static func word(_ text: String) -> Bool? {
        switch text {
        case "true", "1", "yes": true
        case "false", "0", "no": false
        default: nil
        }
    }

    /// An integer from `"42"`, `"42.0"` or `" 42 "`; nil otherwise.
    public static func int64(_ text: String?) -> Int64? {
        guard let text else { return nil }
        // The usual case first: Foundation's trimming is far dearer than the parse (every callback's times).
        if let value = Int64(text) { return value }
        let trimmed = text.trimmingCharacters(in: .whitespaces)
        guard !trimmed.isEmpty else { return nil }
        if let value = Int64(trimmed) { return value }
        if let double = Double(trimmed), double == double.rounded() { return Int64(exactly: double) }
        return nil
    }

    /// A Unix time given in seconds (10 digits) or milliseconds (13 digits), as milliseconds.
    public static func epochMs(_ text: String?) -> Int64? {
        guard let value = int64(text) else { return nil }
        return value < 100_000_000_000 ? value * 1000 : value
    }
}
