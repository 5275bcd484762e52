import IMCore
import IMTesting
import Testing

// What an app team writes: its own fake backend as an actor, checked by the ConformanceSuite plus a check
// of its own written with the public ConformanceContext helpers. Only public API is used here.

/// An app's in-memory fake as an `actor`. `events()` is a synchronous, nonisolated requirement, so it
/// cannot touch the actor's state: the actor owns an `EventFanout` (a Sendable `let`) and
/// `nonisolated func events()` subscribes to it; isolated methods publish into it.
actor AppFakeBackend: IMBackend {
    nonisolated let id: BackendID
    nonisolated let capabilities: Capabilities
    private nonisolated let fanout = EventFanout()
    private var stored: [ConversationRef: [Message]] = [:]
    private var byClientID: [ClientMessageID: Message] = [:]

    init(id: BackendID = "app-fake") {
        self.id = id
        // Text and images, paged history; nothing else is offered (the suite checks those are refused).
        capabilities = Capabilities(vendor: "app-fake", features: [.history: .full], textMaxLength: 500,
                                    recallWindowMs: nil, expansionLimits: nil, contentKinds: [.text, .image])
    }

    nonisolated func events() -> AsyncStream<IMEvent> { fanout.subscribe() }

    func send(_ outgoing: OutgoingMessage) async throws -> Message {
        try capabilities.check(outgoing.content)
        if !outgoing.mentions.isEmpty { try capabilities.require(.mentions) }
        if outgoing.reply != nil { try capabilities.require(.replies) }
        if let clientID = outgoing.clientMessageID, let first = byClientID[clientID] { return first }
        var list = stored[outgoing.conversation, default: []]
        let message = Message(id: MessageID("f\(stored.values.map(\.count).reduce(0, +) + 1)"), clientMessageID: outgoing.clientMessageID,
                              conversation: outgoing.conversation, sender: outgoing.sender, sentAt: 1_700_000_000_000,
                              seq: Int64(list.count + 1), content: outgoing.content)
        list.append(message)
        stored[outgoing.conversation] = list
        if let clientID = outgoing.clientMessageID { byClientID[clientID] = message }
        fanout.publish([IMEvent(eventID: EventID("msg:\(message.id)"), backend: id, kind: .message(message))])
        return message
    }

    func history(_ query: HistoryQuery) async throws -> HistoryPage {
        let all = stored[query.conversation] ?? []
        func index(_ cursor: HistoryCursor) throws -> Int {
            guard let seq = cursor.seq else { throw IMError(.invalidArgument, "'\(cursor)' is not a seq") }
            return Int(seq) - 1
        }
        let range: Range<Int>
        switch query.anchor {
        case .latest: range = max(0, all.count - query.limit)..<all.count
        case .oldest: range = 0..<min(query.limit, all.count)
        case .before(let cursor):
            let end = min(all.count, max(0, try index(cursor)))
            range = max(0, end - query.limit)..<end
        case .after(let cursor):
            let start = min(all.count, try index(cursor) + 1)
            range = start..<min(all.count, start + query.limit)
        case .around(let cursor):
            let lower = max(0, try index(cursor) - (query.limit - 1) / 2)
            let upper = min(all.count, lower + query.limit)
            range = max(0, upper - query.limit)..<upper
        }
        let page = Array(all[range])
        return HistoryPage(messages: page, olderCursor: page.first.map { HistoryCursor(seq: $0.seq!) },
                           newerCursor: page.last.map { HistoryCursor(seq: $0.seq!) },
                           hasOlder: range.lowerBound > 0, hasNewer: range.upperBound < all.count)
    }
}

/// The app's own checks, with the suite's public helpers: `waitFor` for events and a skip.
let appChecks: [ConformanceCheck] = [
    ConformanceCheck(name: "app.image-event") { ctx in
        let stream = ctx.backend.events()
        let image = MessageContent.image(ImageContent(MediaAttachment(remoteURL: "https://cdn.example.test/1.png", transferState: .needsDownload)))
        let sent = try await ctx.send(image)
        let event = try await ctx.waitFor("image message", on: stream) { $0.messageID == sent.id }
        guard case .message(let message) = event.kind, message.content.kind == .image else {
            throw ConformanceFailure("expected an image message event, got \(event.kindName)")
        }
    },
    ConformanceCheck(name: "app.group-broadcast") { ctx in
        guard ctx.subject.group != nil else { throw ConformanceSkip("the app's fake has no groups") }
    },
    ConformanceCheck(name: "app.never-arrives") { ctx in
        let stream = ctx.backend.events()
        _ = try await ctx.waitFor("an edit nobody made", on: stream) { if case .edited = $0.kind { true } else { false } }
    },
]

