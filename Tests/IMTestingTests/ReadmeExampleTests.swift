import IMCore
import IMTesting
import Testing

// The README's examples, kept in step by hand: if this file changes, change the README too.

/// App logic under test: mark an order paid by updating the order message's expansion.
func markPaid(_ order: Message, by user: UserID, on backend: some ExpansionUpdating) async throws -> ExpansionDelta {
    try await backend.updateExpansion(of: order.id, in: order.conversation, by: user, .set(["status": "paid"]))
}

struct ReadmeOrderCard: CustomMessageContent {
    static let contentType = "order_card"
    var orderID: String
    var amountCents: Int
    var digest: String { "[订单] \(orderID)" }
    func validate() throws {
        if amountCents < 0 { throw IMError(.invalidContent, "negative amount") }
    }
}

@Suite struct ReadmeExampleTests {
    @Test func testingAppLogic() async throws {
        let clock = TestClock()
        let backend = MemoryBackend(id: "rc", capabilities: .rongCloud, clock: clock)
        let chat = ConversationRef.direct("buyer", "shop")

        let order = try await backend.send(OutgoingMessage(
            conversation: chat, sender: "shop", content: .text("订单 #42: ¥19.99"),
            expansion: ["status": "unpaid"]))
        let delta = try await markPaid(order, by: "buyer", on: backend)
        #expect(delta.set == ["status": "paid"])

        let late = try await backend.send(OutgoingMessage(conversation: chat, sender: "shop", content: .text("hi")))
        var refused: IMError?
        do {
            _ = try await markPaid(late, by: "buyer", on: backend)
        } catch let error as IMError {
            refused = error
        }
        #expect(refused?.code == .expansionNotEnabled)
    }

    @Test func customTypes() throws {
        let registry = ContentRegistry()
        try registry.register(ReadmeOrderCard.self)
        #expect(throws: IMError.self) { try registry.register(ReadmeOrderCard.self) }
        let custom = try registry.decode(typeName: "order_card", payload: #"{"orderID":"42","amountCents":1999}"#)
        #expect(custom.as(ReadmeOrderCard.self)?.digest == "[订单] 42")
    }
}
