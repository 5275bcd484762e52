import IMCore
import IMTesting
import JMessage
import Testing

@Suite struct JMessageConformanceTests {
    @Test func backendPassesTheConformanceSuiteAgainstTheSandbox() async throws {
        let running = Running()
        let suite = ConformanceSuite {
            let registry = ContentRegistry()
            let (sandbox, backend, group) = try await running.make(registry: registry)
            return ConformanceSubject(backend: backend, users: ["alice", "bobby", "carol"], group: group,
                                      advanceClock: { sandbox.clock.advance(byMs: $0) }, registry: registry)
        }
        let report = await suite.run()
        await running.stopAll()
        #expect(report.failures.isEmpty, "\(report)")
        #expect(report.passed.count >= 19, "\(report)")
    }
}
