import Foundation
import IMCore
import IMHTTP
import IMRelay
import IMServer
@_spi(Testing) import IMStore
import IMTesting
import Testing
import IMOutbox
import IMTelemetry

/// `/readyz` and the split between the callbacks' listener and the admin listener, over real loopback
/// sockets and a real SQLite store.
@Suite struct ReadinessTests {
    func get(_ url: String) async throws -> (status: Int, body: JSONValue?) {
        let response = try await HTTPClientWrapper().send(OutboundRequest(method: "GET", url: url))
        return (response.status, try? JSONValue.parse(Data(response.body)))
    }

    /// A target that keeps failing flips `/readyz` to 503 (naming the backend and the reason) only once
    /// it has failed for the threshold without a success; its first success flips it back. `/healthz`
    /// (liveness) stays 200 throughout: the process and the store are fine.
    @Test func readinessFollowsATargetDownPastTheThresholdAndBack() async throws {
        let h = try RelayHarness(rcWrapper: { FlakyBackend($0) })
        let rc = try #require(h.rc as? FlakyBackend)
        rc.failing.withLock { $0[.group(GroupID("g"))] = 1_000_000 }
        let hooked = HookedMemoryBackend(h.wk, secret: "s")
        let engine = RelayEngine(store: h.store, backends: [hooked, h.rc], routes: h.routes, retry: RetryPolicy(baseMs: 5, maxMs: 20))
        let listener = BridgeListener(host: "127.0.0.1", port: 0)
        listener.attach(engine: engine, receivers: ["wk": hooked], readiness: ReadinessPolicy(backendFailingMs: 400))
        try await listener.start()
        await engine.start()

        let before = try await get(listener.baseURL + "/readyz")
        #expect(before.status == 200 && before.body?["status"] == "ready", "\(String(describing: before.body))")

        let posted = try await HTTPClientWrapper().send(.json(listener.callbackURL(for: "wk"),
                                                              Data(#"{"text":"hi","id":"1","sender":"alice","group":"g"}"#.utf8),
                                                              headers: [("X-Secret", "s")]))
        #expect(posted.status == 200)
        // Failing, but not yet for the threshold: still ready.
        #expect(await eventually { engine.health.snapshot["rc"]?.state == "degraded" })
        let early = try await get(listener.baseURL + "/readyz")
        let failingFor = SystemClock().nowMs() - (engine.health.snapshot["rc"]?.failingSinceMs ?? 0)
        if failingFor < 300 {
            #expect(early.status == 200, "a backend failing for \(failingFor) ms (< 400) does not make the bridge unready")
        }

        #expect(await eventually { (try? await get(listener.baseURL + "/readyz"))?.status == 503 })
        let down = try await get(listener.baseURL + "/readyz")
        #expect(down.body?["status"] == "not_ready")
        // On a loaded machine the store's probe may also miss its 0.9 s (`store_stuck`): the backend's reason
        // must be there, and the store is never called unwritable.
        let reasons = down.body?["reasons"]?.arrayValue?.compactMap(\.stringValue) ?? []
        #expect(reasons.contains("backend_failing") && !reasons.contains("store_unwritable"), "\(reasons)")
        #expect(down.body?["failing_backends"] == .array(["rc"]))
        #expect(down.body?["backend_failing_threshold_ms"] == 400)
        #expect(down.body?["backends"]?["rc"]?["last_error_class"] == "rate_limited")
        let live = try await get(listener.baseURL + "/healthz")
        #expect(live.status == 200 && live.body?["status"] == "degraded", "liveness is not readiness")

        rc.failing.withLock { $0[.group(GroupID("g"))] = 0 }
        #expect(await eventually { (try? await get(listener.baseURL + "/readyz"))?.status == 200 })
        #expect(try await get(listener.baseURL + "/readyz").body?["failing_backends"] == .array([]))
        #expect(try await h.history(h.rc, "g").map(\.content) == [.text("hi")])
        await listener.stop()
        await engine.stop()
    }

    /// With an admin listener, the callbacks' port answers no operator endpoint and the admin port no
    /// callback.
    @Test func theAdminListenerTakesTheOperatorsEndpointsOffTheCallbackPort() async throws {
        let h = try RelayHarness()
        let hooked = HookedMemoryBackend(h.wk, secret: "s")
        let engine = RelayEngine(store: h.store, backends: [hooked, h.rc], routes: h.routes)
        let callbacks = BridgeListener(host: "127.0.0.1", port: 0)
        callbacks.attach(engine: engine, receivers: ["wk": hooked], serves: .callbacks)
        let admin = BridgeListener(host: "127.0.0.1", port: 0)
        admin.attach(engine: engine, receivers: ["wk": hooked], serves: .admin)
        try await callbacks.start()
        try await admin.start()
        for path in ["/metrics", "/healthz", "/readyz"] {
            #expect(try await get(callbacks.baseURL + path).status == 404, "\(path) on the callbacks' port")
            // `/readyz` answers 503 when its store probe takes over a second, as on a starved machine:
            // what is checked here is that the admin port serves it.
            #expect(await eventually { (try? await get(admin.baseURL + path))?.status == 200 }, "\(path) on the admin port")
        }
        let body = Data(#"{"text":"hi","id":"1","sender":"alice","group":"g"}"#.utf8)
        let onAdmin = try await HTTPClientWrapper().send(.json(admin.baseURL + "/callbacks/wk", body, headers: [("X-Secret", "s")]))
        #expect(onAdmin.status == 404)
        #expect(try h.store.read { try $0.ledgerCount() } == 0)
        let onCallbacks = try await HTTPClientWrapper().send(.json(callbacks.callbackURL(for: "wk"), body, headers: [("X-Secret", "s")]))
        #expect(onCallbacks.status == 200)
        #expect(try h.store.read { try $0.ledgerCount() } == 1)
        await callbacks.stop()
        await admin.stop()
    }
}
