import Foundation
import IMAdapterKit
import IMCore
import IMHTTP
import IMSandbox
import IMTesting
import Synchronization
import Testing
@testable import WuKong
import WuKongSandbox

/// A `WuKongBackend` wired to a fresh sandbox over loopback: the sandbox's webhook posts to a small
/// HTTP receiver that hands each request to `backend.handle` with a `CollectingSink`, so sandbox
/// callbacks reach `events()` exactly as they would in the bridge.
final class WuKongRig: Sendable {
    let sandbox: SandboxServer
    let receiver: HTTPServer
    let backend: WuKongBackend
    let registry: ContentRegistry

    private init(sandbox: SandboxServer, receiver: HTTPServer, backend: WuKongBackend, registry: ContentRegistry) {
        self.sandbox = sandbox
        self.receiver = receiver
        self.backend = backend
        self.registry = registry
    }

    static func start(secret: String = "hook-secret", managerToken: String = "mgr") async throws -> WuKongRig {
        final class Slot: Sendable { let backend = Mutex<WuKongBackend?>(nil) }
        let slot = Slot()
        let sink = CollectingSink()
        let receiver = HTTPServer { request in
            guard let backend = slot.backend.withLock({ $0 }) else { return .text("not ready", status: 503) }
            return await backend.handle(request, sink: sink)
        }
        try await receiver.start()
        let clock = SandboxClock()
        // The secret travels in the query, as a WuKongIM `webhook.httpAddr` would carry it.
        let vendor = try WuKongSandbox(configuration: .init(managerToken: managerToken, callbackURL: receiver.baseURL + "/wukong?secret=\(secret)",
                                                        notifyIntervalMs: 10, retryBaseMs: 20), clock: clock)
        let sandbox = SandboxServer(vendor: vendor, clock: clock)
        try await sandbox.start()
        let registry = ContentRegistry()
        let backend = WuKongBackend(id: "wk", settings: .at(sandbox.baseURL, managerToken: managerToken, webhookSecret: secret),
                                    registry: registry)
        slot.backend.withLock { $0 = backend }
        return WuKongRig(sandbox: sandbox, receiver: receiver, backend: backend, registry: registry)
    }

    func stop() async {
        await sandbox.stop()
        await receiver.stop()
    }
}

@Suite(.serialized) struct WuKongConformanceTests {
    @Test func conformanceSuitePasses() async throws {
        let rigs = Mutex<[WuKongRig]>([])
        let suite = ConformanceSuite {
            let rig = try await WuKongRig.start()
            rigs.withLock { $0.append(rig) }
            let users: [UserID] = ["alice", "bob", "carol"]
            for user in users { try await rig.backend.ensureUser(UserProfile(id: user)) }
            try await rig.backend.ensureGroup("g1", members: users)
            return ConformanceSubject(backend: rig.backend, users: users, group: "g1", registry: rig.registry, eventTimeout: 5)
        }
        let report = await suite.run()
        for rig in rigs.withLock({ $0 }) { await rig.stop() }
        print(report)
        #expect(report.failures.isEmpty, "\(report)")
        #expect(report.passed.count >= 15)
    }
}
