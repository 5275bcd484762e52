import Foundation
import IMCore
import IMHTTP
import IMSandbox
import IMTesting
import Synchronization
import Testing
@testable import WuKong

/// A `WuKongBackend` wired to a fresh sandbox over loopback: the sandbox's webhook posts to a small
/// HTTP receiver that hands each request to `backend.webhookResponse`, so sandbox callbacks reach
/// `events()` exactly as they would in the bridge.
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
        let receiver = HTTPServer { request in
            guard let backend = slot.backend.withLock({ $0 }) else { return .text("not ready", status: 503) }
            return await backend.webhookResponse(to: request)
        }
        try await receiver.start()
        let clock = SandboxClock()
        // The secret travels in the query, as a WuKongIM `webhook.httpAddr` would carry it.
        let vendor = try WuKongSandbox(configuration: .init(managerToken: managerToken, callbackURL: receiver.baseURL + "/wukong?secret=\(secret)",
                                                        notifyIntervalMs: 10, retryBaseMs: 20), clock: clock)
        let sandbox = SandboxServer(vendor: vendor, clock: clock)
        try await sandbox.start()
        let registry = ContentRegistry()
        let backend = WuKongBackend(configuration: .init(id: "wk", imURL: sandbox.baseURL, managerToken: managerToken, webhookSecret: secret),
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

@Suite struct WuKongClientIDLookupTests {
    @Test func findsAMessageByItsClientIDAndNothingElse() async throws {
        let harness = try await WuKongRig.start()
        defer { Task { await harness.stop() } }
        let group = ConversationRef.group("lookup")
        let sent = try await harness.backend.send(OutgoingMessage(conversation: group, sender: "alice", content: .text("once"),
                                                                  clientMessageID: "imb-42"))
        let found = try await harness.backend.message(withClientID: "imb-42", in: group)
        #expect(found?.id == sent.id && found?.content == .text("once"))
        #expect(try await harness.backend.message(withClientID: "imb-43", in: group) == nil)
        let direct = ConversationRef.direct("alice", "bob")
        let dm = try await harness.backend.send(OutgoingMessage(conversation: direct, sender: "bob", content: .text("dm"), clientMessageID: "imb-44"))
        #expect(try await harness.backend.message(withClientID: "imb-44", in: direct)?.id == dm.id)
    }
}
