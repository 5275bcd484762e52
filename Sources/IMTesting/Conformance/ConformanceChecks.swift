import IMCore

/// One named check: `body` throws `ConformanceFailure` (or any error) to fail, `ConformanceSkip` to skip.
public struct ConformanceCheck: Sendable {
    public var name: String
    public var body: @Sendable (ConformanceContext) async throws -> Void
    public init(name: String, body: @escaping @Sendable (ConformanceContext) async throws -> Void) {
        self.name = name
        self.body = body
    }
}

enum ConformanceChecks {
    static let all: [ConformanceCheck] = messaging + contents + history + features + expansion + conversations + people

    static let messaging: [ConformanceCheck] = [
        ConformanceCheck(name: "send.text.history") { ctx in
            let sent = try await ctx.send(.text("你好, conformance"))
            try ctx.expect(!sent.id.rawValue.isEmpty, "send returned an empty message id")
            try ctx.expect(sent.conversation == ctx.direct, "send returned conversation \(sent.conversation), expected \(ctx.direct)")
            let stored = try await ctx.stored(sent.id)
            try ctx.expect(stored.content == .text("你好, conformance"), "history has \(stored.content)")
            try ctx.expect(stored.sender == ctx.alice, "history sender is \(stored.sender)")
            try ctx.expect(stored.sentAt > 0, "history sentAt is \(stored.sentAt)")
        },
        ConformanceCheck(name: "send.text.event") { ctx in
            let stream = ctx.backend.events()
            let sent = try await ctx.send(.text("event please"))
            let event = try await ctx.waitFor("message", on: stream) { $0.messageID == sent.id }
            guard case .message(let message) = event.kind else {
                throw ConformanceFailure(description: "first event for \(sent.id) is \(event.kindName), not message")
            }
            try ctx.expect(message.content == .text("event please"), "event content is \(message.content)")
            try ctx.expect(!event.eventID.rawValue.isEmpty, "event has an empty eventID")
            try ctx.expect(event.backend == ctx.backend.id, "event names backend \(event.backend)")
        },
        ConformanceCheck(name: "send.direct.unordered") { ctx in
            let fromBob = try await ctx.send(.text("from bob"), from: ctx.bob, to: .direct(ctx.bob, ctx.alice))
            try ctx.expect(fromBob.conversation == ctx.direct, "bob's message lives in \(fromBob.conversation)")
            let stored = try await ctx.stored(fromBob.id, in: .direct(ctx.alice, ctx.bob))
            try ctx.expect(stored.sender == ctx.bob, "stored sender is \(stored.sender)")
        },
        ConformanceCheck(name: "send.text.limit") { ctx in
            let limit = ctx.capabilities.textMaxLength
            try await ctx.expectError(.limitExceeded, "text of \(limit + 1) units") {
                _ = try await ctx.send(.text(String(repeating: "a", count: limit + 1)))
            }
        },
        ConformanceCheck(name: "send.group") { ctx in
            guard let group = ctx.subject.group else { throw ctx.skip("no group given") }
            let sent = try await ctx.send(.text("hello group"), to: .group(group))
            let stored = try await ctx.stored(sent.id, in: .group(group))
            try ctx.expect(stored.conversation == .group(group), "stored in \(stored.conversation)")
        },
    ]

    static let history: [ConformanceCheck] = [
        ConformanceCheck(name: "history.paging") { ctx in
            try ctx.expect(ctx.capabilities.support(.history) != .rejected, "history is rejected")
            let conversation = ConversationRef.direct(ctx.alice, ctx.carol)
            var ids: [MessageID] = []
            for n in 1...5 { ids.append(try await ctx.send(.text("page \(n)"), to: conversation).id) }
            func page(_ anchor: HistoryAnchor) async throws -> HistoryPage {
                try await ctx.backend.history(HistoryQuery(conversation: conversation, anchor: anchor, limit: 2))
            }
            let latest = try await page(.latest)
            try ctx.expect(latest.messages.map(\.id) == Array(ids[3...4]), "latest 2 = \(latest.messages.map(\.id)), expected \(ids[3...4])")
            try ctx.expect(latest.hasOlder, "latest page says nothing is older")
            let older = try await page(.before(try unwrap(latest.olderCursor, "latest page has no older cursor")))
            try ctx.expect(older.messages.map(\.id) == Array(ids[1...2]), "page before = \(older.messages.map(\.id)), expected \(ids[1...2])")
            let oldest = try await page(.oldest)
            try ctx.expect(oldest.messages.map(\.id) == Array(ids[0...1]), "oldest 2 = \(oldest.messages.map(\.id))")
            let newer = try await page(.after(try unwrap(oldest.newerCursor, "oldest page has no newer cursor")))
            try ctx.expect(newer.messages.map(\.id) == Array(ids[2...3]), "page after oldest = \(newer.messages.map(\.id))")
            try ctx.expect(newer.hasNewer, "page after oldest says nothing is newer")
        },
    ]

    static func unwrap<T>(_ value: T?, _ message: String) throws -> T {
        guard let value else { throw ConformanceFailure(description: message) }
        return value
    }
}
