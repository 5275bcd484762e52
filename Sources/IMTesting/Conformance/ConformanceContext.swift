import IMCore

/// What a check gets: the subject, its users, and helpers for expectations, refusals, sending, event
/// waiting and opt-in protocol access. Public so that an app's own checks (`ConformanceCheck`, passed
/// to `ConformanceSuite(additionalChecks:factory:)`) use the same helpers as the built-in ones.
public struct ConformanceContext: Sendable {
    public let subject: ConformanceSubject
    public var backend: any IMBackend { subject.backend }
    public var capabilities: Capabilities { backend.capabilities }
    public var alice: UserID { subject.users[0] }
    public var bob: UserID { subject.users[1] }
    public var carol: UserID { subject.users[2] }
    /// The direct conversation of alice and bob.
    public var direct: ConversationRef { .direct(alice, bob) }

    public init(subject: ConformanceSubject) {
        self.subject = subject
    }

    /// Fails the check with `message` unless `condition` holds.
    public func expect(_ condition: Bool, _ message: @autoclosure () -> String) throws {
        if !condition { throw ConformanceFailure(description: message()) }
    }

    /// A skip to throw: `throw ctx.skip("no group given")`.
    public func skip(_ reason: String) -> ConformanceSkip { ConformanceSkip(reason) }

    /// Runs `body` and requires it to throw an `IMError` with `code`; returns the error.
    @discardableResult
    public func expectError(_ code: IMError.Code, _ what: String, _ body: () async throws -> Void) async throws -> IMError {
        do {
            try await body()
        } catch let error as IMError {
            try expect(error.code == code, "\(what): expected \(code), got \(error)")
            return error
        }
        throw ConformanceFailure(description: "\(what): expected \(code), but it succeeded")
    }

    /// Sends `content` from alice (or `from`) into the direct conversation (or `to`).
    public func send(_ content: MessageContent, from: UserID? = nil, to conversation: ConversationRef? = nil,
                     expansion: [String: String]? = nil, reply: ReplyRef? = nil, mentions: Mentions = Mentions(),
                     clientMessageID: ClientMessageID? = nil, options: MessageOptions = MessageOptions()) async throws -> Message {
        try await backend.send(OutgoingMessage(conversation: conversation ?? direct, sender: from ?? alice, content: content,
                                               clientMessageID: clientMessageID, mentions: mentions, reply: reply, options: options,
                                               expansion: expansion))
    }

    /// Waits for the first event on `stream` that `match` accepts, up to the subject's `eventTimeout`;
    /// fails the check (naming `what`) when none comes. Subscribe before the action you wait for.
    public func waitFor(_ what: String, on stream: AsyncStream<IMEvent>,
                 _ match: @escaping @Sendable (IMEvent) -> Bool) async throws -> IMEvent {
        let timeout = subject.eventTimeout
        let found = await withTaskGroup(of: IMEvent?.self) { group in
            group.addTask {
                for await event in stream where match(event) { return event }
                return nil
            }
            group.addTask {
                try? await Task.sleep(nanoseconds: UInt64(timeout * 1_000_000_000))
                return nil
            }
            let first = await group.next() ?? nil
            group.cancelAll()
            return first
        }
        guard let found else { throw ConformanceFailure(description: "no \(what) event within \(timeout) s") }
        return found
    }

    /// The stored message as history shows it now.
    public func stored(_ id: MessageID, in conversation: ConversationRef? = nil) async throws -> Message {
        let page = try await backend.history(HistoryQuery(conversation: conversation ?? direct, anchor: .latest, limit: 50))
        guard let message = page.messages.first(where: { $0.id == id }) else {
            throw ConformanceFailure(description: "message \(id) is not in the latest history page of \(conversation ?? direct)")
        }
        return message
    }

    /// The backend as an opt-in protocol when the feature is native; a skip when it is neither native
    /// nor offered; `nil` when it is offered but must refuse (the caller then checks the refusal).
    public func feature<P>(_ feature: Feature, as type: P.Type) throws -> P? {
        let native = capabilities.support(feature).isNative
        if let typed = backend as? P { return typed }
        if native { throw ConformanceFailure(description: "\(feature.rawValue) is \(capabilities.support(feature).rawValue) but the backend is not \(P.self)") }
        throw skip("\(feature.rawValue) is \(capabilities.support(feature).rawValue) and not offered")
    }
}
