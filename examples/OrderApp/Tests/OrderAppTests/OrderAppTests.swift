import IMCore
import IMTesting
import OrderApp
import Testing

// README-BEGIN
/// The order service under each vendor the app ships on. `MemoryBackend` keeps that vendor's rules:
/// its cursors, its recall window, what it refuses, and the app's registry for custom types.
@Suite struct OrderAppTests {
    let clock = TestClock()
    let shop: UserID = "shop", buyer: UserID = "buyer"

    func service(_ preset: Capabilities) throws -> OrderService {
        let registry = try OrderService.makeRegistry()
        return OrderService(backend: MemoryBackend(id: "app", capabilities: preset, clock: clock, registry: registry),
                            registry: registry)
    }

    @Test(arguments: [Capabilities.rongCloud, .nim])
    func orderCardsRoundTripAndBadCardsAreRefused(_ preset: Capabilities) async throws {
        let orders = try service(preset)
        let sent = try await orders.placeOrder(OrderCard(orderID: "42", amountCents: 1999), from: shop, to: buyer)
        #expect(try orders.order(in: sent) == OrderCard(orderID: "42", amountCents: 1999))
        #expect(sent.custom(as: OrderCard.self)?.digest == "[订单] #42")

        let refused = await #expect(throws: IMError.self) {      // fails the test when nothing throws
            _ = try await orders.placeOrder(OrderCard(orderID: "43", amountCents: 0), from: shop, to: buyer)
        }
        #expect(refused?.code == .invalidContent)
    }

    @Test(arguments: [Capabilities.rongCloud, .nim])
    func payingAnOrder(_ preset: Capabilities) async throws {
        let orders = try service(preset)
        let order = try await orders.placeOrder(OrderCard(orderID: "42", amountCents: 1999), from: shop, to: buyer)
        #expect(try await orders.isPaid(order) == false)
        try await orders.markPaid(order, by: buyer)              // RongCloud: an expansion; NIM: a notice reply
        #expect(try await orders.isPaid(order))
    }

    @Test func recallWindowsFollowTheVendor() async throws {
        let nim = try service(.nim)
        let order = try await nim.placeOrder(OrderCard(orderID: "42", amountCents: 1999), from: shop, to: buyer)
        clock.advance(bySeconds: 121)                            // NIM recalls within 2 minutes
        let late = await #expect(throws: IMError.self) { try await nim.cancel(order, by: shop) }
        #expect(late?.code == .recallWindowExpired)

        let rongCloud = try service(.rongCloud)
        let other = try await rongCloud.placeOrder(OrderCard(orderID: "43", amountCents: 500), from: shop, to: buyer)
        clock.advance(bySeconds: 86_400)                         // RongCloud has no window
        try await rongCloud.cancel(other, by: shop)
        #expect(try await rongCloud.orders(in: .direct(shop, buyer)).isEmpty)
    }

    @Test(arguments: [Capabilities.rongCloud, .nim])
    func pagingWithTheBackendsCursors(_ preset: Capabilities) async throws {
        let orders = try service(preset)
        for n in 1...7 {
            _ = try await orders.placeOrder(OrderCard(orderID: "\(n)", amountCents: 100 * n), from: shop, to: buyer)
            clock.advance(byMs: 10)
        }
        let newestFirst = try await orders.orders(in: .direct(shop, buyer), pageSize: 3)
        #expect(newestFirst.map(\.orderID) == ["7", "6", "5", "4", "3", "2", "1"])

        // A cursor built by hand from a seq is what production refuses on these vendors; so does memory.
        let handBuilt = await #expect(throws: IMError.self) {
            _ = try await orders.backend.history(HistoryQuery(conversation: .direct(shop, buyer), anchor: .before(HistoryCursor(seq: 3))))
        }
        #expect(handBuilt?.code == .invalidArgument)
    }
}
// README-END

@Suite struct OrderBotAndBadgeTests {
    let clock = TestClock()

