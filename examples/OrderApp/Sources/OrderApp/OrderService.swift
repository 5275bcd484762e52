import IMCore

/// The order card a shop sends into a chat: a registered custom content type.
public struct OrderCard: CustomMessageContent {
    // Not `order_card`: IMBridge ships a custom mapping of that name (mappings/custom/order_card.yaml) with
    // another schema, which the adapters apply to it; the sandbox run of the two-backend test found it.
    public static let contentType = "orderapp_order"
    public var orderID: String
    public var amountCents: Int

    public init(orderID: String, amountCents: Int) {
        self.orderID = orderID
        self.amountCents = amountCents
    }

    public var digest: String { "[订单] #\(orderID)" }
    public func validate() throws {
        if orderID.isEmpty { throw IMError(.invalidContent, "an order card needs an order id") }
        if amountCents <= 0 { throw IMError(.invalidContent, "order #\(orderID) has a non-positive amount \(amountCents)") }
    }
}

/// The app's order logic over any `IMBackend`: it asks the backend's capabilities what it can do and
/// takes the vendor's path (an expansion where the vendor has them, a notice reply elsewhere).
public struct OrderService: Sendable {
    public let backend: any IMBackend
    public let registry: ContentRegistry

    /// The registry the app builds at start-up, with every custom type it sends.
    public static func makeRegistry() throws -> ContentRegistry { try ContentRegistry([OrderCard.self]) }

    public init(backend: any IMBackend, registry: ContentRegistry) {
        self.backend = backend
        self.registry = registry
    }

    var expansionIsNative: Bool { backend.capabilities.support(.expansion).isNative }

    /// Sends the order card; where the vendor has expansions, the order's status lives in one.
    public func placeOrder(_ card: OrderCard, from shop: UserID, to buyer: UserID) async throws -> Message {
        try await backend.send(OutgoingMessage(conversation: .direct(shop, buyer), sender: shop, content: .custom(card),
                                               expansion: expansionIsNative ? ["status": "unpaid"] : nil))
    }

    /// `placeOrder` through the vendor's transient failures: a retryable error (rate limit, server error,
    /// timeout) is tried again after the wait it asks for (`retryAfterMs`, else `fallbackWaitMs`), at
    /// most `attempts` tries in all. The card goes out with a client message id (`order-<id>`), so a try
    /// whose answer was lost (the message was sent) is found before resending, where the backend can look
    /// one up (`ClientIDLookup`), instead of placing the order twice. `wait` sleeps (tests record it).
    public func placeOrder(_ card: OrderCard, from shop: UserID, to buyer: UserID, attempts: Int, fallbackWaitMs: Int64 = 500,
                           wait: (Int64) async throws -> Void) async throws -> Message {
        let conversation = ConversationRef.direct(shop, buyer)
        let clientID = ClientMessageID("order-\(card.orderID)")
        var tries = 0
        while true {
            tries += 1
            do {
                return try await backend.send(OutgoingMessage(conversation: conversation, sender: shop, content: .custom(card),
                                                              clientMessageID: clientID,
                                                              expansion: expansionIsNative ? ["status": "unpaid"] : nil))
            } catch let error as IMError where error.isRetryable && tries < attempts {
                try await wait(error.retryAfterMs ?? fallbackWaitMs)
                if let lookup = backend as? any ClientIDLookup,
                   let sent = try await lookup.message(withClientID: clientID, in: conversation, readingAs: shop) {
                    return sent
                }
            }
        }
    }

    /// The order a message carries (decoded by the app's registry).
    public func order(in message: Message) throws -> OrderCard { try registry.resolve(message, as: OrderCard.self) }

    /// Marks the order paid: an expansion change where native, else a notice replying to the card.
    public func markPaid(_ order: Message, by buyer: UserID) async throws {
        let card = try self.order(in: order)
        if expansionIsNative, let expanding = backend as? any ExpansionUpdating {
            _ = try await expanding.updateExpansion(of: order.id, in: order.conversation, by: buyer, .set(["status": "paid"]))
        } else {
            _ = try await backend.send(OutgoingMessage(
                conversation: order.conversation, sender: buyer, content: .text("订单 #\(card.orderID) 已支付"),
                reply: ReplyRef(messageID: order.id, sender: order.sender, digest: order.digest)))
        }
    }

