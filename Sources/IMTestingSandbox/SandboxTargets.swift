import Foundation
import IMAdapterKit
import IMCore
import IMMapping
import IMSandbox
import IMTesting
import IMVendors

/// The second kind of `TestBackendTarget`: the vendor's real adapter talking over loopback HTTP to that
/// vendor's sandbox, started in this process for one test (docs/testing-kit.md, "One test, two backends").
/// This module needs IMBridge's `Server` trait (the adapters and sandboxes use its remote packages); an
/// app that tests in memory only depends on `IMTesting` alone.
extension TestBackendTarget {
    /// The adapter of `vendor` (`wukong`, `rongcloud`, `nim`, `jmessage`) against a fresh in-process sandbox.
    public static func sandbox(_ vendor: String) -> TestBackendTarget {
        TestBackendTarget(kind: .sandbox, vendor: vendor) { registry in
            try await SandboxSession.start(vendor, registry: registry ?? ContentRegistry())
        }
    }

    /// One sandbox target per vendor.
    public static func sandboxes(_ vendors: [String]) -> [TestBackendTarget] { vendors.map(sandbox) }

    /// For each vendor, its memory preset and its sandbox: the same test on both.
    public static func memoryAndSandbox(_ vendors: [String]) -> [TestBackendTarget] {
        vendors.flatMap { name -> [TestBackendTarget] in
            guard let preset = Vendors.named(name)?.adapter.capabilities else { return [sandbox(name)] }
            return [memory(preset), sandbox(name)]
        }
    }
}

enum SandboxSession {
    static let appKey = "testing-kit-app-key"
    static let appSecret = "testing-kit-app-secret"
    static let webhookSecret = "testing-kit-webhook-secret"

    static func start(_ name: String, registry: ContentRegistry) async throws -> TestBackendSession {
        guard let vendor = Vendors.named(name) else {
            throw IMError(.invalidArgument, "no sandbox for vendor '\(name)' (known: \(Vendors.names.joined(separator: ", ")))")
        }
        func endpoint(_ baseURL: String) -> SandboxDescriptor.Endpoint {
            SandboxDescriptor.Endpoint(baseURL: baseURL, appKey: appKey, appSecret: appSecret, webhookSecret: webhookSecret)
        }
        // No callback URL: the test reads through the adapter's calls, not the vendor's callbacks.
        let options = SandboxOptions(host: "127.0.0.1", port: 0, appKey: appKey, appSecret: appSecret, callbackURL: nil,
                                     extra: vendor.sandbox.labOptions(endpoint(""), true))
        let server = try await vendor.sandbox.make(options)
        try await server.start()
        let backend: any IMBackend
        do {
            backend = try await vendor.adapter.makeBackend(
                id: BackendID(name), settings: vendor.sandbox.adapterSettings(endpoint(server.baseURL)),
                context: AdapterContext(registry: registry, mapping: MappingSet.shipped.table(vendor.name)))
        } catch {
            await server.stop()
            throw error
        }
        return TestBackendSession(
            backend: backend, kind: .sandbox,
            inject: { fault, operation, count in server.faults.add(try rule(fault, operation, count, vendor: vendor.name)) },
            advance: { server.clock.advance(byMs: $0) },
            close: { await server.stop() })
    }

    /// The sandbox rule of a memory fault: a rate limit is HTTP 429 (with `retry_after` rounded up to whole
    /// seconds), a server error HTTP 500, each answered by the sandbox in the vendor's envelope with its
    /// code; `afterAccepting` is `after_accept`. A timeout would need a latency over the adapter's HTTP
    /// timeout on every request: refused.
    static func rule(_ fault: MemoryFault, _ operation: MemoryOperation, _ count: Int, vendor: String) throws -> FaultInjector.Rule {
        guard let paths = endpoints[vendor]?[operation], let first = paths.first else {
            throw IMError(.unsupported, "the \(vendor) sandbox run maps no endpoint for \(operation) faults (mapped: "
                          + (endpoints[vendor]?.keys.map(\.rawValue).sorted().joined(separator: ", ") ?? "none") + ")")
        }
        let status: Int
        switch fault.kind {
        case .rateLimited: status = 429
        case .serverError: status = 500
        case .timeout:
            throw IMError(.unsupported, "a \(fault) fault is injected in memory only: a sandbox would need a latency over the adapter's timeout")
        }
        return FaultInjector.Rule(status: status, count: count, pathPrefix: first, afterAccept: fault.afterAccept,
                                  retryAfter: fault.retryAfterMs.map { Int(($0 + 999) / 1000) }, otherPathPrefixes: Array(paths.dropFirst()))
    }

    /// The endpoints each adapter calls for an operation (docs/adapters/<vendor>.md).
    static let endpoints: [String: [MemoryOperation: [String]]] = [
        "wukong": [.send: ["/message/send"], .history: ["/channel/messagesync"]],
        "rongcloud": [.send: ["/message/private/publish.json", "/message/group/publish.json"],
                      .history: ["/v3/message/private/query.json", "/v3/message/group/query.json"],
                      .recall: ["/message/recall.json"], .expansion: ["/message/expansion/"]],
        "nim": [.send: ["/msg/sendMsg.action"], .recall: ["/msg/recall.action"],
                .history: ["/history/querySessionMsg.action", "/history/queryTeamMsg.action"]],
        // A retract (`/v1/messages/{user}/{id}/retract`) also starts with the send's path.
        "jmessage": [.send: ["/v1/messages"], .history: ["/v2/users/", "/v2/groups/"]],
    ]
}
