import IMCore
import IMTesting
import IMTestingSandbox
import Testing

/// One test, two backends (docs/testing-kit.md): each test runs on `MemoryBackend` under the vendor's
/// preset and on the vendor's adapter against its sandbox, with faults injected the same way, and
/// expects the same outcome — the preset's `faultAnswers` are what the adapter throws.
@Suite struct TwoBackendTests {
    static let targets = TestBackendTarget.memoryAndSandbox(["wukong", "rongcloud", "nim", "jmessage"])
    let chat = ConversationRef.direct("alice", "bobby")

    func prepare(_ session: TestBackendSession) async throws {
        guard let users = session.backend as? any UserProvisioning else { return }
        for user: UserID in ["alice", "bobby"] { try await users.ensureUser(UserProfile(id: user, name: user.rawValue)) }
    }

    func send(_ text: String, on session: TestBackendSession) async throws -> Message {
        try await session.backend.send(OutgoingMessage(conversation: chat, sender: "alice", content: .text(text)))
    }

    @Test(arguments: targets)
    func aRateLimitCarriesTheVendorsCodeAndWaitThenTheRetryGoesThrough(_ target: TestBackendTarget) async throws {
        try await target.run { session in
            try await prepare(session)
            try await session.inject(.rateLimited(), on: .send)
            let error = await #expect(throws: IMError.self) { _ = try await send("first try", on: session) }
            let answer = session.capabilities.faultAnswers.rateLimited
            #expect(error?.code == .rateLimited)
            #expect(error?.vendorCode == answer.vendorCode)
            #expect(error?.retryAfterMs == answer.retryAfterMs)
            #expect(error?.isRetryable == true)
            let sent = try await send("retried", on: session)
            let page = try await session.backend.history(HistoryQuery(conversation: chat, anchor: .latest, limit: 10))
            #expect(page.messages.map(\.id) == [sent.id], "the refused try stored nothing")
        }
    }

    /// A server error after the accept: the app sees `unavailable` with the vendor's code, yet the
    /// message is in history (ask before resending).
    @Test(arguments: targets)
    func aServerErrorAfterTheAcceptLeavesTheMessageSent(_ target: TestBackendTarget) async throws {
        try await target.run { session in
            try await prepare(session)
            try await session.inject(MemoryFault.serverError.afterAccepting, on: .send)
            let error = await #expect(throws: IMError.self) { _ = try await send("answer lost", on: session) }
            #expect(error?.code == .unavailable)
            #expect(error?.vendorCode == session.capabilities.faultAnswers.serverError.vendorCode)
            let page = try await session.backend.history(HistoryQuery(conversation: chat, anchor: .latest, limit: 10))
            #expect(page.messages.map { $0.currentContent.digest } == ["answer lost"])
        }
    }

    @Test func timeoutsAreInjectedInMemoryOnly() async throws {
        try await TestBackendTarget.sandbox("rongcloud").run { session in
            let error = await #expect(throws: IMError.self) { try await session.inject(.timeout, on: .send) }
            #expect(error?.code == .unsupported)
        }
    }
}
