import Foundation
#if canImport(Glibc)
import Glibc
#endif
import IMCore
import IMHTTP
import Testing

@Suite struct FormBodyTests {
    /// The body bytes are the encoded text's: written into one buffer, with the text's escapes, `=` and `&`.
    @Test func encodedBytesAreTheEncodedText() {
        let samples: [[(name: String, value: String)]] = [
            [], [("", "")], [("a", "")], [("content", "{\"a\":\"b c+d&e=f\"}"), ("toGroupId", "g 1"), ("é", "中文~._-")],
            [("x", "%zz"), ("y", "\u{1F600}\r\n"), ("z", String(repeating: "a&", count: 300))],
        ]
        for items in samples {
            let text = items.map { "\(FormBody.escape($0.name))=\(FormBody.escape($0.value))" }.joined(separator: "&")
            #expect(FormBody.encodeBytes(items) == Array(text.utf8))
            #expect(FormBody.encode(items) == text)
        }
    }

    @Test func parsesRepeatedKeysAndLenientEscapes() {
        let form = FormBody(items: FormBody.parse("toUserId=a&toUserId=b&content=%7B%22x%22%3A1%7D&name=hello+world&bad=100%&flag&&k=%E4%B8%AD"))
        #expect(form.values("toUserId") == ["a", "b"])
        #expect(form["content"] == #"{"x":1}"#)
        #expect(form["name"] == "hello world")
        #expect(form["bad"] == "100%")
        #expect(form["flag"] == "")
        #expect(form["k"] == "中")
        #expect(form.value(caseInsensitive: "NAME") == "hello world")
        // A `%` without two hex digits after it stays literal, at the end of a value too.
        let odd = FormBody(items: FormBody.parse("a=%4&b=%zz1&c=x%&d=%41%4&e=%2B+%2b"))
        #expect(odd["a"] == "%4" && odd["b"] == "%zz1" && odd["c"] == "x%" && odd["d"] == "A%4" && odd["e"] == "+ +")
        // Unescaped UTF-8 (lenient senders) and combining marks split only at `&` and `=`.
        let raw = FormBody.parse("名=值&e\u{301}=x\u{301}&=v&k=")
        #expect(raw.map(\.name) == ["名", "e\u{301}", "", "k"] && raw.map(\.value) == ["值", "x\u{301}", "v", ""])
    }

    /// The parse over the body's bytes gives what the earlier parse over `String.UTF8View` (split, then
    /// each part unescaped) gave, for random texts of the characters that matter: separators, escapes,
    /// bad escapes, escapes of invalid UTF-8, non-ASCII and combining marks.
    @Test func parseMatchesTheUTF8ViewParse() {
        func reference(_ text: String) -> [(name: String, value: String)] {
            func decode(_ part: Substring) -> String {
                let utf8 = part.utf8
                guard utf8.contains(where: { $0 == UInt8(ascii: "%") || $0 == UInt8(ascii: "+") }) else { return String(part) }
                var bytes: [UInt8] = []
                var index = utf8.startIndex
                func hex(_ byte: UInt8) -> UInt8? {
                    switch byte {
                    case 48...57: byte - 48
                    case 97...102: byte - 87
                    case 65...70: byte - 55
                    default: nil
                    }
                }
                while index < utf8.endIndex {
                    let byte = utf8[index]
                    index = utf8.index(after: index)
                    if byte == UInt8(ascii: "+") {
                        bytes.append(UInt8(ascii: " "))
                    } else if byte == UInt8(ascii: "%"), let end = utf8.index(index, offsetBy: 2, limitedBy: utf8.endIndex),
                              let high = hex(utf8[index]), let low = hex(utf8[utf8.index(after: index)]) {
                        bytes.append(high << 4 | low)
                        index = end
                    } else {
                        bytes.append(byte)
                    }
                }
                return String(decoding: bytes, as: UTF8.self)
            }
            return text.utf8.split(separator: UInt8(ascii: "&"), omittingEmptySubsequences: true).map { pair in
                if let equals = pair.firstIndex(of: UInt8(ascii: "=")) {
                    return (decode(Substring(pair[..<equals])), decode(Substring(pair[pair.index(after: equals)...])))
                }
                return (decode(Substring(pair)), "")
            }
        }
        let pieces = ["&", "&", "=", "=", "%", "+", "a", "Z", "0", "9", "f", "F", "g", "%4", "%41", "%e4%b8%ad", "%FF", "%C3", "%zz",
                      "中", "e\u{301}", "\u{1F600}", " ", "~"]
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<2000 {
            let text = (0..<Int.random(in: 0...24, using: &generator)).map { _ in pieces.randomElement(using: &generator)! }.joined()
            let parsed = FormBody.parse(text), expected = reference(text)
            #expect(parsed.map(\.name) == expected.map(\.name) && parsed.map(\.value) == expected.map(\.value), "\(text)")
        }
    }

