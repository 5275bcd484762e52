/// Case-insensitive comparisons read from the bytes when the text is ASCII, as every HTTP header name and
/// most header values are: nil when it is not, and the caller asks Foundation, whose answer for ASCII is
/// the same (ASCII letters fold to ASCII letters, nothing else folds) but which costs far more on every
/// header of every request (docs/performance.md, "Bytes, not text, on every request"). Plain `while` loops over the bytes: generic
/// algorithms allocate for every byte in a debug build, which `CostGuardTests` counts.
enum ASCIICase {
    /// Whether `a` and `b` are equal ignoring case; nil unless both are ASCII.
    static func equal(_ a: String, _ b: String) -> Bool? {
        var (a, b) = (a, b)
        let (x, y) = (a.withUTF8 { isASCII($0) }, b.withUTF8 { isASCII($0) })
        guard x, y else { return nil }
        guard a.utf8.count == b.utf8.count else { return false }
        return a.withUTF8 { x in
            b.withUTF8 { y in
                var index = 0
                while index < x.count {
                    if folded(x[index]) != folded(y[index]) { return false }
                    index += 1
                }
                return true
            }
        }
    }

    /// Whether `text` contains `word` (lowercase ASCII) as it is written; nil unless `text` is ASCII.
    static func contains(_ text: String, _ word: StaticString) -> Bool? {
        var text = text
        return text.withUTF8 { bytes -> Bool? in
            guard isASCII(bytes) else { return nil }
            return contains(bytes, word, folding: false)
        }
    }

    /// Whether `bytes` (ASCII; lowercased first when `folding`) contain `word` (lowercase ASCII).
    static func contains(_ bytes: UnsafeBufferPointer<UInt8>, _ word: StaticString, folding: Bool) -> Bool {
        let (length, expected) = (word.utf8CodeUnitCount, word.utf8Start)
        guard bytes.count >= length else { return false }
        var start = 0
        while start + length <= bytes.count {
            var offset = 0
            while offset < length, (folding ? folded(bytes[start + offset]) : bytes[start + offset]) == expected[offset] { offset += 1 }
            if offset == length { return true }
            start += 1
        }
        return false
    }

    static func isASCII(_ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        var index = 0
        while index < bytes.count {
            if bytes[index] >= 0x80 { return false }
            index += 1
        }
        return true
    }

    static func folded(_ byte: UInt8) -> UInt8 { byte >= 0x41 && byte <= 0x5A ? byte | 0x20 : byte }
}
