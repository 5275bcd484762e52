import NIOCore

/// Finds where requests start in a connection's raw bytes without parsing them for the server: a head
/// runs to its blank line, a body is as long as its `Content-Length` (none: no body). After a head with
/// `Transfer-Encoding` the framer loses track until that request's end is decoded (`ended`), and then
/// frames from the next read on: a head pipelined in the same read behind a chunked request is bounded
/// by the idle timeout only. Blank lines between requests (which servers ignore) start nothing.
struct RequestFramer {
    enum State: Equatable { case between, head, body(Int), lost }
    var state = State.between
    /// The head being read (at most `maxHeadBytes`; longer heads are refused by the decoder anyway).
    var head: [UInt8] = []
    static let maxHeadBytes = 128 << 10

    /// Reads `buffer`; returns how many requests started in it.
    mutating func feed(_ buffer: ByteBuffer) -> Int {
        buffer.withUnsafeReadableBytes { feed($0) }
    }

    mutating func feed(_ bytes: [UInt8]) -> Int {
        bytes.withUnsafeBytes { feed($0) }
    }

    mutating func feed(_ bytes: UnsafeRawBufferPointer) -> Int {
        var started = 0
        do {
            var index = 0
            scan: while index < bytes.count {
                switch state {
                case .lost:
                    break scan
                case .between:
                    let byte = bytes[index]
                    index += 1
                    if byte == 0x0D || byte == 0x0A { continue }
                    started += 1
                    head = [byte]
                    state = .head
                case .head:
                    let from = max(0, head.count - 3)
                    let end = min(bytes.count, index + Self.maxHeadBytes - head.count)
                    head.append(contentsOf: bytes[index..<end])
                    index = end
                    if let blank = Self.blankLine(in: head, from: from) {
                        // Bytes after the head's end go back to the loop.
                        index -= head.count - (blank + 4)
                        state = Self.body(of: head[..<blank])
                        head = []
                    } else if head.count >= Self.maxHeadBytes {
                        state = .lost
                    }
                case .body(let remaining):
                    let taken = min(remaining, bytes.count - index)
                    index += taken
                    state = remaining == taken ? .between : .body(remaining - taken)
                }
            }
        }
        return started
    }

    /// A request's end was decoded: a framer that lost track starts again with the next read.
    mutating func ended() {
        if state == .lost { state = .between }
    }

    static func blankLine(in head: [UInt8], from: Int) -> Int? {
        guard head.count >= 4 else { return nil }
        for index in from...(head.count - 4) where head[index] == 0x0D && head[index + 1] == 0x0A && head[index + 2] == 0x0D
            && head[index + 3] == 0x0A {
            return index
        }
        return nil
    }

    /// What follows a head: its body's length, or `lost` for a chunked (or otherwise framed) body.
    /// An ASCII head (every head a vendor sends) is read from its bytes; any other goes through `bodyOfText`,
    /// which reads it as text — the same answer for ASCII, where the text's line, colon and whitespace
    /// rules are these bytes'. The text reading cost 4 % of the relay bench process (Foundation's
    /// `trimmingCharacters` on every header of every callback; docs/performance.md, "Bytes, not text, on
    /// every request").
    static func body(of head: ArraySlice<UInt8>) -> State {
        // Plain `while` loops over the head's buffer: generic algorithms and iterators (`allSatisfy`,
        // `for … in` a slice) allocate for every byte in a debug build, which `CostGuardTests` counts.
        let fromBytes: State? = head.withUnsafeBufferPointer { bytes in
            var index = 0
            while index < bytes.count {
                if bytes[index] >= 0x80 { return nil }
                index += 1
            }
            return bodyOfASCII(bytes)
        }
        return fromBytes ?? bodyOfText(head)
    }

    private static func bodyOfASCII(_ head: UnsafeBufferPointer<UInt8>) -> State {
        var length = 0
        var lineStart = 0
        var first = true
        while lineStart < head.count {
            // The line runs to the next CR LF (or the head's end).
            var lineEnd = head.count
            var index = lineStart
            while index < head.count {
                if head[index] == 0x0D, index + 1 < head.count, head[index + 1] == 0x0A {
                    lineEnd = index
                    break
                }
                index += 1
            }
            let next = lineEnd == head.count ? head.count : lineEnd + 2
            defer { lineStart = next }
            // Empty lines are skipped (as `split` omits them); the first line is the request line.
            guard lineEnd > lineStart else { continue }
            if first {
                first = false
                continue
            }
            var colon = lineStart
            while colon < lineEnd, head[colon] != UInt8(ascii: ":") { colon += 1 }
            guard colon < lineEnd else { continue }
            let name = trimmed(head, lineStart, colon)
            if equalsIgnoringASCIICase(head, name, "transfer-encoding") { return .lost }
            if equalsIgnoringASCIICase(head, name, "content-length") {
                let value = trimmed(head, colon + 1, lineEnd)
                guard let declared = Int(String(decoding: UnsafeBufferPointer(rebasing: head[value]), as: UTF8.self)), declared >= 0 else {
                    return .lost
                }
                length = declared
            }
        }
        return length == 0 ? .between : .body(length)
    }

    /// `start..<end` of `bytes` without the spaces and tabs at either end (`CharacterSet.whitespaces` in ASCII).
    private static func trimmed(_ bytes: UnsafeBufferPointer<UInt8>, _ start: Int, _ end: Int) -> Range<Int> {
        var (start, end) = (start, end)
        while start < end, bytes[start] == 0x20 || bytes[start] == 0x09 { start += 1 }
        while end > start, bytes[end - 1] == 0x20 || bytes[end - 1] == 0x09 { end -= 1 }
        return start..<end
    }

    /// Whether ASCII `bytes[range]` lowercased are `lowercase` (itself lowercase ASCII).
    private static func equalsIgnoringASCIICase(_ bytes: UnsafeBufferPointer<UInt8>, _ range: Range<Int>, _ lowercase: StaticString) -> Bool {
        guard range.count == lowercase.utf8CodeUnitCount else { return false }
        let expected = lowercase.utf8Start
        var offset = 0
        while offset < range.count {
            if ASCIICase.folded(bytes[range.lowerBound + offset]) != expected[offset] { return false }
            offset += 1
        }
        return true
    }

    /// `body(of:)` read as text: any head, ASCII or not.
    static func bodyOfText(_ head: ArraySlice<UInt8>) -> State {
        var length = 0
        for line in String(decoding: head, as: UTF8.self).split(separator: "\r\n").dropFirst() {
            guard let colon = line.firstIndex(of: ":") else { continue }
            let name = line[..<colon].trimmingCharacters(in: .whitespaces).lowercased()
            let value = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
            if name == "transfer-encoding" { return .lost }
            if name == "content-length" {
                guard let declared = Int(value), declared >= 0 else { return .lost }
                length = declared
            }
        }
        return length == 0 ? .between : .body(length)
    }
}
