import IMCore

/// The order card the demo sends: a custom type whose status lives in the message's expansion
/// (the RongCloud expansion guide's use of 消息扩展), carried as WuKong type 101 and RongCloud `App:OrderMsg`.
public struct DemoOrderCard: CustomMessageContent {
    public static let contentType = "order_card"
    public var orderID: String
    public var title: String
    public var amountCents: Int

    /// The neutral field names of `mappings/custom/order_card.yaml`.
    enum CodingKeys: String, CodingKey {
        case orderID = "order_id", title, amountCents = "amount_cents"
    }

    public init(orderID: String, title: String, amountCents: Int) {
        self.orderID = orderID
        self.title = title
        self.amountCents = amountCents
    }

    public var digest: String { "[订单] \(title) ¥\(amountCents / 100).\(String(format: "%02d", amountCents % 100))" }

    public func validate() throws {
        if orderID.isEmpty { throw IMError(.invalidContent, "an order card needs an order id") }
        if amountCents < 0 { throw IMError(.invalidContent, "an order amount cannot be negative") }
    }
}
