import Foundation
import IMCore
import Testing

struct OrderCard: CustomMessageContent {
    static let contentType = "order_card"
    var orderID: String
    var amountCents: Int
    var cover: MediaAttachment?
    var digest: String { "[订单] \(orderID)" }
    func validate() throws {
        if amountCents < 0 { throw IMError(.invalidContent, "amount must not be negative") }
    }
    var attachments: [MediaAttachment] { cover.map { [$0] } ?? [] }
    func replacingAttachments(_ attachments: [MediaAttachment]) -> OrderCard {
        var copy = self
        copy.cover = attachments.first
        return copy
    }
}

struct OtherOrderCard: CustomMessageContent {
    static let contentType = "order_card"
    var id: String
    var digest: String { id }
}

@Suite struct RegistryTests {
    @Test func registeredPayloadsDecodeToTheTypedValue() throws {
        let registry = try ContentRegistry([OrderCard.self])
        let custom = try registry.decode(typeName: "order_card", payload: #"{"orderID":"A1","amountCents":1999}"#)
        #expect(custom.as(OrderCard.self) == OrderCard(orderID: "A1", amountCents: 1999))
        #expect(custom.digest == "[订单] A1")
        #expect(custom.searchableText == "[订单] A1")
        #expect(custom.payload == #"{"orderID":"A1","amountCents":1999}"#, "payload text is kept as received")
    }

    @Test func twoTypesUnderOneNameAreRefused() throws {
        let registry = ContentRegistry()
        try registry.register(OrderCard.self)
        #expect { try registry.register(OtherOrderCard.self) } throws: { ($0 as? IMError)?.code == .duplicateContentType }
        #expect { try registry.register(OrderCard.self) } throws: { ($0 as? IMError)?.code == .duplicateContentType }
        #expect(registry.registeredTypeNames == ["order_card"])
    }

    @Test func unknownTypesRoundTripByteForByte() throws {
        let registry = try ContentRegistry([OrderCard.self])
        let payload = "{ \"b\" : 1,\"a\":\"\\u4e2d\",  \"f\": 1.50 }"
        let custom = try registry.decode(typeName: "red_packet", payload: payload)
        #expect(!custom.isRegistered)
        #expect(custom.payload == payload)
        #expect(custom.digest == "[red_packet]")
        let encoded = try JSONEncoder().encode(MessageContent.custom(custom))
        let decoded = try JSONDecoder().decode(MessageContent.self, from: encoded)
        guard case .custom(let back) = decoded else { Issue.record("decoded as \(decoded)"); return }
        #expect(back.payload == payload && back.typeName == "red_packet")
    }

    @Test func malformedOrInvalidPayloadsOfKnownTypesAreClearErrors() throws {
        let registry = try ContentRegistry([OrderCard.self])
        #expect { try registry.decode(typeName: "order_card", payload: #"{"orderID":1}"#) } throws: {
            ($0 as? IMError)?.code == .invalidContent && "\($0)".contains("order_card")
        }
        #expect { try registry.decode(typeName: "order_card", payload: #"{"orderID":"A","amountCents":-1}"#) } throws: {
            ($0 as? IMError)?.code == .invalidContent
        }
    }

    @Test func resolveRetypesAfterAStoreRoundTrip() throws {
        let registry = try ContentRegistry([OrderCard.self])
        let original = MessageContent.custom(CustomContent(OrderCard(orderID: "B2", amountCents: 5)))
        let stored = try JSONDecoder().decode(MessageContent.self, from: JSONEncoder().encode(original))
        guard case .custom(let raw) = stored else { Issue.record("not custom"); return }
        #expect(!raw.isRegistered)
        let resolved = try registry.resolve(stored)
        guard case .custom(let typed) = resolved else { Issue.record("not custom"); return }
        #expect(typed.as(OrderCard.self)?.orderID == "B2")
        #expect(resolved == original)
    }

    @Test func attachmentsCanBeReplacedWithoutKnowingTheType() throws {
        let card = OrderCard(orderID: "C3", amountCents: 1, cover: .remote("https://a.test/1.png"))
        let content = MessageContent.custom(CustomContent(card))
        #expect(content.attachments.map(\.remoteURL) == ["https://a.test/1.png"])
        guard case .custom(let custom) = content else { return }
        let moved = custom.replacingAttachments([.remote("https://b.test/1.png")])
        #expect(moved.as(OrderCard.self)?.cover?.remoteURL == "https://b.test/1.png")
        #expect(moved.payload.contains("b.test"))
    }
}