    /// Whether the order is paid, from the expansion or from a notice in the conversation.
    public func isPaid(_ order: Message) async throws -> Bool {
        let card = try self.order(in: order)
        if expansionIsNative, let expanding = backend as? any ExpansionUpdating {
            return try await expanding.expansion(of: order.id, in: order.conversation).values["status"] == "paid"
        }
        let notices = try await messages(after: order)
        return notices.contains { $0.reply?.messageID == order.id && $0.currentContent == .text("订单 #\(card.orderID) 已支付") }
    }

    /// Takes the order card back (the vendor's recall window applies).
    public func cancel(_ order: Message, by shop: UserID) async throws {
        guard let recalling = backend as? any Recalling else {
            throw IMError(.unsupported, "\(backend.capabilities.vendor) cannot recall")
        }
        try await recalling.recall(order.id, in: order.conversation, by: shop)
    }

    /// Every message after `message` in its conversation, paging with the backend's own cursors.
    public func messages(after message: Message, pageSize: Int = 20) async throws -> [Message] {
        var result: [Message] = []
        var anchor = HistoryAnchor.after(try backend.cursor(for: message))
        while true {
            let page = try await backend.history(HistoryQuery(conversation: message.conversation, anchor: anchor, limit: pageSize))
            result += page.messages
            guard page.hasNewer, let newer = page.newerCursor else { return result }
            anchor = .after(newer)
        }
    }

    /// Every order card in a conversation, newest first, paging back `pageSize` at a time.
    public func orders(in conversation: ConversationRef, pageSize: Int = 20) async throws -> [OrderCard] {
        var cards: [OrderCard] = []
        var anchor = HistoryAnchor.latest
        while true {
            let page = try await backend.history(HistoryQuery(conversation: conversation, anchor: anchor, limit: pageSize))
            cards += page.messages.reversed().filter { !$0.isRecalled }.compactMap { try? order(in: $0) }
            guard page.hasOlder, let older = page.olderCursor else { return cards }
            anchor = .before(older)
        }
    }
}

/// The shop's unread badge per conversation, kept by the app (most vendors' server APIs keep no unread
/// state): messages from others after the last one the user saw, counted by paging from it.
public actor UnreadBadges {
    let service: OrderService
    var lastSeen: [ConversationRef: Message] = [:]

    public init(service: OrderService) { self.service = service }

    public func seen(_ message: Message) { lastSeen[message.conversation] = message }

    public func badge(in conversation: ConversationRef, for user: UserID) async throws -> Int {
        let unseen: [Message]
        if let last = lastSeen[conversation] {
            unseen = try await service.messages(after: last)
        } else {
            unseen = try await service.backend.history(HistoryQuery(conversation: conversation, anchor: .oldest, limit: 1000)).messages
        }
        return unseen.filter { $0.sender != user && !$0.isRecalled && $0.options.countUnread }.count
    }
}

/// A group bot: answers a message that mentions it with the status of the order named in it.
public struct OrderBot: Sendable {
    public let id: UserID
    public let service: OrderService

    public init(id: UserID, service: OrderService) {
        self.id = id
        self.service = service
    }

    /// The bot's answer to `event`, or nil when the event is not a message mentioning the bot.
    public func handle(_ event: IMEvent, orders: [String: Message]) async throws -> Message? {
        guard case .message(let message) = event.kind, message.sender != id, message.mentions.mentions(id),
              case .text(let text) = message.currentContent else { return nil }
        let orderID = text.text.split(separator: "#").last.map { String($0.prefix { $0.isNumber }) } ?? ""
        let answer: String
        if let order = orders[orderID] {
            answer = try await service.isPaid(order) ? "订单 #\(orderID) 已支付" : "订单 #\(orderID) 待支付"
        } else {
            answer = "没有订单 #\(orderID)"
        }
        return try await service.backend.send(OutgoingMessage(
            conversation: message.conversation, sender: id, content: .text(answer), mentions: Mentions(users: [message.sender]),
            reply: ReplyRef(messageID: message.id, sender: message.sender, digest: message.digest)))
    }
}
