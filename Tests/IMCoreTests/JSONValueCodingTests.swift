import Foundation
@testable import IMCore
import Testing

/// `JSONValue.parse` / `jsonData()` use a hand-written UTF-8 parser and writer. These tests hold them to
/// the behaviour they replaced: decoding with `JSONDecoder` and encoding with `JSONEncoder`
/// (`[.sortedKeys, .withoutEscapingSlashes]`), case by case and on seeded random values.
@Suite struct JSONValueCodingTests {
    static func foundationDecode(_ text: String) -> JSONValue? {
        try? JSONDecoder().decode(JSONValue.self, from: Data(text.utf8))
    }

    static func foundationEncode(_ value: JSONValue) -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return (try? encoder.encode(value)) ?? Data("null".utf8)
    }

    static let documents: [String] = [
        "0", "-0", "1", "-1", "42", "9007199254740993", "-9007199254740993", "9223372036854775807", "9223372036854775808",
        "-9223372036854775808", "-9223372036854775809", "123456789012345678901234567890", "0.1", "-2.5E-3", "1.5e300", "4.9e-324",
        "1.0", "-0.0", "1e2", "1E+2", "1.5e1", "0e0", "1e-400", "9007199254740993.0", "9007199254740993.5", "1.0000000000000000001",
        "1e19", "1e400", "01", "-", "1.", ".5", "+1", "1e", "1e+", "--1", "0x10",
        "true", "false", "null", "tru", "nul", "True", "",
        " 1 ", "\t\r\n[1]\n", "\u{0C}1", "\u{FEFF}{\"a\":1}",
        #""""#, #""a\u00e9\ud83d\ude00""#, #""\uD834\uDD1E""#, #""\ud800""#, #""\ud800x""#, #""\udc00""#, #""\ud800\u0041""#,
        #""\/\\\"\b\f\n\r\t""#, #""\u0000""#, #""\x""#, #""\u12""#, "\"a\nb\"", "\"\u{7F}\u{2028}é😀\"", #""unterminated"#,
        "[]", "{}", "[1,2,[3,[4,{}]]]", "[1,]", "{\"a\":1,}", "[1 2]", "1 2", "{\"b\":1}x", "[", "{", "{\"a\"}", "{\"a\":}", "{1:2}",
        #"{"a":1,"a":2}"#, #"{"é":1,"e\u0301":2}"#, #"{"id":9007199254740993,"f":1.5,"s":"x","n":null,"b":true,"a":[1,"2"]}"#,
        #"{"type":1,"content":"hi \/ there","extra":{"nested":[true,false,null,-1.25e-5]},"mention":{"uids":["u1","u2"],"all":0}}"#,
        String(repeating: "[", count: 300) + String(repeating: "]", count: 300),
    ]

    @Test(arguments: documents)
    func parseMatchesJSONDecoder(_ text: String) {
        let expected = Self.foundationDecode(text)
        let parsed = try? JSONValue.parse(text)
        #expect(parsed == expected, "\(text.debugDescription)")
    }

    /// `parse(_: String)` reads the text's UTF-8 in place; `parse(_: Data)` is the reference.
    @Test(arguments: documents)
    func parseOfTextMatchesParseOfData(_ text: String) {
        let fromData = Result { try JSONValue.parse(Data(text.utf8)) }
        let fromText = Result { try JSONValue.parse(text) }
        switch (fromData, fromText) {
        case (.success(let a), .success(let b)): #expect(a == b, "\(text.debugDescription)")
        case (.failure(let a), .failure(let b)): #expect("\(a)" == "\(b)", "\(text.debugDescription)")
        default: Issue.record("\(text.debugDescription): \(fromData) against \(fromText)")
        }
        // A bridged (non-native) or substring-backed text takes the same path.
        let sliced = String(("  " + text + "  ").dropFirst(2).dropLast(2))
        #expect((try? JSONValue.parse(sliced)) == (try? JSONValue.parse(Data(text.utf8))), "\(text.debugDescription)")
    }

    /// `jsonString()` is `jsonData()` as text, escapes, surrogate pairs, control characters and
    /// non-ASCII included.
    @Test func jsonStringIsJSONDataAsText() throws {
        var values = Self.values
        values += ["", "\u{0}\u{1}\u{1F}\u{7F}", "\"", "\\", "a\"b\\c", "\"\"", "é😀\u{2028}\u{10FFFF}", ["": ""], [.double(-1.5e-7), .double(1e21), .int(.min)],
                   .double(.nan), ["k": .double(.infinity)]]
        var generator = SplitMix64(seed: 7)
        for _ in 0..<300 { values.append(Self.randomValue(&generator, depth: 0)) }
        for value in values {
            #expect(value.jsonString() == String(decoding: value.jsonData(), as: UTF8.self), "\(value)")
        }
        #expect(JSONValue.double(.nan).jsonString() == "null")
    }

    /// The parser's own UTF-8 check against the standard library's, on every sequence of up to three
    /// bytes drawn from the boundaries of the well-formed ranges, and on random four- and five-byte ones.
    @Test func utf8CheckMatchesTheStandardLibrary() async {
        let edges: [UInt8] = [0x00, 0x22, 0x41, 0x7F, 0x80, 0x8F, 0x90, 0x9F, 0xA0, 0xBF, 0xC0, 0xC1, 0xC2, 0xDF, 0xE0, 0xE1, 0xEC,
                              0xED, 0xEE, 0xEF, 0xF0, 0xF1, 0xF3, 0xF4, 0xF5, 0xFF]
        func check(_ bytes: [UInt8]) {
            let expected = String(validating: bytes, as: UTF8.self) != nil
            let checked = bytes.withUnsafeBufferPointer { JSONFastParser.isValidUTF8($0) }
            #expect(checked == expected, "\(bytes.map { String($0, radix: 16) })")
        }
        check([])
        for a in edges {
            check([a])
            for b in edges {
                check([a, b])
                for c in edges { check([a, b, c]) }
            }
            await Task.yield()   // tens of thousands of checks: never hold one of the pool's threads for long
        }
        var generator = SplitMix64(seed: 3)
        for round in 0..<20_000 {
            if round % 1000 == 0 { await Task.yield() }
            let count = 4 + Int(generator.next() % 2)
            check((0..<count).map { _ in edges[Int(generator.next() % UInt64(edges.count))] })
        }
        check(Array("你好 😀 e\u{301} \u{10FFFF}".utf8))
    }

    /// The strict parser makes a string of its bytes with `String(decoding:as:)` and refuses it when that
    /// repaired anything (`JSONFastParser.text`): it must take exactly the well-formed strings, as the
    /// standard library's check says, whole and with the same characters, wherever the bytes sit (after
    /// ASCII of every length, after an escape).
    @Test func stringBytesAreTakenExactlyWhenWellFormed() async {
        let edges: [UInt8] = [0x41, 0x7F, 0x80, 0x8F, 0x90, 0x9F, 0xA0, 0xBD, 0xBF, 0xC0, 0xC1, 0xC2, 0xDF, 0xE0, 0xE1, 0xEC,
                              0xED, 0xEE, 0xEF, 0xF0, 0xF1, 0xF3, 0xF4, 0xF5, 0xFF]
        let escapedNewline: [UInt8] = [UInt8(ascii: "\\"), UInt8(ascii: "n")]
        func check(_ bytes: [UInt8]) {
            let expected = String(validating: bytes, as: UTF8.self)
            for prefix: [UInt8] in [[], Array("a".utf8), Array("abcdefghijklmnopq".utf8), escapedNewline] {
                let document = [0x22] + prefix + bytes + [0x22]
                let parsed = try? JSONFastParser.parse(Data(document))
                let prefixText = prefix == escapedNewline ? "\n" : String(decoding: prefix, as: UTF8.self)
                #expect(parsed == expected.map { .string(prefixText + $0) }, "\(prefix) \(bytes.map { String($0, radix: 16) })")
            }
        }
        for a in edges {
            check([a])
            for b in edges {
                check([a, b])
                for c in edges { check([a, b, c]) }
            }
            await Task.yield()   // tens of thousands of checks: never hold one of the pool's threads for long
        }
        var generator = SplitMix64(seed: 11)
        for round in 0..<5_000 {
            if round % 500 == 0 { await Task.yield() }
            let count = 4 + Int(generator.next() % 3)
            check((0..<count).map { _ in edges[Int(generator.next() % UInt64(edges.count))] })
        }
        check(Array("你好 😀 e\u{301} \u{10FFFF} \u{FFFD}".utf8))
    }

    /// The writer's eight-bytes-at-a-time test against a byte-by-byte one, each byte value in each lane.
    @Test func wordEscapeTestMatchesBytes() async {
        func expected(_ word: UInt64) -> Bool {
            (0..<8).contains { lane in
                let byte = UInt8(truncatingIfNeeded: word >> (lane * 8))
                return byte < 0x20 || byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\")
            }
        }
        let clean: UInt64 = 0x4141_4141_4141_4141
        for lane in 0..<8 {
            await Task.yield()
            for value in 0...255 {
                let word = clean & ~(0xFF << (lane * 8)) | UInt64(value) << (lane * 8)
                #expect(JSONFastWriter.anyEscaped(word) == expected(word), "\(String(word, radix: 16))")
            }
        }
        var generator = SplitMix64(seed: 5)
        for round in 0..<50_000 {
            if round % 2000 == 0 { await Task.yield() }
            var word = generator.next()
            if word & 1 == 0 { word |= 0x8080_8080_8080_8080 }   // non-ASCII lanes too
            #expect(JSONFastWriter.anyEscaped(word) == expected(word))
        }
        // Strings whose escapes sit at every offset of a word, against JSONEncoder.
        for offset in 0..<17 {
            for special in ["\"", "\\", "\u{0}", "\u{1F}", "\n", "é", "😀"] {
                let text = String(repeating: "a", count: offset) + special + String(repeating: "中", count: offset % 5)
                #expect(JSONValue.string(text).jsonData() == Self.foundationEncode(.string(text)), "\(text.debugDescription)")
            }
        }
    }

    @Test func invalidUTF8MatchesJSONDecoder() {
        for bytes: [UInt8] in [[0x22, 0xFF, 0x22], [0x22, 0xED, 0xA0, 0x80, 0x22], [0x22, 0xC3, 0x22], [0x5B, 0x22, 0xE2, 0x82, 0x22, 0x5D]] {
            let expected = try? JSONDecoder().decode(JSONValue.self, from: Data(bytes))
            #expect((try? JSONValue.parse(Data(bytes))) == expected, "\(bytes)")
        }
    }

    @Test func ordinaryDocumentsTakeTheFastPath() throws {
        let text = #"{"type":1,"content":"caf\u00e9 \/ \"q\"","ids":[9007199254740993,-9223372036854775808],"f":-0.25,"ok":true,"x":null}"#
        let value = try JSONFastParser.parse(Data(text.utf8))
        #expect(value == Self.foundationDecode(text))
        #expect(value["ids"] == [.int(9_007_199_254_740_993), .int(.min)])
        #expect(value["content"] == "café / \"q\"")
        #expect(throws: JSONFastParser.Refused.self) { try JSONFastParser.parse(Data("[1,]".utf8)) }
        #expect(try JSONFastParser.parse(Data("[1.0]".utf8)) == [.int(1)])   // an integral 1.0: JSONDecoder's rule, token alone
    }

    @Test func keepsIntegersAndDoublesApartAndFirstDuplicateKey() throws {
        #expect(try JSONValue.parse("9223372036854775807") == .int(.max))
        #expect(try JSONValue.parse("-9223372036854775808") == .int(.min))
        #expect(try JSONValue.parse("9223372036854775808") == .double(9_223_372_036_854_775_808))
        #expect(try JSONValue.parse("0.5") == .double(0.5))
        #expect(try JSONValue.parse(#"{"a":1,"a":2}"#) == ["a": 1])
        #expect { try JSONValue.parse(#""\ud800""#) } throws: { ($0 as? IMError)?.code == .malformedPayload }
        #expect { try JSONValue.parse("1e400") } throws: { ($0 as? IMError)?.code == .malformedPayload }
    }

    static let values: [JSONValue] = [
        .null, true, false, 0, -1, .int(.max), .int(.min), 9_007_199_254_740_993,
        .double(1), .double(1.5), .double(-0.0), .double(0.1), .double(1e20), .double(1e21), .double(1e-7), .double(1e16),
        .double(123_456_789.123), .double(5e-324), .double(.greatestFiniteMagnitude), .double(100), .double(-2.5e-3),
        "", "a/b", "quote \" backslash \\ controls \n\r\t\u{8}\u{C}\u{1}\u{1F}\u{0} del \u{7F} sep \u{2028} é 😀",
        [], [:], [1, "2", [3.5, nil]],
        ["b": 1, "a": 2, "B": 3, "a10": 4, "a9": 5, "é": 6, "_": 7, "Z": 8, "": 9, "aa": 10, "a b": 11, "e\u{301}x": 12,
         "f": 13, "Å": 14, "A\u{30A}x": 15, "\u{FFFF}": 16, "\u{10000}": 17, "😀": 18, "k\"ey/\n": 19],
        ["nested": ["z": [["y": 1, "x": 2]], "a": .null]],
        .double(.infinity), .double(.nan), ["ok": 1, "bad": [.double(-.infinity)]],
    ]

    @Test(arguments: values)
    func writerMatchesJSONEncoder(_ value: JSONValue) {
        let written = value.jsonData()
        #expect(written == Self.foundationEncode(value), "\(String(decoding: written, as: UTF8.self))")
    }

    @Test func slashesAreNotEscapedAndNonFiniteIsNull() {
        #expect(JSONValue.string("a/b").jsonString() == #""a/b""#)
        #expect(JSONValue.array([.double(.nan)]).jsonString() == "null")
        #expect(JSONValue.double(2).jsonString() == "2")
    }

    /// Seeded random trees: the writer matches JSONEncoder byte for byte and parsing its output matches
    /// JSONDecoder.
    @Test func randomValuesMatchFoundation() throws {
        var generator = SplitMix64(seed: 0x1EB5_1D6E)
        for round in 0..<400 {
            let value = Self.randomValue(&generator, depth: 0)
            let written = value.jsonData()
            #expect(written == Self.foundationEncode(value), "round \(round)")
            let text = String(decoding: written, as: UTF8.self)
            #expect(try JSONValue.parse(written) == Self.foundationDecode(text), "round \(round): \(text)")
        }
    }

    static func randomValue(_ generator: inout SplitMix64, depth: Int) -> JSONValue {
        switch generator.next() % (depth > 3 ? 6 : 8) {
        case 0: return .null
        case 1: return .bool(generator.next() & 1 == 0)
        case 2: return .int(Int64(bitPattern: generator.next()) >> (generator.next() % 64))
        case 3:
            let double = Double(bitPattern: generator.next())
            return .double(double.isFinite ? double : Double(Int64(bitPattern: generator.next() >> 20)) / 1024)
        case 4, 5: return .string(randomString(&generator))
        case 6: return .array((0..<generator.next() % 5).map { _ in randomValue(&generator, depth: depth + 1) })
        default:
            var object: [String: JSONValue] = [:]
            for _ in 0..<generator.next() % 6 { object[randomString(&generator)] = randomValue(&generator, depth: depth + 1) }
            return .object(object)
        }
    }

    static func randomString(_ generator: inout SplitMix64) -> String {
        let alphabet: [Unicode.Scalar] = ["a", "Z", "0", "/", "\"", "\\", " ", "\n", "\t", "\u{0}", "\u{1F}", "\u{7F}", "é", "e", "\u{301}",
                                          "中", "😀", "\u{2028}", "\u{FEFF}", "_"]
        var text = String.UnicodeScalarView()
        for _ in 0..<generator.next() % 12 { text.append(alphabet[Int(generator.next() % UInt64(alphabet.count))]) }
        return String(text)
    }
}

struct SplitMix64: RandomNumberGenerator {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
