import IMCore

extension ConformanceChecks {
    /// Paging around a message, mentions, replies, idempotent sends, unread counts and the conversation
    /// list. Each is gated by the capability (or protocol) that promises it: native must work, rejected
    /// must be refused with `unsupported`, a `fallback` (an adapter-specific substitute) is skipped.
    static let conversations: [ConformanceCheck] = [
        ConformanceCheck(name: "history.around") { ctx in
            try ctx.expect(ctx.capabilities.support(.history) != .rejected, "history is rejected")
            let conversation = ConversationRef.direct(ctx.alice, ctx.carol)
            var ids: [MessageID] = []
            for n in 1...5 { ids.append(try await ctx.send(.text("around \(n)"), to: conversation).id) }
            let latest = try await ctx.backend.history(HistoryQuery(conversation: conversation, anchor: .latest, limit: 5))
            try ctx.expect(latest.messages.map(\.id) == ids, "latest 5 = \(latest.messages.map(\.id)), expected \(ids)")
            // The backend's own cursor for the third message, as apps get it (never built by hand).
            let cursor = try ctx.backend.cursor(for: latest.messages[2])
            let around = try await ctx.backend.history(HistoryQuery(conversation: conversation, anchor: .around(cursor), limit: 3))
            try ctx.expect(around.messages.map(\.id) == Array(ids[1...3]),
                           "around message 3 (limit 3) = \(around.messages.map(\.id)), expected \(ids[1...3])")
            try ctx.expect(around.hasOlder && around.hasNewer, "around message 3: hasOlder \(around.hasOlder), hasNewer \(around.hasNewer)")
            let before = try await ctx.backend.history(HistoryQuery(conversation: conversation, anchor: .before(cursor), limit: 5))
            try ctx.expect(before.messages.map(\.id) == Array(ids[0...1]), "before message 3 = \(before.messages.map(\.id))")
            let after = try await ctx.backend.history(HistoryQuery(conversation: conversation, anchor: .after(cursor), limit: 5))
            try ctx.expect(after.messages.map(\.id) == Array(ids[3...4]), "after message 3 = \(after.messages.map(\.id))")
            let edge = try await ctx.backend.history(HistoryQuery(
                conversation: conversation, anchor: .around(try ctx.backend.cursor(for: latest.messages[0])), limit: 3))
            try ctx.expect(edge.messages.map(\.id) == Array(ids[0...2]), "around the first message the short side is not filled from the other: \(edge.messages.map(\.id))")
        },
        ConformanceCheck(name: "send.mentions") { ctx in
            let level = ctx.capabilities.support(.mentions)
            guard let group = ctx.subject.group else { throw ctx.skip("no group given") }
            let mentions = Mentions(users: [ctx.bob])
            guard level.isNative else {
                guard level == .rejected else { throw ctx.skip("mentions are \(level.rawValue): the adapter's substitute is not checked") }
                try await ctx.expectError(.unsupported, "a mention") { _ = try await ctx.send(.text("@bob"), to: .group(group), mentions: mentions) }
                return
            }
            let sent = try await ctx.send(.text("@bob please look"), to: .group(group), mentions: mentions)
            let stored = try await ctx.stored(sent.id, in: .group(group))
            try ctx.expect(stored.mentions.mentions(ctx.bob) && !stored.mentions.mentions(ctx.carol),
                           "history has mentions \(stored.mentions), expected bob only")
        },
        ConformanceCheck(name: "send.reply") { ctx in
            let level = ctx.capabilities.support(.replies)
            let original = try await ctx.send(.text("question"))
            let reply = ReplyRef(messageID: original.id, sender: ctx.alice, digest: "question")
            guard level.isNative else {
                guard level == .rejected else { throw ctx.skip("replies are \(level.rawValue): the adapter's substitute is not checked") }
                try await ctx.expectError(.unsupported, "a reply") { _ = try await ctx.send(.text("answer"), from: ctx.bob, reply: reply) }
                return
            }
            let answer = try await ctx.send(.text("answer"), from: ctx.bob, reply: reply)
            let stored = try await ctx.stored(answer.id)
            try ctx.expect(stored.reply?.messageID == original.id, "history has reply \(String(describing: stored.reply)), expected \(original.id)")
        },
        ConformanceCheck(name: "send.idempotent") { ctx in
            // The neutral API's idempotency is ask-before-resend: a backend that is `ClientIDLookup` finds the
            // message an earlier attempt sent with a client message id (the bridge asks before sending again).
            // Deduplicating a repeated send is not promised (WuKongIM and JMessage store both copies).
            guard let lookup = ctx.backend as? any ClientIDLookup else {
                throw ctx.skip("the backend is not ClientIDLookup: idempotent sends by client message id are not promised")
            }
            let clientID = ClientMessageID("conformance-once")
            try ctx.expect(try await lookup.message(withClientID: clientID, in: ctx.direct) == nil, "an unused client message id was found")
            let first = try await ctx.send(.text("exactly once"), clientMessageID: clientID)
            let found = try await lookup.message(withClientID: clientID, in: ctx.direct)
            try ctx.expect(found?.id == first.id, "lookup by client message id found \(String(describing: found?.id)), expected \(first.id)")
            try ctx.expect(found?.clientMessageID == clientID, "the message found carries client id \(String(describing: found?.clientMessageID))")
        },
        ConformanceCheck(name: "conversations.unread") { ctx in
            guard let listing = try ctx.feature(.conversationList, as: (any ConversationListing).self) else { return }
            guard ctx.capabilities.support(.conversationList).isNative else {
                try await ctx.expectError(.unsupported, "unreadCount") { _ = try await listing.unreadCount(in: ctx.direct, for: ctx.bob) }
                return
            }
            for text in ["unread 1", "unread 2"] { _ = try await ctx.send(.text(text)) }
            let bobs = try await listing.unreadCount(in: ctx.direct, for: ctx.bob)
            try ctx.expect(bobs == 2, "bob's unread count after two messages from alice is \(bobs)")
            let alices = try await listing.unreadCount(in: ctx.direct, for: ctx.alice)
            try ctx.expect(alices == 0, "alice's unread count for her own messages is \(alices)")
            let total = try await listing.totalUnread(for: ctx.bob)
            try ctx.expect(total == 2, "bob's total unread is \(total)")
        },
        ConformanceCheck(name: "conversations.list") { ctx in
            guard let listing = try ctx.feature(.conversationList, as: (any ConversationListing).self) else { return }
            guard ctx.capabilities.support(.conversationList).isNative else {
                try await ctx.expectError(.unsupported, "conversations") { _ = try await listing.conversations(for: ctx.alice) }
                return
            }
            let withCarol = ConversationRef.direct(ctx.alice, ctx.carol)
            _ = try await ctx.send(.text("to bob"))
            if let advance = ctx.subject.advanceClock { try await advance(1000) }
            _ = try await ctx.send(.text("to carol"), to: withCarol)
            let list = try await listing.conversations(for: ctx.alice)
            let refs = list.map(\.conversation)
            try ctx.expect(refs.contains(ctx.direct) && refs.contains(withCarol), "alice's conversations are \(refs)")
            let last = list.first { $0.conversation == withCarol }?.lastMessage?.content
            try ctx.expect(last == .text("to carol"), "the last message with carol is listed as \(String(describing: last))")
            if ctx.subject.advanceClock != nil {
                try ctx.expect(refs.firstIndex(of: withCarol)! < refs.firstIndex(of: ctx.direct)!, "not newest first: \(refs)")
            }
            let bobs = try await listing.conversations(for: ctx.bob).map(\.conversation)
            try ctx.expect(!bobs.contains(withCarol), "bob's list shows alice and carol's conversation: \(bobs)")
        },
    ]
}
