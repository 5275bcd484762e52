import Foundation
import HTTPTypes
@testable import IMHTTP
import Testing

/// Request heads and header names read from their bytes where they are ASCII, with the answers their
/// text readings give (docs/performance.md, "Bytes, not text, on every request").
@Suite struct HeaderBytesTests {

    /// The framer reads an ASCII head from its bytes: the same body length (or `lost`) as reading it as
    /// text, whatever the spacing, case, order, repeats and damage of its lines (docs/performance.md,
    /// "Bytes, not text, on every request").
    @Test func theFramerReadsAnASCIIHeadAsItsTextReadingDoes() {
        let lines = ["Content-Length: 12", "content-length:7", "CONTENT-LENGTH \t: \t 3 ", "Content-Length: -1", "Content-Length: +5",
                     "Content-Length: x", "Content-Length:", "Transfer-Encoding: chunked", "transfer-encoding :gzip", "Host: a:b",
                     "X-Content-Length: 9", "Content-Lengthy: 4", ": 5", "NoColon", "Content-Length: 1\r", "\tContent-Length: 2",
                     "Content-Length: 0", "Content-Length: 99999999999999999999", "Content\u{0B}Length: 3", "\r", "\n"]
        var generator = SystemRandomNumberGenerator()
        var heads = lines.map { "POST / HTTP/1.1\r\n" + $0 }
        for _ in 0..<3000 {
            var head = ["POST /x HTTP/1.1", "GET / HTTP/1.0\r"].randomElement(using: &generator)!
            for _ in 0..<Int.random(in: 0...4, using: &generator) {
                head += ["\r\n", "\r\n\r\n", "\r\r\n", "\n"].randomElement(using: &generator)! + lines.randomElement(using: &generator)!
            }
            heads.append(head)
        }
        heads += ["POST / HTTP/1.1\r\nContent-Length: 3\r\nX-Name: é", "POST / HTTP/1.1\r\nContent-Length\u{A0}: 4"]   // read as text
        for head in heads {
            let bytes = ArraySlice(Array(head.utf8))
            #expect(RequestFramer.body(of: bytes) == RequestFramer.bodyOfText(bytes), "\(head.debugDescription)")
        }
    }

    /// Which request headers are credentials: an ASCII name is read from its bytes, with the answer its
    /// text reading gives (docs/performance.md, "Bytes, not text, on every request").
    @Test func credentialHeaderNamesReadAsTheirTextReadingDoes() {
        let names = ["Authorization", "authorization", "AUTHORIZATION", "Authorization ", "X-Auth-Token", "token", "TOKEN", "tokeN-x",
                     "X-Secret", "client_secret", "Password", "x-passwordy", "Content-Type", "App-Key", "Signature", "Nonce", "tok",
                     "secre", "passwor", "", "Tök en", "Tokén", "X-Ŧoken", "Authorizatıon", "x-\u{212A}-token"]
        for name in names {
            let fromBytes = HTTPClientWrapper.credentialName(name), asText = HTTPClientWrapper.credentialNameAsText(name)
            #expect(fromBytes.credential == asText.credential && fromBytes.authorization == asText.authorization, "\(name)")
        }
        let request = OutboundRequest(url: "http://x", headers: [("Authorization", "Bearer abcdef"), ("X-Token", "abc"), ("x-session-token", "t0k3n-value"),
                                                                 ("Content-Type", "application/json")])
        #expect(HTTPClientWrapper.credentials(of: request) == ["Bearer abcdef", "abcdef", "t0k3n-value"])
    }

    /// Header lookups and the answer's type check read ASCII from its bytes, with Foundation's answers.
    @Test func asciiComparisonsAnswerAsFoundationDoes() {
        let words = ["Content-Type", "content-type", "CONTENT-TYPE", "Content-Typ", "Content-Types", "", "a", "A", "ß", "SS", "ss",
                     "Straße", "STRASSE", "x-\u{212A}", "x-k", "X-K", "é", "É", "application/JSON; charset=utf-8", "text/plain", "[]^_`{"]
        for a in words {
            for b in words {
                if let fast = ASCIICase.equal(a, b) { #expect(fast == (a.caseInsensitiveCompare(b) == .orderedSame), "\(a) \(b)") }
            }
            let lowered = a.lowercased()
            for word: StaticString in ["json", "form", "xml", "type", "t", "ss"] {
                if let fast = ASCIICase.contains(lowered, word) { #expect(fast == lowered.contains(String(describing: word)), "\(lowered) \(word)") }
            }
        }
        #expect(ASCIICase.equal("é", "É") == nil && ASCIICase.contains("é", "e") == nil)
        let request = HTTPRequestData(method: "POST", path: "/", headers: [("X-A", "1"), ("content-TYPE", "2"), ("Content-Type", "3")])
        #expect(request.header("Content-Type") == "2" && request.header("x-a") == "1" && request.header("X-B") == nil)
    }

    /// The declared body length, as `HTTPFields`' own subscript reads it (repeated fields joined).
    @Test func theDeclaredLengthIsReadAsTheFieldsSubscriptReadsIt() {
        let cases: [[(String, String)]] = [[], [("Content-Length", "12")], [("content-length", "3"), ("Host", "x")],
                                           [("Content-Length", "3"), ("Content-Length", "3")], [("Content-Length", " 4")], [("Content-Length", "x")]]
        for pairs in cases {
            var fields = HTTPFields()
            for (name, value) in pairs { fields.append(HTTPField(name: HTTPField.Name(name)!, value: value)) }
            #expect(HTTPServer.contentLength(fields) == fields[.contentLength].flatMap { Int($0) }, "\(pairs)")
        }
    }
}