@Suite struct AppFakeConformanceTests {
    static let users: [UserID] = ["alice", "bob", "carol"]

    @Test func anActorFakePassesTheSuiteWithItsOwnChecks() async throws {
        let suite = ConformanceSuite(additionalChecks: appChecks) {
            ConformanceSubject(backend: AppFakeBackend(), users: Self.users, eventTimeout: 0.3)
        }
        let report = await suite.run()
        #expect(report.failures.map(\.check) == ["app.never-arrives"], "\(report)")
        #expect(report.failures.first.map { "\($0)".contains("no an edit nobody made event within 0.3 s") } == true, "\(report)")
        let outcome = { (name: String) in report.results.first { $0.check == name }?.outcome }
        #expect(outcome("app.image-event") == .passed)
        #expect(outcome("app.group-broadcast") == .skipped("the app's fake has no groups"))
        for check in ["send.text.event", "history.paging", "history.around", "content.image"] {
            #expect(outcome(check) == .passed, "\(check): \(report)")
        }
        // Replies are rejected by its capabilities, and it refuses them: that check passes too. It is not
        // ClientIDLookup, so idempotency is not promised and skipped.
        #expect(outcome("send.reply") == .passed, "\(report)")
        #expect(outcome("send.idempotent").map { if case .skipped = $0 { true } else { false } } == true, "\(report)")
        #expect(report.results.count == ConformanceSuite.checkNames.count + appChecks.count)
    }

    /// A fake that cannot page around a message passed every check before `history.around` was checked.
    @Test func aBackendRefusingAroundFailsTheSuite() async throws {
        let suite = ConformanceSuite {
            ConformanceSubject(backend: NoAround(inner: MemoryBackend(id: "mem", capabilities: .wukong)), users: Self.users)
        }
        let report = await suite.run(only: ["history.paging", "history.around"])
        #expect(report.failures.map(\.check) == ["history.around"], "\(report)")
    }

    @Test func newChecksRunOnEveryPreset() async throws {
        for preset in Capabilities.allPresets {
            let suite = ConformanceSuite {
                let clock = TestClock()
                let world = MemoryWorld(capabilities: preset, clock: clock)
                world.addMembers(Self.users, to: "team")
                return ConformanceSubject(backend: MemoryBackend(id: "mem", world: world), users: Self.users, group: "team",
                                          advanceClock: { clock.advance(byMs: $0) })
            }
            let report = await suite.run(only: ["history.around", "send.mentions", "send.reply", "send.idempotent",
                                                "conversations.unread", "conversations.list"])
            #expect(report.failures.isEmpty, "\(report)")
            let passed = Set(report.passed.map(\.check))
            #expect(passed.isSuperset(of: ["history.around", "send.idempotent"]), "\(preset.vendor): \(report)")
            if preset.vendor == "wukong" {
                #expect(passed == ["history.around", "send.mentions", "send.reply", "send.idempotent", "conversations.unread", "conversations.list"],
                        "\(report)")
            }
        }
    }
}

/// Forwards to a memory backend but refuses `.around` pages: a deliberately broken fake.
struct NoAround: IMBackend {
    let inner: MemoryBackend
    var id: BackendID { inner.id }
    var capabilities: Capabilities { inner.capabilities }
    func send(_ message: OutgoingMessage) async throws -> Message { try await inner.send(message) }
    func events() -> AsyncStream<IMEvent> { inner.events() }
    func cursor(for message: Message) throws -> HistoryCursor { try inner.cursor(for: message) }
    func history(_ query: HistoryQuery) async throws -> HistoryPage {
        if case .around = query.anchor { throw IMError(.unsupported, "no around paging") }
        return try await inner.history(query)
    }
}
