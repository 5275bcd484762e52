import Foundation
import IMCore
import IMTesting
import Testing

// The README's examples. `readmeBlockIsThisFile` fails when the README's first block is not the text below
// (between the markers), so the two cannot drift apart.

// README-BEGIN
/// App logic under test: mark an order paid by updating the order message's expansion.
func markPaid(_ order: Message, by user: UserID, on backend: some ExpansionUpdating) async throws -> ExpansionDelta {
    try await backend.updateExpansion(of: order.id, in: order.conversation, by: user, .set(["status": "paid"]))
}

@Test func markingAnOrderPaid() async throws {
    let clock = TestClock()
    let backend = MemoryBackend(id: "rc", capabilities: .rongCloud, clock: clock)
    let chat = ConversationRef.direct("buyer", "shop")

    let order = try await backend.send(OutgoingMessage(
        conversation: chat, sender: "shop", content: .text("订单 #42: ¥19.99"),
        expansion: ["status": "unpaid"]))                      // expansion must be enabled at send time
    let delta = try await markPaid(order, by: "buyer", on: backend)
    #expect(delta.set == ["status": "paid"])                  // events carry only the changed keys

    let late = try await backend.send(OutgoingMessage(conversation: chat, sender: "shop", content: .text("hi")))
    let error = await #expect(throws: IMError.self) {         // fails the test when nothing throws
        try await markPaid(late, by: "buyer", on: backend)
    }
    #expect(error?.code == .expansionNotEnabled)
}
// README-END

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
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    @Test func readmeBlockIsThisFile() throws {
        let readme = try String(contentsOf: Self.root.appendingPathComponent("README.md"), encoding: .utf8)
        let source = try String(contentsOf: URL(fileURLWithPath: #filePath), encoding: .utf8)
        let marked = try #require(source.components(separatedBy: "// README-BEGIN\n").last?.components(separatedBy: "// README-END").first)
        let block = try #require(readme.components(separatedBy: "```swift\nimport IMCore\nimport IMTesting\nimport Testing\n\n").dropFirst().first?
            .components(separatedBy: "```").first)
        #expect(block == marked)
    }

    /// The DocC getting-started articles show this file's example: IMTesting's the whole marked block,
    /// IMCore's the app function alone.
    @Test func doccArticlesShowThisFile() throws {
        let source = try String(contentsOf: URL(fileURLWithPath: #filePath), encoding: .utf8)
        let marked = try #require(source.components(separatedBy: "// README-BEGIN\n").last?.components(separatedBy: "// README-END").first)
        let testing = try String(contentsOf: Self.root.appendingPathComponent("Sources/IMTesting/IMTesting.docc/GettingStarted.md"), encoding: .utf8)
        let testingBlock = try #require(testing.components(separatedBy: "```swift\nimport IMCore\nimport IMTesting\nimport Testing\n\n").dropFirst().first?
            .components(separatedBy: "```").first)
        #expect(testingBlock == marked)
        let core = try String(contentsOf: Self.root.appendingPathComponent("Sources/IMCore/IMCore.docc/GettingStarted.md"), encoding: .utf8)
        let coreBlock = try #require(core.components(separatedBy: "```swift\n").dropFirst().first?.components(separatedBy: "```").first)
        #expect(coreBlock.hasPrefix("/// App logic under test") && marked.hasPrefix(coreBlock), "\(coreBlock)")
    }

    /// docs/testing-kit.md's "Testing your app" shows the example package's main suite: its block is that file's marked text.
    @Test func readmeOrderAppBlockIsTheExamplesSuite() throws {
        let readme = try String(contentsOf: Self.root.appendingPathComponent("docs/testing-kit.md"), encoding: .utf8)
        let source = try String(contentsOf: Self.root.appendingPathComponent("examples/OrderApp/Tests/OrderAppTests/OrderAppTests.swift"),
                                encoding: .utf8)
        let marked = try #require(source.components(separatedBy: "// README-BEGIN\n").dropFirst().first?.components(separatedBy: "// README-END").first)
        let block = try #require(readme.components(separatedBy: "```swift\nimport IMCore\nimport IMTesting\nimport OrderApp\nimport Testing\n\n")
            .dropFirst().first?.components(separatedBy: "```").first)
        #expect(block == marked)
    }

    @Test func customTypes() async throws {
        let registry = ContentRegistry()
        try registry.register(ReadmeOrderCard.self)
        #expect(throws: IMError.self) { try registry.register(ReadmeOrderCard.self) }
        let custom = try registry.decode(typeName: "order_card", payload: #"{"orderID":"42","amountCents":1999}"#)
        #expect(custom.as(ReadmeOrderCard.self)?.digest == "[订单] 42")

        let backend = MemoryBackend(id: "rc", capabilities: .rongCloud)
        let chat = ConversationRef.direct("buyer", "shop")
        let sent = try await backend.send(OutgoingMessage(conversation: chat, sender: "shop",
                                                          content: .custom(ReadmeOrderCard(orderID: "42", amountCents: 1999))))
        #expect(sent.custom(as: ReadmeOrderCard.self)?.amountCents == 1999)
        #expect(sent.content.custom(as: ReadmeOrderCard.self)?.orderID == "42")
        let text = try await backend.send(OutgoingMessage(conversation: chat, sender: "shop", content: .text("hi")))
        #expect(text.custom(as: ReadmeOrderCard.self) == nil)
    }

    /// A memory world built without a clock gets a test clock: a recall window moves only with it.
    @Test func aWorldWithoutAClockHasATestClock() async throws {
        let world = MemoryWorld(capabilities: .nim)
        let clock = try #require(world.clock as? TestClock)
        let backend = MemoryBackend(id: "nim", world: world)
        let sent = try await backend.send(OutgoingMessage(conversation: .direct("a", "b"), sender: "a", content: .text("x")))
        clock.advance(bySeconds: 121)
        await #expect(throws: IMError.self) { try await backend.recall(sent.id, in: sent.conversation, by: "a") }
    }

    /// Waiting for an event: the matching one is returned, a missing one is a timeout error, not a hang.
    @Test func waitingForAnEvent() async throws {
        let backend = MemoryBackend(id: "wk", capabilities: .wukong)
        let events = backend.events()
        _ = try await backend.send(OutgoingMessage(conversation: .group("g"), sender: "a", content: .text("one")))
        _ = try await backend.send(OutgoingMessage(conversation: .group("g"), sender: "a", content: .text("two")))
        let second = try await events.first(within: 2) { event in
            if case .message(let message) = event.kind { return message.content == .text("two") }
            return false
        }
        #expect(second.conversation == .group("g"))
        let error = await #expect(throws: IMError.self) {
            try await backend.events().first(within: 0.2) { _ in true }
        }
        #expect(error?.code == .timeout)
    }
}
