import IMCore

extension ConformanceChecks {
    static let features: [ConformanceCheck] = [
        ConformanceCheck(name: "recall.by-sender") { ctx in
            guard let backend = try ctx.feature(.recall, as: (any Recalling).self) else { return }
            let sent = try await ctx.send(.text("take me back"))
            guard ctx.capabilities.support(.recall).isNative else {
                try await ctx.expectError(.unsupported, "recall") { try await backend.recall(sent.id, in: ctx.direct, by: ctx.alice) }
                return
            }
            let stream = ctx.backend.events()
            try await backend.recall(sent.id, in: ctx.direct, by: ctx.alice)
            let event = try await ctx.waitFor("recalled", on: stream) {
                if case .recalled(let id, _, _, _) = $0.kind { id == sent.id } else { false }
            }
            if case .recalled(_, let conversation, let by, _) = event.kind {
                try ctx.expect(conversation == ctx.direct && by == ctx.alice, "recalled event says \(conversation) by \(by)")
            }
            let stored = try await ctx.stored(sent.id)
            try ctx.expect(stored.isRecalled, "history does not show \(sent.id) recalled")
        },
        ConformanceCheck(name: "recall.by-other-refused") { ctx in
            guard ctx.capabilities.support(.recall).isNative, ctx.capabilities.recallBySenderOnly,
                  let backend = ctx.backend as? any Recalling else { throw ctx.skip("recall is not sender-only here") }
            let sent = try await ctx.send(.text("mine"))
            try await ctx.expectError(.permissionDenied, "recall by someone else") {
                try await backend.recall(sent.id, in: ctx.direct, by: ctx.bob)
            }
        },
        ConformanceCheck(name: "recall.after-window-refused") { ctx in
            guard ctx.capabilities.support(.recall).isNative, let window = ctx.capabilities.recallWindowMs,
                  let backend = ctx.backend as? any Recalling else { throw ctx.skip("no recall window") }
            guard let advance = ctx.subject.advanceClock else { throw ctx.skip("the clock cannot be moved") }
            let sent = try await ctx.send(.text("too late"))
            try await advance(window + 1000)
            try await ctx.expectError(.recallWindowExpired, "recall after \(window) ms") {
                try await backend.recall(sent.id, in: ctx.direct, by: ctx.alice)
            }
        },
        ConformanceCheck(name: "edit") { ctx in
            guard let backend = try ctx.feature(.edit, as: (any Editing).self) else { return }
            let sent = try await ctx.send(.text("typo"))
            guard ctx.capabilities.support(.edit).isNative else {
                try await ctx.expectError(.unsupported, "edit") { try await backend.edit(sent.id, in: ctx.direct, by: ctx.alice, content: .text("x")) }
                return
            }
            let stream = ctx.backend.events()
            try await backend.edit(sent.id, in: ctx.direct, by: ctx.alice, content: .text("fixed"))
            _ = try await ctx.waitFor("edited", on: stream) {
                if case .edited(let id, _, _, let content, _) = $0.kind { id == sent.id && content == .text("fixed") } else { false }
            }
            let stored = try await ctx.stored(sent.id)
            try ctx.expect(stored.currentContent == .text("fixed"), "history shows \(stored.currentContent) after edit")
            if ctx.capabilities.editBySenderOnly {
                try await ctx.expectError(.permissionDenied, "edit by someone else") {
                    try await backend.edit(sent.id, in: ctx.direct, by: ctx.bob, content: .text("hijack"))
                }
            }
        },
        ConformanceCheck(name: "reactions.toggle") { ctx in
            guard let backend = try ctx.feature(.reactions, as: (any Reacting).self) else { return }
            let sent = try await ctx.send(.text("react to me"))
            guard ctx.capabilities.support(.reactions).isNative else {
                try await ctx.expectError(.unsupported, "reaction") { _ = try await backend.toggleReaction("👍", on: sent.id, in: ctx.direct, by: ctx.bob) }
                return
            }
            let added = try await backend.toggleReaction("👍", on: sent.id, in: ctx.direct, by: ctx.bob)
            try ctx.expect(added, "first 👍 by bob was not added")
            let listed = try await backend.reactions(on: sent.id, in: ctx.direct)
            try ctx.expect(listed.contains { $0.user == ctx.bob && $0.emoji == "👍" }, "reactions are \(listed)")
            let again = try await backend.toggleReaction("👍", on: sent.id, in: ctx.direct, by: ctx.bob)
            try ctx.expect(!again, "second 👍 by bob did not remove it")
            let after = try await backend.reactions(on: sent.id, in: ctx.direct)
            try ctx.expect(!after.contains { $0.user == ctx.bob && $0.emoji == "👍" }, "reactions after toggle-off are \(after)")
        },
        ConformanceCheck(name: "read.receipts") { ctx in
            guard let backend = try ctx.feature(.readReceipts, as: (any ReadReceipting).self) else { return }
            let sent = try await ctx.send(.text("read me"), options: MessageOptions(receiptRequested: true))
            guard ctx.capabilities.support(.readReceipts).isNative else {
                try await ctx.expectError(.unsupported, "markRead") { try await backend.markRead(ctx.direct, by: ctx.bob, upTo: sent.id) }
                return
            }
            let stream = ctx.backend.events()
            try await backend.markRead(ctx.direct, by: ctx.bob, upTo: sent.id)
            _ = try await ctx.waitFor("read", on: stream) {
                if case .read(_, let user, let upTo, _) = $0.kind { user == ctx.bob && upTo == sent.id } else { false }
            }
            let counts = try await backend.readCounts(of: sent.id, in: ctx.direct)
            try ctx.expect(counts.read == 1, "read count after bob read is \(counts)")
        },
    ]
}
