import IMCore
import IMTesting
import Testing

/// The conformance suite against MemoryBackend under every vendor preset.
@Suite struct ConformanceTests {
    @Test(arguments: Capabilities.allPresets)
    func memoryBackendConforms(preset: Capabilities) async throws {
        let suite = ConformanceSuite {
            let clock = TestClock()
            let registry = ContentRegistry()
            let world = MemoryWorld(capabilities: preset, clock: clock, registry: registry)
            world.addMembers(["alice", "bob", "carol"], to: "team")
            return ConformanceSubject(backend: MemoryBackend(id: "mem", world: world), users: ["alice", "bob", "carol"],
                                      group: "team", advanceClock: { clock.advance(byMs: $0) }, registry: registry)
        }
        let report = await suite.run()
        #expect(report.failures.isEmpty, "\(report)")
        #expect(report.results.count == ConformanceSuite.checkNames.count)
        #expect(report.passed.count >= 15, "\(report)")
    }

    @Test func aBrokenBackendFails() async throws {
        /// Claims full recall but lets anyone recall anything: the suite must notice.
        let lax = { () -> Capabilities in
            var capabilities = Capabilities.wukong
            capabilities.recallBySenderOnly = false
            return capabilities
        }()
        let suite = ConformanceSuite {
            let backend = LyingBackend(inner: MemoryBackend(id: "mem", capabilities: lax, clock: TestClock()))
            return ConformanceSubject(backend: backend, users: ["alice", "bob", "carol"])
        }
        let report = await suite.run(only: ["recall.by-other-refused", "send.text.history"])
        #expect(report.failures.map(\.check) == ["recall.by-other-refused"], "\(report)")
    }
}

/// Reports sender-only recall while its memory world allows anyone: a deliberately broken backend.
struct LyingBackend: Recalling {
    let inner: MemoryBackend
    var id: BackendID { inner.id }
    var capabilities: Capabilities {
        var capabilities = inner.capabilities
        capabilities.recallBySenderOnly = true
        return capabilities
    }
    func send(_ message: OutgoingMessage) async throws -> Message { try await inner.send(message) }
    func events() -> AsyncStream<IMEvent> { inner.events() }
    func history(_ query: HistoryQuery) async throws -> HistoryPage { try await inner.history(query) }
    func recall(_ message: MessageID, in conversation: ConversationRef, by user: UserID) async throws {
        try await inner.recall(message, in: conversation, by: user)
    }
}
