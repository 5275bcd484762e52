import Foundation
import IMCore
import IMHTTP
import IMRelay
import IMServer
import IMStore
import IMTesting
import Testing
import IMOutbox

/// The status page's search box and its endpoint `/trace` (docs/status-page.md, "Where is my message"):
/// the same hops as `imbridge trace`, as JSON and as a page, over a real listener and SQLite store.
@Suite struct TraceEndpointTests {
    func get(_ url: String) async throws -> HTTPResponseData {
        try await HTTPClientWrapper().send(OutboundRequest(method: "GET", url: url))
    }

    @Test func traceAnswersOneMessageAsJSONAndAsAPage() async throws {
        let h = try RelayHarness(rcWrapper: { FlakyBackend($0) })
        let rc = try #require(h.rc as? FlakyBackend)
        rc.permanent.withLock { $0.insert("poison") }
        rc.permanentReason.withLock { $0 = #"<b>refused</b> by https://admin:hunter2@rc.example.com"# }
        rc.failing.withLock { $0[.group(GroupID("slow"))] = 1_000_000 }
        let hooked = HookedMemoryBackend(h.wk, secret: "s")
        let engine = RelayEngine(store: h.store, backends: [hooked, h.rc], routes: h.routes, retry: RetryPolicy(baseMs: 20, maxMs: 200))
        let listener = BridgeListener(host: "127.0.0.1", port: 0)
        listener.attach(engine: engine, receivers: ["wk": hooked], status: StatusContext())
        try await listener.start()
        await engine.start()
        defer { Task { await listener.stop(); await engine.stop() } }
        func post(_ text: String, id: String, group: String = "g") async throws {
            let body = Data(#"{"text":"\#(text)","id":"\#(id)","sender":"alice","group":"\#(group)"}"#.utf8)
            #expect(try await HTTPClientWrapper().send(.json(listener.callbackURL(for: "wk"), body, headers: [("X-Secret", "s")])).status == 200)
        }
        try await post("hello", id: "m1")
        try await post("poison", id: "m2")
        #expect(await eventually { (try? h.store.read { try $0.count(state: .dead) }) == 1 })
        #expect(await eventually { (try? h.store.read { try $0.count(state: .pending) }) == 0 })
        try await post("stuck", id: "m3", group: "slow")
        #expect(await eventually { engine.metrics.total("imbridge_retries_total") >= 2 })

        func trace(_ query: String) async throws -> [String: Any] {
            let response = try await get(listener.baseURL + "/trace?" + query)
            #expect(response.status == 200 && response.header("Content-Type") == "application/json")
            let json = try #require(try JSONSerialization.jsonObject(with: Data(response.body)) as? [String: Any])
            return try #require((json["messages"] as? [[String: Any]])?.first)
        }
        let delivered = try await trace("id=m1")
        #expect(delivered["status"] as? String == "delivered" && delivered["source_backend"] as? String == "wk")
        let hops = (delivered["hops"] as? [[String: Any]] ?? []).compactMap { $0["hop"] as? String }
        #expect(hops.starts(with: ["received", "recorded", "planned"]) && hops.contains("delivered"), "\(hops)")
        // Received by a callback to this listener (spans off: the store keeps it all the same), by this engine.
        let received = (delivered["hops"] as? [[String: Any]] ?? []).first { $0["hop"] as? String == "received" }
        #expect(received?["listener"] as? String == listener.baseURL && (received?["instance"] as? String).map { !$0.isEmpty && $0 != "unknown" } == true,
                "\(delivered)")
        // A message whose sends keep failing: its failed attempts, and held in its lane until the next one.
        let stuck = try await trace("id=m3")
        let stuckHops = stuck["hops"] as? [[String: Any]] ?? []
        #expect(stuck["status"] as? String == "pending", "\(stuck)")
        let retries = stuckHops.filter { $0["hop"] as? String == "attempt" }
        #expect(retries.count >= 2 && retries.allSatisfy { $0["outcome"] as? String == "retry" && $0["error_class"] as? String == "rate_limited" })
        #expect(retries.compactMap { $0["attempt"] as? Int }.starts(with: [1, 2]), "attempts numbered in order: \(retries)")
        let held = try #require(stuckHops.last)
        #expect(held["hop"] as? String == "held" && held["lane"] as? String == "rc/group:slow" && held["at"] == nil)
        let dead = try await trace("id=m2")
        #expect(dead["status"] as? String == "dead_lettered")
        let reason = (dead["hops"] as? [[String: Any]] ?? []).first { $0["hop"] as? String == "dead_lettered" }?["reason"] as? String
        #expect(reason?.contains("<b>refused</b>") == true && reason?.contains("hunter2") == false, "credentials redacted: \(reason ?? "")")

        // The page the search box leads to: the same hops, escaped, and the box again.
        let page = try await get(listener.baseURL + "/trace?id=m2&format=html")
        #expect(page.status == 200 && page.header("Content-Type") == "text/html; charset=utf-8")
        #expect(page.header("Content-Security-Policy")?.contains("form-action 'self'") == true)
        #expect(page.bodyString.contains("m2 on wk: dead_lettered") && page.bodyString.contains("&lt;b&gt;refused&lt;/b&gt;"))
        #expect(!page.bodyString.contains("<b>refused") && !page.bodyString.contains("hunter2"))
        #expect(page.bodyString.contains(#"id="trace-search""#))
        #expect(try await get(listener.baseURL + "/trace").status == 400, "no id: refused")
        #expect(try await get(listener.baseURL + "/trace?id=nothing-here").status == 200)

        // The status page carries the search box.
        let status = try await get(listener.baseURL + "/status")
        #expect(status.bodyString.contains(#"<form method="get" action="trace" id="trace-search">"#))
    }

    /// A ledger row written before the store kept who took the event in shows `unknown`; one catch-up
    /// recorded says so, with its instance.
    @Test func receivedHopNamesHowTheEventCameOrUnknown() throws {
        let h = try RelayHarness()
        try h.store.transaction { tx in
            _ = try tx.recordEvent("wk", "msg:old1", kind: "message", at: 100)
            _ = try tx.recordEvent("wk", "msg:cu1", kind: "message", at: 200, origin: EventOrigin(listener: EventOrigin.catchUp, instance: "i-1"))
        }
        func received(_ id: String) throws -> MessageTrace.Hop? {
            try h.store.read { try MessageTracer(routes: []).trace(id, $0) }.hops.first { $0.hop == "received" }
        }
        let old = try #require(try received("old1"))
        #expect(old.listener == "unknown" && old.instance == "unknown" && old.note?.contains("before the store kept") == true)
        let caughtUp = try #require(try received("cu1"))
        #expect(caughtUp.listener == "catch-up" && caughtUp.instance == "i-1" && caughtUp.note?.contains("catch-up") == true)
        #expect(MessageTrace.text([try h.store.read { try MessageTracer(routes: []).trace("cu1", $0) }]).contains("listener=catch-up instance=i-1"))
    }
}
