import Foundation
import IMCore
import IMTesting
import Testing

/// Memory presets shaped like their adapters: history cursors, `seq`, message ids, and custom contents
/// checked against the app's registry.
@Suite struct VendorShapeTests {
    static func filled(_ preset: Capabilities, count: Int = 6) async throws -> (MemoryBackend, [Message]) {
        let clock = TestClock()
        let backend = MemoryBackend(id: "mem", capabilities: preset, clock: clock)
        var sent: [Message] = []
        for n in 1...count {
            sent.append(try await backend.send(OutgoingMessage(conversation: .direct("alice", "bobby"), sender: "alice", content: .text("\(n)"))))
            if n % 2 == 0 { clock.advance(byMs: 5) }   // pairs share a millisecond: ties keep the order sent
        }
        return (backend, sent)
    }

    func page(_ backend: MemoryBackend, _ anchor: HistoryAnchor, limit: Int = 2) async throws -> HistoryPage {
        try await backend.history(HistoryQuery(conversation: .direct("alice", "bobby"), anchor: anchor, limit: limit))
    }

    @Test(arguments: Capabilities.allPresets)
    func cursorsHaveTheAdaptersForm(_ preset: Capabilities) async throws {
        let (backend, sent) = try await Self.filled(preset)
        let stored = try await page(backend, .oldest, limit: 10).messages
        try #require(stored.map(\.id) == sent.map(\.id))
        let third = stored[2]
        let cursor = try backend.cursor(for: third)
        switch preset.history.cursorForm {
        case .seq:
            #expect(stored.map(\.seq) == [1, 2, 3, 4, 5, 6])
            #expect(sent.allSatisfy { $0.seq == nil } == !preset.history.sendAnswersSeq, "the WuKong adapter's send answers without seq")
            #expect(throws: IMError.self) { _ = try backend.cursor(for: sent[2]) }
            #expect(cursor == HistoryCursor(seq: 3))
        case .timeAndID:
            #expect(sent.allSatisfy { $0.seq == nil }, "\(preset.vendor) adapters leave seq nil")
            #expect(cursor.rawValue == "\(third.sentAt):\(third.id.rawValue)")
            #expect((Int64(third.id.rawValue) != nil) == preset.history.numericMessageIDs, "NIM and JMessage msgids are numbers: \(third.id)")
        }
        // The backend's cursor pages the same way on every preset.
        #expect(try await page(backend, .before(cursor)).messages.map(\.id) == [sent[0].id, sent[1].id])
        #expect(try await page(backend, .after(cursor)).messages.map(\.id) == [sent[3].id, sent[4].id])
        #expect(try await page(backend, .around(cursor), limit: 3).messages.map(\.id) == [sent[1].id, sent[2].id, sent[3].id])
        // Walking back from the latest page with the page's own cursors visits every message once.
        var seen: [MessageID] = []
        var anchor = HistoryAnchor.latest
        while true {
            let got = try await page(backend, anchor)
            seen.insert(contentsOf: got.messages.map(\.id), at: 0)
            guard got.hasOlder, let older = got.olderCursor else { break }
            anchor = .before(older)
        }
        #expect(seen == sent.map(\.id))
    }

    /// A production failure, reproduced in memory: a seq cursor on a time-positioned preset is
    /// refused with the adapter's own words.
    @Test(arguments: [(Capabilities.rongCloud, "'3' is not a RongCloud history cursor (msgTime:msgUID)"),
                      (Capabilities.nim, "'3' is not a NIM history cursor (<ms>:<msgid>)"),
                      (Capabilities.jMessage, "'3' is not a jmessage history cursor")])
    func seqCursorsAreRefusedWhereTheAdapterRefusesThem(_ preset: Capabilities, _ text: String) async throws {
        let (backend, _) = try await Self.filled(preset)
        for anchor in [HistoryAnchor.before(HistoryCursor(seq: 3)), .after(HistoryCursor(seq: 3)), .around(HistoryCursor(seq: 3))] {
            let error = await #expect(throws: IMError.self) { _ = try await page(backend, anchor) }
            #expect(error?.code == .invalidArgument)
            #expect(error?.message == text)
        }
        let wukong = try await Self.filled(.wukong).0
        let error = await #expect(throws: IMError.self) { _ = try await page(wukong, .before(HistoryCursor("1767225600000:m3"))) }
        #expect(error?.message == "WuKong history cursors are message_seq numbers, not '1767225600000:m3'")
    }