    @Test(arguments: [Capabilities.rongCloud, .nim])
    func theBotAnswersMentionsAndBadgesCountUnseenMessages(_ preset: Capabilities) async throws {
        let registry = try OrderService.makeRegistry()
        let world = MemoryWorld(capabilities: preset, clock: clock, registry: registry)
        world.addMembers(["shop", "buyer", "bot"], to: "orders")
        let orders = OrderService(backend: MemoryBackend(id: "app", world: world), registry: registry)
        let bot = OrderBot(id: "bot", service: orders)
        let order = try await orders.placeOrder(OrderCard(orderID: "42", amountCents: 1999), from: "shop", to: "buyer")

        let events = orders.backend.events()
        let question = try await orders.backend.send(OutgoingMessage(
            conversation: .group("orders"), sender: "buyer", content: .text("@bot 订单 #42?"), mentions: Mentions(users: ["bot"])))
        let event = try await events.first(within: 2) { $0.messageID == question.id }
        let answer = try #require(try await bot.handle(event, orders: ["42": order]))
        #expect(answer.currentContent == .text("订单 #42 待支付"))
        #expect(answer.reply?.messageID == question.id && answer.mentions.mentions("buyer"))
        #expect(try await bot.handle(event, orders: [:])?.currentContent == .text("没有订单 #42"))

        let badges = UnreadBadges(service: orders)
        #expect(try await badges.badge(in: .group("orders"), for: "buyer") == 2, "two answers from the bot")
        await badges.seen(answer)
        #expect(try await badges.badge(in: .group("orders"), for: "buyer") == 1, "the second answer is after the one seen")
        _ = try await orders.backend.send(OutgoingMessage(conversation: .group("orders"), sender: "buyer", content: .text("谢谢")))
        #expect(try await badges.badge(in: .group("orders"), for: "buyer") == 1, "the buyer's own message does not count")
    }
}

/// The app's own fake backend (an actor), checked by IMBridge's conformance suite like an adapter.
actor ShopFake: IMBackend {
    nonisolated let id: BackendID = "shop-fake"
    nonisolated let capabilities = Capabilities(vendor: "shop-fake", features: [.history: .full], textMaxLength: 1000,
                                                recallWindowMs: nil, expansionLimits: nil, contentKinds: [.text])
    private nonisolated let fanout = EventFanout()
    private var log: [ConversationRef: [Message]] = [:]

    nonisolated func events() -> AsyncStream<IMEvent> { fanout.subscribe() }

    func send(_ outgoing: OutgoingMessage) async throws -> Message {
        try capabilities.check(outgoing.content)
        if !outgoing.mentions.isEmpty { try capabilities.require(.mentions) }
        if outgoing.reply != nil { try capabilities.require(.replies) }
        let list = log[outgoing.conversation, default: []]
        let message = Message(id: MessageID("s\(log.values.map(\.count).reduce(0, +) + 1)"), conversation: outgoing.conversation,
                              sender: outgoing.sender, sentAt: 1_700_000_000_000, seq: Int64(list.count + 1), content: outgoing.content)
        log[outgoing.conversation] = list + [message]
        fanout.publish([IMEvent(eventID: EventID("m:\(message.id)"), backend: id, kind: .message(message))])
        return message
    }

    func history(_ query: HistoryQuery) async throws -> HistoryPage {
        let all = log[query.conversation] ?? []
        let at = { (cursor: HistoryCursor) in Int(cursor.seq ?? 0) - 1 }
        let range: Range<Int> = switch query.anchor {
        case .latest: max(0, all.count - query.limit)..<all.count
        case .oldest: 0..<min(query.limit, all.count)
        case .before(let c): max(0, at(c) - query.limit)..<max(0, at(c))
        case .after(let c): min(all.count, at(c) + 1)..<min(all.count, at(c) + 1 + query.limit)
        case .around(let c):
            { (lower: Int) in max(0, min(all.count, lower + query.limit) - query.limit)..<min(all.count, lower + query.limit) }(
                max(0, at(c) - (query.limit - 1) / 2))
        }
        let page = Array(all[range])
        return HistoryPage(messages: page, olderCursor: page.first.map { HistoryCursor(seq: $0.seq!) },
                           newerCursor: page.last.map { HistoryCursor(seq: $0.seq!) },
                           hasOlder: range.lowerBound > 0, hasNewer: range.upperBound < all.count)
    }
}

@Test func theAppsOwnFakeConforms() async throws {
    let suite = ConformanceSuite { ConformanceSubject(backend: ShopFake(), users: ["shop", "buyer", "clerk"]) }
    let report = await suite.run()
    #expect(report.failures.isEmpty, "\(report)")
    #expect(report.passed.map(\.check).contains("history.around"), "\(report)")
}