    /// The byte-level escape writes what Foundation's percent encoding with the unreserved set wrote.
    @Test func escapeMatchesFoundationsPercentEncoding() {
        let unreserved = CharacterSet(charactersIn: "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")
        let ascii = String(decoding: (0..<128).map { UInt8($0) }, as: UTF8.self)
        for text in ["", "plain-text_1.2~", ascii, "a b+c&d=e/f?g#h%", "中文 ✓ 😀 é e\u{301}", "{\"a\":[1,\"x y\"]}"] {
            #expect(FormBody.escape(text) == text.addingPercentEncoding(withAllowedCharacters: unreserved), "\(text.debugDescription)")
        }
        #expect(FormBody.escape("é") == "%C3%A9")
    }

    @Test func encodesStrictlyAndRoundTrips() {
        let items = [("content", #"{"a":"b c&d=e+f"}"#), ("to", "u 1"), ("to", "中")]
        let encoded = FormBody.encode(items)
        #expect(!encoded.contains(" ") && !encoded.contains("+") && encoded.hasPrefix("content=%7B%22a%22"))
        let back = FormBody.parse(encoded)
        #expect(back.map(\.name) == items.map(\.0) && back.map(\.value) == items.map(\.1))
    }

    @Test(arguments: [("true", true), ("True", true), ("1", true), ("FALSE", false), ("0", false)])
    func lenientBooleans(text: String, value: Bool) {
        #expect(Lenient.bool(text) == value)
    }

    @Test func lenientNumbersAndEpochs() {
        #expect(Lenient.bool("maybe") == nil)
        #expect(Lenient.bool(" TRUE ") == true && Lenient.bool("0") == false && Lenient.bool(nil) == nil)
        #expect(Lenient.int64("+7") == 7 && Lenient.int64("-3") == -3 && Lenient.int64("") == nil && Lenient.int64(nil) == nil)
        #expect(Lenient.int64(" 42 ") == 42)
        #expect(Lenient.int64("42.0") == 42)
        #expect(Lenient.int64("4.5") == nil)
        #expect(Lenient.epochMs("1408710653") == 1_408_710_653_000)
        #expect(Lenient.epochMs("1408710653000") == 1_408_710_653_000)
    }
}

@Suite struct HashingTests {
    /// RongCloud's documented signature example (secret + nonce + timestamp).
    @Test func sha1MatchesTheVendorTestVectors() {
        #expect(Hashing.sha1Hex("Y1W2MeFwwwRxa0" + "14314" + "1408710653000") == "30be0bbca9c9b2e27578701e9fda2358a814c88f")
        #expect(Hashing.sha1Hex("secret" + "95493253" + "1795258879") == "5c772994e494a96a6f14c4427dd7ae820f4ac41e")
    }

    /// Digests written out from their bytes: the known answers of SHA-256, HMAC-SHA256 and MD5.
    @Test func digestsAreWrittenOutAsLowercaseHex() {
        #expect(Hashing.sha256Hex(Array("abc".utf8)) == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
        #expect(Hashing.sha256Hex([]) == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
        #expect(Hashing.sha1Hex([UInt8]()) == "da39a3ee5e6b4b0d3255bfef95601890afd80709")
        #expect(Hashing.md5Hex("abc") == "900150983cd24fb0d6963f7d28e17f72")
        #expect(Hashing.hmacSHA256Hex(key: "key", "The quick brown fox jumps over the lazy dog")
            == "f7bc83f430538424b13298e6aa6fb143ef4d59a14946175997479dbc2d1a3cd8")
    }

    @Test func md5AndConstantTimeCompare() {
        #expect(Hashing.md5Hex("") == "d41d8cd98f00b204e9800998ecf8427e")
        #expect(Hashing.constantTimeEquals("abc", "abc"))
        #expect(!Hashing.constantTimeEquals("abc", "abd"))
        #expect(!Hashing.constantTimeEquals("abc", "abcd"))
    }
}

@Suite struct HTTPClientWrapperTests {
    /// Nothing listens: the request fails at once as `connection_refused` (retryable), not after the whole
    /// timeout of connection attempts (which kept a dead target's sends hanging 15 s before the bridge's
    /// health board knew anything), and without `abandoned_after_ms` (nothing went out).
    @Test func aRefusedConnectionFailsAtOnce() async throws {
        // Bound but not listening, and held for the test: a port picked free and let go could be taken by
        // another test's server meanwhile (the suites run in parallel), which would then answer.
        let closed = try ClosedLoopbackPort()
        defer { closed.close() }
        let port = closed.port
        let started = Date()
        do {
            _ = try await HTTPClientWrapper(timeoutSeconds: 120).send(OutboundRequest(method: "POST", url: "http://127.0.0.1:\(port)/send", body: Array("{}".utf8)))
            Issue.record("a request to a closed port succeeded")
        } catch let error as IMError {
            #expect(error.isRetryable && error.details["transport"] == "connection_refused", "\(error)")
            #expect(error.abandonedAfterMs == nil)
        }
        // Connecting again until the deadline would take the whole 120 s; a refusal taken at once returns long
        // before half of it, however busy the machine (a loaded full run measured up to 17 s).
        #expect(Date().timeIntervalSince(started) < 60, "failed after \(Date().timeIntervalSince(started)) s, not at once")
    }

