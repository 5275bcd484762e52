import IMCore
import IMHTTP
import IMTesting
import JMessage
import Testing

@Suite struct JMessageConformanceTests {
    /// JMessage takes media only as its own uploads, so the media checks' URLs are served from a real host
    /// here: the backend fetches and uploads each, and the check downloads what it stored.
    @Test func backendPassesTheConformanceSuiteAgainstTheSandbox() async throws {
        let mediaHost = HTTPServer { request in
            HTTPResponseData(status: 200, body: ConformanceMedia.bytes(String(request.normalizedPath.dropFirst())))
        }
        try await mediaHost.start()
        let running = Running()
        let suite = ConformanceSuite {
            let registry = ContentRegistry()
            let (sandbox, backend, group) = try await running.make(registry: registry)
            var subject = ConformanceSubject(backend: backend, users: ["alice", "bobby", "carol"], group: group,
                                             advanceClock: { sandbox.clock.advance(byMs: $0) }, registry: registry)
            subject.mediaBaseURL = mediaHost.baseURL + "/"
            return subject
        }
        let report = await suite.run()
        await running.stopAll()
        await mediaHost.stop()
        #expect(report.failures.isEmpty, "\(report)")
        #expect(report.passed.count >= 19, "\(report)")
    }
}
