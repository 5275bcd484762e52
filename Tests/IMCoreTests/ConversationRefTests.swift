import Foundation
import IMCore
import Testing

@Suite struct ConversationRefTests {
    @Test func directIsAnUnorderedPair() {
        let ab = ConversationRef.direct("alice", "bob")
        let ba = ConversationRef.direct("bob", "alice")
        #expect(ab == ba)
        #expect(ab.hashValue == ba.hashValue)
        #expect(ab.id == "alice,bob")
        #expect(ab.description == "direct:alice,bob")
        #expect(ab.participants == ["alice", "bob"])
        #expect(ab.peer(of: "bob") == "alice")
        #expect(ab.peer(of: "carol") == nil)
    }

    @Test func parsesEveryKind() throws {
        #expect(try ConversationRef(parsing: "direct:bob,alice") == .direct("alice", "bob"))
        #expect(try ConversationRef(parsing: "group:g1") == .group("g1"))
        #expect(try ConversationRef(parsing: "chatroom:r1") == .chatroom("r1"))
        #expect(try ConversationRef(parsing: "system:s") == .system("s"))
        #expect(try ConversationRef(parsing: "ultragroup:u:1") == .other("ultragroup", "u:1"))
    }

    @Test(arguments: ["group", "group:", "direct:alice", "direct:alice,", "direct:a,b,c"])
    func refusesMalformedText(_ text: String) {
        #expect(throws: IMError.self) { try ConversationRef(parsing: text) }
    }

    @Test func codableUsesTheTextForm() throws {
        let data = try JSONEncoder().encode([ConversationRef.direct("b", "a"), .group("g")])
        #expect(String(decoding: data, as: UTF8.self) == #"["direct:a,b","group:g"]"#)
        #expect(try JSONDecoder().decode([ConversationRef].self, from: data) == [.direct("a", "b"), .group("g")])
    }
}

@Suite struct JSONValueTests {
    @Test func keepsLargeIntegersExact() throws {
        let value = try JSONValue.parse(#"{"id":9007199254740993,"f":1.5,"s":"x","n":null,"b":true,"a":[1,"2"]}"#)
        #expect(value["id"] == .int(9_007_199_254_740_993))
        #expect(value["f"] == .double(1.5))
        #expect(value["a"]?.arrayValue?[1].int64Value == 2)
        #expect(value.jsonString() == #"{"a":[1,"2"],"b":true,"f":1.5,"id":9007199254740993,"n":null,"s":"x"}"#)
    }

    @Test func malformedJSONIsAClearError() {
        #expect { try JSONValue.parse("{nope") } throws: { ($0 as? IMError)?.code == .malformedPayload }
    }
}

@Suite struct IMErrorTests {
    @Test(arguments: [(429, IMError.Code.rateLimited, true), (503, .unavailable, true), (500, .unavailable, true),
                      (401, .authenticationFailed, false), (403, .permissionDenied, false), (404, .notFound, false),
                      (400, .invalidArgument, false)])
    func httpStatusesMapToStableCodes(status: Int, code: IMError.Code, retryable: Bool) {
        let error = IMError.http(status: status, body: "x", retryAfterMs: 1000)
        #expect(error.code == code)
        #expect(error.isRetryable == retryable)
        #expect(error.vendorCode == "http_\(status)")
        #expect(error.retryAfterMs == 1000)
    }
}
