import Foundation
import IMCore
import IMStore
import Testing

/// Inbound dead letters (poison messages, docs/architecture.md) on both store implementations.
@Suite struct InboundDeadLetterStoreTests {
    @Test(arguments: StoreKind.allCases) func poisonMessagesAreKeptOnceListedAndRemoved(_ kind: StoreKind) throws {
        let path = try kind.freshLocation()
        let store = try BridgeStore(path: path)
        let raw = Data([0, 1, 2, 0xFF] + Array("fromUserId=u1&objectName=RC%3AImgMsg".utf8))
        #expect(try store.transaction { try $0.keepInbound(backend: "rc", key: "msg:A", format: "routed-form", payload: raw,
                                                             reason: "malformed_payload: no imageUri", at: 10) })
        #expect(try !store.transaction { try $0.keepInbound(backend: "rc", key: "msg:A", format: "routed-form", payload: Data("other".utf8),
                                                              reason: "again", at: 11) }, "a redelivery is kept once")
        #expect(try store.transaction { try $0.keepInbound(backend: "wk", key: "msg:A", format: "message-json", payload: Data("{}".utf8),
                                                             reason: "invalid_content", at: 12) }, "the key includes the backend")
        let letters = try store.read { try $0.inboundDeadLetters() }
        #expect(letters.map(\.backend) == ["rc", "wk"])
        let first = try #require(letters.first)
        #expect(first.payload == raw && first.reason == "malformed_payload: no imageUri" && first.receivedAt == 10 && first.retries == 0)
        #expect(first.format == "routed-form" && first.key == "msg:A")
        try store.transaction { try $0.failedInboundRetry(first.id, reason: "still no imageUri") }
        let retried = try #require(try store.read { try $0.inboundDeadLetters(ids: [first.id]) }.first)
        #expect(retried.retries == 1 && retried.reason == "still no imageUri")
        #expect(try store.read { try $0.inboundDeadLetters(ids: [first.id + 999]) }.isEmpty)
        try store.transaction { try $0.removeInboundDeadLetter(first.id) }
        #expect(try store.read { try $0.inboundDeadLetterCount() } == 1)
        #expect(try store.read { try $0.deadLetters() }.isEmpty, "inbound dead letters are not outbound ones")
        #expect(try BridgeStore(path: path).read { try $0.inboundDeadLetters() }.map(\.key) == ["msg:A"], "kept across reopening")
        // Pruning keeps them (an operator decides).
        _ = try store.transaction { try $0.prune(before: .max, limit: 1000) }
        #expect(try store.read { try $0.inboundDeadLetterCount() } == 1)
    }
}