    /// NIM has no expansions; its adapter carries a change as a type-100 `imbridge.expansion` message that
    /// receivers see as `expansionChanged`. The memory preset does the same, and refuses the native calls.
    @Test func nimExpansionFallbackIsSimulated() async throws {
        let nim = MemoryBackend(id: "nim", capabilities: .nim, registry: ContentRegistry())
        let chat = ConversationRef.direct("alice", "bobby")
        let order = try await nim.send(OutgoingMessage(conversation: chat, sender: "alice", content: .text("order 42")))
        let native = await #expect(throws: IMError.self) {
            _ = try await nim.send(OutgoingMessage(conversation: chat, sender: "alice", content: .text("x"), expansion: ["k": "v"]))
        }
        #expect(native?.code == .unsupported)
        let events = nim.events()
        let carrier = try await nim.sendExpansionChange(ExpansionDelta(version: 1, set: ["status": "paid"]), of: order.id, in: chat, by: "bobby")
        let event = try await events.first(within: 2) { _ in true }
        guard case .expansionChanged(let target, let conversation, let by, let delta) = event.kind else {
            Issue.record("the first event is \(event.kindName), not expansionChanged"); return
        }
        #expect(target == order.id && conversation == chat && by == "bobby" && delta.set == ["status": "paid"] && delta.version == carrier.sentAt)
        guard case .custom(let custom) = carrier.content else { Issue.record("carrier is \(carrier.content)"); return }
        #expect(custom.typeName == "imbridge.expansion")
        #expect(custom.json?["msgid"]?.stringValue == order.id.rawValue)
        #expect(!carrier.options.countUnread && !carrier.options.push)
        #expect(try await nim.history(HistoryQuery(conversation: chat)).messages.map(\.id) == [order.id, carrier.id])
        await #expect(throws: IMError.self) {
            _ = try await nim.sendExpansionChange(ExpansionDelta(version: 2), of: order.id, in: chat, by: "bobby")
        }
        let rongCloud = MemoryBackend(id: "rc", capabilities: .rongCloud)
        let refused = await #expect(throws: IMError.self) {
            _ = try await rongCloud.sendExpansionChange(ExpansionDelta(version: 1, set: ["a": "b"]), of: "m1", in: chat, by: "bobby")
        }
        #expect(refused?.code == .unsupported)
    }

    @Test func timeCursorsFindTheirMessageByIDThenByTime() async throws {
        let backend = MemoryBackend(id: "mem", capabilities: .nim)
        let chat = ConversationRef.direct("alice", "bobby")
        let first = try await backend.send(OutgoingMessage(conversation: chat, sender: "alice", content: .text("1"), sentAt: 1_000))
        let second = try await backend.send(OutgoingMessage(conversation: chat, sender: "alice", content: .text("2"), sentAt: 1_000))
        let third = try await backend.send(OutgoingMessage(conversation: chat, sender: "alice", content: .text("3"), sentAt: 2_000))
        func after(_ cursor: HistoryCursor) async throws -> [MessageID] {
            try await backend.history(HistoryQuery(conversation: chat, anchor: .after(cursor), limit: 10)).messages.map(\.id)
        }
        #expect(try await after(try backend.cursor(for: first)) == [second.id, third.id], "same millisecond: the id decides")
        #expect(try await after(HistoryCursor("1000:999")) == [first.id, second.id, third.id], "an unknown id sits before its time")
        #expect(try await after(HistoryCursor("1500:999")) == [third.id])
    }
}

/// The README example's order card (Tests/IMTestingTests/ReadmeExampleTests.swift).
typealias OrderCard = ReadmeOrderCard

/// Encodes a field its decoder does not read back: a `Codable` that breaks on the way in.
struct BrokenCard: CustomMessageContent {
    static let contentType = "broken_card"
    var title: String
    var digest: String { title }
    enum CodingKeys: String, CodingKey { case title = "name" }
    init(title: String) { self.title = title }
    init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: AltKeys.self)
        title = try container.decode(String.self, forKey: .title)
    }
    enum AltKeys: String, CodingKey { case title }
}

@Suite struct RegistryInMemoryTests {
    let dm = ConversationRef.direct("buyer", "shop")

    func world(_ types: [any CustomMessageContent.Type]) throws -> (MemoryBackend, ContentRegistry) {
        let registry = try ContentRegistry(types)
        return (MemoryBackend(id: "mem", capabilities: .nim, registry: registry), registry)
    }

