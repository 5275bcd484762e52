import Foundation
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
    /// Read byte by byte: every request of a listener with limits comes here, and reading the head as a
    /// `String` split it into grapheme clusters and trimmed each line with Foundation (docs/performance.md,
    /// "Fixed costs per transaction and per request"). A head with a byte outside ASCII is read as text,
    /// where Unicode spaces trim too.
    static func body(of head: ArraySlice<UInt8>) -> State {
        guard head.allSatisfy({ $0 < 0x80 }) else { return bodyOfText(head) }
        var length = 0
        var start = head.startIndex
        var first = true
        while start < head.endIndex {
            // One line: up to the next CR LF (a lone CR or LF stays inside the line, as in the text).
            var end = start
            while end < head.endIndex, !(head[end] == 0x0D && end + 1 < head.endIndex && head[end + 1] == 0x0A) { end += 1 }
            let line = head[start..<end]
            start = min(head.endIndex, end + 2)
            guard !line.isEmpty else { continue }
            if first {
                first = false   // the request line
                continue
            }
            guard let colon = line.firstIndex(of: 0x3A) else { continue }
            let name = trimmed(line[..<colon])
            if equalsIgnoringCase(name, "transfer-encoding") { return .lost }
            if equalsIgnoringCase(name, "content-length") {
                guard let declared = Int(String(decoding: trimmed(line[(colon + 1)...]), as: UTF8.self)), declared >= 0 else { return .lost }
                length = declared
            }
        }
        return length == 0 ? .between : .body(length)
    }

    /// ASCII spaces and tabs (what `.whitespaces` holds below 0x80) taken off both ends.
    static func trimmed(_ bytes: ArraySlice<UInt8>) -> ArraySlice<UInt8> {
        var (from, to) = (bytes.startIndex, bytes.endIndex)
        while from < to, bytes[from] == 0x20 || bytes[from] == 0x09 { from += 1 }
        while to > from, bytes[to - 1] == 0x20 || bytes[to - 1] == 0x09 { to -= 1 }
        return bytes[from..<to]
    }

    /// `bytes`, ASCII letters lowercased, equal to `lowercase` (ASCII, lowercase).
    static func equalsIgnoringCase(_ bytes: ArraySlice<UInt8>, _ lowercase: StaticString) -> Bool {
        guard bytes.count == lowercase.utf8CodeUnitCount else { return false }
        return lowercase.withUTF8Buffer { target in
            zip(bytes, target).allSatisfy { byte, wanted in (byte >= 0x41 && byte <= 0x5A ? byte | 0x20 : byte) == wanted }
        }
    }

    /// `body(of:)` of a head with bytes outside ASCII: its text split into lines, each trimmed of
    /// Unicode spaces.
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
