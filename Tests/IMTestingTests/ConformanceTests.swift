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
            var subject = ConformanceSubject(backend: MemoryBackend(id: "mem", world: world), users: ["alice", "bob", "carol"],
                                             group: "team", advanceClock: { clock.advance(byMs: $0) }, registry: registry)
            subject.reportsDeletions = world.reportsDeletions
            subject.reportsMembershipChanges = world.reportsMembershipChanges
            return subject
        }
        let report = await suite.run()
        #expect(report.failures.isEmpty, "\(report)")
        #expect(report.results.count == ConformanceSuite.checkNames.count)
        #expect(report.passed.count >= 15, "\(report)")
    }

    /// The profile, membership and deletion checks under each vendor's rules: what runs (and waits for
    /// its event) and what is skipped or must be refused.
    @Test func peopleChecksFollowEachVendorsRules() async throws {
        var custom = Capabilities.wukong
        custom.vendor = "custom"
        // No preset reports membership changes (no adapter emits one, docs/testing-kit.md); capabilities that
        // say so publish them and the join check waits for the event.
        var reporting = custom
        reporting.reportsMembershipChanges = true
        let expected: [(Capabilities, Set<String>)] = [
            (.wukong, ["profile.save-reads-back", "group.members.remove", "delete.for-everyone", "delete.for-one-user"]),
            (.rongCloud, ["profile.save-reads-back", "group.members.remove", "delete.for-everyone", "delete.for-one-user"]),
            (.nim, ["profile.save-reads-back", "group.members.remove", "delete.for-everyone", "delete.for-one-user"]),
            (custom, ["profile.save-reads-back", "group.members.remove", "delete.for-everyone", "delete.for-one-user"]),
            (reporting, ["profile.save-reads-back", "group.members.remove", "group.members.join-event", "delete.for-everyone", "delete.for-one-user"]),
        ]
        let names: Set<String> = ["profile.save-reads-back", "group.members.remove", "group.members.join-event", "delete.for-everyone",
                                  "delete.for-one-user"]
        for (preset, passing) in expected {
            let suite = ConformanceSuite {
                let world = MemoryWorld(capabilities: preset, clock: TestClock())
                var subject = ConformanceSubject(backend: MemoryBackend(id: "mem", world: world), users: ["alice", "bob", "carol"])
                subject.reportsDeletions = world.reportsDeletions
                subject.reportsMembershipChanges = world.reportsMembershipChanges
                return subject
            }
            let report = await suite.run(only: names)
            #expect(report.failures.isEmpty, "\(report)")
            #expect(Set(report.passed.map(\.check)) == passing, "\(preset.vendor): \(report)")
        }
    }

    @Test func aBackendThatClaimsToDeleteButKeepsTheMessageFails() async throws {
        let suite = ConformanceSuite {
            ConformanceSubject(backend: KeepingBackend(inner: MemoryBackend(id: "mem", capabilities: .rongCloud, clock: TestClock())),
                               users: ["alice", "bob", "carol"])
        }
        let report = await suite.run(only: ["delete.for-everyone", "send.text.history"])
        #expect(report.failures.map(\.check) == ["delete.for-everyone"], "\(report)")
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

/// Says it deletes for everyone, and keeps the message: a deliberately broken backend.
struct KeepingBackend: Deleting {
    let inner: MemoryBackend
    var id: BackendID { inner.id }
    var capabilities: Capabilities { inner.capabilities }
    var deletionScopes: Set<DeletionScope> { [.everyone] }
    func send(_ message: OutgoingMessage) async throws -> Message { try await inner.send(message) }
    func events() -> AsyncStream<IMEvent> { inner.events() }
    func history(_ query: HistoryQuery) async throws -> HistoryPage { try await inner.history(query) }
    func delete(_ message: MessageID, in conversation: ConversationRef, by user: UserID, forUser: UserID?) async throws {}
}