    /// A server that takes the request and never answers: the request's deadline alone ends the wait (no
    /// idle-read timer is armed), as a retryable timeout that says how long the request was out.
    @Test func anUnansweredRequestEndsAtItsDeadline() async throws {
        let server = HTTPServer(host: "127.0.0.1", port: 0) { _ in
            // Past the client's deadline (a stopping server waits for its handlers, so not much longer).
            try? await Task.sleep(nanoseconds: 3_000_000_000)
            return HTTPResponseData.json(["late": true])
        }
        let port = try await server.start()
        do {
            _ = try await HTTPClientWrapper(timeoutSeconds: 1).send(OutboundRequest(method: "POST", url: "http://127.0.0.1:\(port)/send", body: Array("{}".utf8)))
            Issue.record("an unanswered request succeeded")
        } catch let error as IMError {
            #expect(error.code == .timeout && error.isRetryable, "\(error)")
            #expect(error.abandonedAfterMs == 1000, "\(error)")
        }
        await server.stop()
    }
}

/// A loopback port that refuses connections: a socket bound to it and not listening, held until `close`.
struct ClosedLoopbackPort {
    let fd: Int32
    let port: Int

    init() throws {
        let socketFD = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard socketFD >= 0 else { throw IMError(.unavailable, "no socket: errno \(errno)") }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = 0
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(socketFD, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        var found = sockaddr_in()
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let named = withUnsafeMutablePointer(to: &found) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(socketFD, $0, &length) }
        }
        guard bound == 0, named == 0 else {
            Glibc.close(socketFD)
            throw IMError(.unavailable, "cannot bind a loopback port: errno \(errno)")
        }
        fd = socketFD
        port = Int(UInt16(bigEndian: found.sin_port))
    }

    func close() { Glibc.close(fd) }
}

@Suite struct RandomHexIDTests {
    @Test func isAUUIDsThirtyTwoLowercaseHexDigitsAndNeverRepeats() {
        var seen = Set<String>()
        for _ in 0..<1000 {
            let id = Hashing.randomHexID()
            #expect(id.utf8.count == 32 && id.utf8.allSatisfy { (48...57).contains($0) || (97...102).contains($0) }, "\(id)")
            // A version-4 UUID: the 13th digit is 4, the 17th one of 8, 9, a, b.
            #expect(Array(id)[12] == "4" && "89ab".contains(Array(id)[16]), "\(id)")
            seen.insert(id)
        }
        #expect(seen.count == 1000)
    }
}