    @Test func aForgottenRegistrationIsRefusedNamingTheType() async throws {
        let (backend, _) = try world([])
        let error = await #expect(throws: IMError.self) {
            _ = try await backend.send(OutgoingMessage(conversation: dm, sender: "shop", content: .custom(OrderCard(orderID: "42", amountCents: 1))))
        }
        #expect(error?.code == .invalidContent)
        #expect(error?.message.contains("'order_card'") == true && error?.message.contains("OrderCard") == true, "\(String(describing: error))")
        #expect(try await backend.history(HistoryQuery(conversation: dm)).messages.isEmpty, "nothing was stored")
        // Without a registry the world accepts it, as before.
        let lax = MemoryBackend(id: "lax", capabilities: .nim)
        _ = try await lax.send(OutgoingMessage(conversation: dm, sender: "shop", content: .custom(OrderCard(orderID: "42", amountCents: 1))))
    }

    @Test func registeredPayloadsRoundTripThroughTheRegistry() async throws {
        let (backend, registry) = try world([OrderCard.self, BrokenCard.self])
        let card = OrderCard(orderID: "42", amountCents: 1999)
        let events = backend.events()
        let sent = try await backend.send(OutgoingMessage(conversation: dm, sender: "shop", content: .custom(card)))
        let stored = try #require(try await backend.history(HistoryQuery(conversation: dm)).messages.first)
        #expect(stored.custom(as: OrderCard.self) == card)
        #expect(try registry.resolve(stored, as: OrderCard.self) == card)
        let event = try await events.first(within: 2) { $0.messageID == sent.id }
        if case .message(let message) = event.kind { #expect(message.custom(as: OrderCard.self) == card) }
        // A payload whose Codable does not survive the trip fails here, as it cannot be read back in production.
        let broken = await #expect(throws: IMError.self) {
            _ = try await backend.send(OutgoingMessage(conversation: dm, sender: "shop", content: .custom(BrokenCard(title: "x"))))
        }
        #expect(broken?.code == .invalidContent)
        #expect(broken?.message.contains("broken_card") == true, "\(String(describing: broken))")
        // A raw payload of a registered type comes back typed; one of an unknown type stays raw, byte for byte.
        let raw = try await backend.send(OutgoingMessage(conversation: dm, sender: "shop",
                                                          content: .custom(CustomContent(raw: "order_card", payload: #"{"amountCents":5,"orderID":"7"}"#))))
        #expect(raw.custom(as: OrderCard.self) == OrderCard(orderID: "7", amountCents: 5))
        let unknown = try await backend.send(OutgoingMessage(conversation: dm, sender: "shop",
                                                              content: .custom(CustomContent(raw: "coupon", payload: #"{"z":1, "a":2}"#))))
        guard case .custom(let kept) = unknown.content else { Issue.record("unknown custom came back as \(unknown.content)"); return }
        #expect(kept.payload == #"{"z":1, "a":2}"# && !kept.isRegistered)
        // A registered payload failing validate() is refused at send, as the adapters' codecs refuse it.
        await #expect(throws: IMError.self) {
            _ = try await backend.send(OutgoingMessage(conversation: dm, sender: "shop",
                                                        content: .custom(CustomContent(raw: "order_card", payload: #"{"amountCents":-1,"orderID":"7"}"#))))
        }
    }

    @Test func resolveNamesWhatIsWrong() async throws {
        let (backend, registry) = try world([OrderCard.self])
        let text = try await backend.send(OutgoingMessage(conversation: dm, sender: "shop", content: .text("hi")))
        #expect(throws: IMError.self) { _ = try registry.resolve(text, as: OrderCard.self) }
        let card = try await backend.send(OutgoingMessage(conversation: dm, sender: "shop", content: .custom(OrderCard(orderID: "1", amountCents: 1))))
        let error = #expect(throws: IMError.self) { _ = try ContentRegistry().resolve(card, as: OrderCard.self) }
        #expect(error?.code == .invalidContent && error?.message.contains("not registered") == true)
        #expect(throws: IMError.self) { _ = try registry.resolve(card, as: BrokenCard.self) }
    }

    @Test func parameterizedPresetsAreNamedByVendor() {
        #expect(Capabilities.allPresets.map(\.testDescription) == ["wukong", "rongcloud", "nim", "jmessage"])
    }
}
