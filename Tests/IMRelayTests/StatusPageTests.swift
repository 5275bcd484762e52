import Foundation
import IMCore
import IMHTTP
import IMMapping
import IMRelay
import IMServer
import IMStore
import IMTesting
import Testing
import IMOutbox
import IMTelemetry

/// The status page (`/status`, `/` of the admin listener) and its JSON twin `/status.json`, over real
/// loopback sockets and a real SQLite store (docs/status-page.md).
@Suite struct StatusPageTests {
    func get(_ url: String) async throws -> HTTPResponseData {
        try await HTTPClientWrapper().send(OutboundRequest(method: "GET", url: url))
    }

    /// The keys docs/status-page.md documents, at each level.
    static let topKeys: Set<String> = ["generated_at_ms", "started_at_ms", "build", "instance", "leader", "store", "backends", "routes", "lanes",
                                       "dead_letters", "activity", "audit"]
    static let backendKeys: Set<String> = ["name", "adapter", "endpoints", "state", "down", "last_error_class", "last_success_ms", "last_heard_ms",
                                           "last_failure_ms", "failing_since_ms", "pending", "oldest_pending_age_ms"]
    static let storeKeys: Set<String> = ["kind", "location", "up", "pending", "lanes_with_work", "dead_letters", "inbound_dead_letters"]
    static let minuteKeys: Set<String> = ["start_ms", "events_in", "relayed", "retries", "dead_letters", "inbound_dead_letters", "refused"]
    static let outboundKeys: Set<String> = ["id", "target", "conversation", "kind", "source_backend", "source_event_id", "attempts", "reason",
                                            "created_at_ms"]
    static let inboundKeys: Set<String> = ["id", "backend", "key", "format", "reason", "received_at_ms", "retries"]
    static let laneKeys: Set<String> = ["lane", "target", "conversation", "depth", "oldest_age_ms"]

    static let hostileReason = #"<script>alert("out")</script> & refused"#
    static let hostileKey = #"<img src=x onerror=alert(2)>"#

    /// A running bridge (memory backends behind a real listener) with traffic: one message relayed, one
    /// refused for good by the target (an outbound dead letter whose vendor message is hostile HTML), one
    /// conversation whose sends keep failing (the target degraded, a lane waiting), one inbound dead
    /// letter with a hostile key. `/status.json` has every documented key and these values; `/status`
    /// shows them, escaped.
    @Test func statusJSONAndPageShowTheBridgeAfterTraffic() async throws {
        let h = try RelayHarness(rcWrapper: { FlakyBackend($0) })
        let rc = try #require(h.rc as? FlakyBackend)
        rc.permanent.withLock { $0.insert("poison") }
        rc.permanentReason.withLock { $0 = Self.hostileReason }
        rc.failing.withLock { $0[.group(GroupID("slow"))] = 1_000_000 }
        let hooked = HookedMemoryBackend(h.wk, secret: "s")
        let engine = RelayEngine(store: h.store, backends: [hooked, h.rc], routes: h.routes, retry: RetryPolicy(baseMs: 20, maxMs: 200))
        let listener = BridgeListener(host: "127.0.0.1", port: 0)
        let context = StatusContext(backends: ["wk": StatusBackendInfo(adapter: "wukong", endpoints: ["https://admin:hunter2@wk.example.com:5001/api?token=abc"]),
                                               "rc": StatusBackendInfo(adapter: "rongcloud", endpoints: ["https://api.rong.example.com"])],
                                    lanesShown: 5, deadLettersShown: 5)
        listener.attach(engine: engine, receivers: ["wk": hooked], status: context)
        try await listener.start()
        await engine.start()
        defer { Task { await listener.stop(); await engine.stop() } }
        func post(_ text: String, id: String, group: String) async throws {
            let body = Data(#"{"text":"\#(text)","id":"\#(id)","sender":"alice","group":"\#(group)"}"#.utf8)
            let answer = try await HTTPClientWrapper().send(.json(listener.callbackURL(for: "wk"), body, headers: [("X-Secret", "s")]))
            #expect(answer.status == 200)
        }
        try await post("hello", id: "1", group: "g")
        #expect(await eventually { (try? await h.history(h.rc, "g").count) == 1 })
        try await post("poison", id: "2", group: "bad")
        #expect(await eventually { (try? h.store.read { try $0.count(state: .dead) }) == 1 })
        try await post("stuck", id: "3", group: "slow")
        #expect(await eventually { engine.health.snapshot["rc"]?.state == "degraded" })
        _ = try h.store.transaction { try $0.keepInbound(backend: "wk", key: Self.hostileKey, format: "message-json", payload: Data("{}".utf8),
                                                           reason: "invalid_content: <b>amount</b> below 0", at: SystemClock().nowMs()) }

        let response = try await get(listener.baseURL + "/status.json")
        #expect(response.status == 200 && response.header("Content-Type")?.hasPrefix("application/json") == true)
        let json = try #require(try JSONSerialization.jsonObject(with: Data(response.body)) as? [String: Any])
        #expect(Set(json.keys) == Self.topKeys)
        #expect(Set((json["store"] as? [String: Any] ?? [:]).keys) == Self.storeKeys)
        let backends = try #require(json["backends"] as? [[String: Any]])
        #expect(backends.map { $0["name"] as? String } == ["rc", "wk"])
        for backend in backends { #expect(Set(backend.keys) == Self.backendKeys, "null values keep their keys") }
        let minutes = try #require((json["activity"] as? [String: Any])?["minutes"] as? [[String: Any]])
        #expect(minutes.count == 15 && minutes.allSatisfy { Set($0.keys) == Self.minuteKeys })
        let deadLetters = try #require(json["dead_letters"] as? [String: Any])
        #expect(((deadLetters["outbound"] as? [[String: Any]]) ?? []).allSatisfy { Set($0.keys) == Self.outboundKeys })
        #expect(((deadLetters["inbound"] as? [[String: Any]]) ?? []).allSatisfy { Set($0.keys) == Self.inboundKeys })
        #expect(((json["lanes"] as? [String: Any])?["top"] as? [[String: Any]] ?? []).allSatisfy { Set($0.keys) == Self.laneKeys })
        let audit = try #require(json["audit"] as? [String: Any])
        #expect(audit["enabled"] as? Bool == false && audit.keys.contains("last") && audit["last"] is NSNull,
                "audits off by default, `last` present as null: \(audit)")

        let report = try StatusReport.decode(Data(response.body))
        let rcRow = try #require(report.backends.first { $0.name == "rc" })
        #expect(rcRow.state == "degraded" && rcRow.lastErrorClass == "rate_limited" && rcRow.adapter == "rongcloud")
        #expect(rcRow.pending == 1 && rcRow.oldestPendingAgeMs != nil && rcRow.lastSuccessMs != nil && rcRow.failingSinceMs != nil)
        #expect(!rcRow.down, "failing for less than the 60 s default threshold")
        let wkRow = try #require(report.backends.first { $0.name == "wk" })
        // WuKong is only a source here: no call went to it, but its callbacks are its sign of life.
        #expect(wkRow.state == "ok" && wkRow.lastErrorClass == nil && wkRow.pending == 0)
        #expect(wkRow.lastSuccessMs == nil && wkRow.lastHeardMs != nil, "heard from (callbacks), never called")
        #expect(wkRow.endpoints == ["https://wk.example.com:5001/api"], "no user info, no query")
        #expect(report.routes.map { [$0.from, $0.to, $0.direction, $0.media] } == [["wk:group:*", "rc:group:*", "both", "link"]])
        #expect(report.lanes.total == 1 && report.lanes.shownLimit == 5)
        #expect(report.lanes.top.map(\.lane) == ["rc/group:slow"] && report.lanes.top.first?.depth == 1)
        #expect(report.store.up && report.store.kind == "sqlite" && report.store.pending == 1 && report.store.deadLetters == 1)
        let outbound = try #require(report.deadLetters.outbound.first)
        #expect(report.deadLetters.outboundTotal == 1 && outbound.target == "rc" && outbound.conversation == "group:bad")
        #expect(outbound.reason.contains(Self.hostileReason), "the reason as the vendor gave it: \(outbound.reason)")
        #expect(outbound.sourceBackend == "wk" && outbound.sourceEventId == "msg:2" && outbound.kind == "send")
        #expect(report.deadLetters.inboundTotal == 1 && report.deadLetters.inbound.first?.key == Self.hostileKey)
        let window = report.activity.minutes
        #expect(window.reduce(0) { $0 + $1.eventsIn } == 3)
        #expect(window.reduce(0) { $0 + $1.relayed } == 1)
        #expect(window.reduce(0) { $0 + $1.deadLetters } == 1)
        #expect(window.reduce(0) { $0 + $1.retries } >= 1)
        #expect(window.reduce(0) { $0 + $1.relayed } == Int(engine.metrics.total("imbridge_relayed_total")), "the window moves with /metrics")
        #expect(report.build.version == MappingSet.buildVersion.version && report.build.commit == MappingSet.buildVersion.commit)

        let page = try await get(listener.baseURL + "/status")
        #expect(page.status == 200 && page.header("Content-Type") == "text/html; charset=utf-8")
        #expect(page.header("Content-Security-Policy")?.contains("default-src 'none'") == true)
        let html = page.bodyString
        #expect(!html.contains("<script"), "the page has no script, and the hostile reason is escaped")
        #expect(!html.contains("<img") && !html.contains("<b>amount"))
        #expect(html.contains("&lt;script&gt;alert(&quot;out&quot;)&lt;/script&gt; &amp; refused"))
        #expect(html.contains("&lt;img src=x onerror=alert(2)&gt;"))
        #expect(html.contains(#"<p class="meta" id="audit-off">"#), "the audit section says audits are off")
        #expect(html.contains("invalid_content: &lt;b&gt;amount&lt;/b&gt; below 0"))
        #expect(html.contains(#"data-backend="rc" data-state="degraded""#) && html.contains(#"data-backend="wk" data-state="ok""#))
        #expect(html.contains("ago (heard from it)"), "the source-only backend's last sign of life, not `never`")
        #expect(html.contains("<code>rate_limited</code>"))
        #expect(html.contains("<code>group:slow</code>") && html.contains("<code>wk:group:*</code>"))
        #expect(html.contains(#"<meta http-equiv="refresh" content="10">"#))
        #expect(html.contains("https://wk.example.com:5001/api") && !html.contains("hunter2") && !html.contains("token=abc"))
    }

    /// Where the page is served: `/status` wherever the operator's endpoints are, `/` only on a listener
    /// that serves nothing else (admin_listen), never on the callbacks' port.
    @Test func thePageIsAtTheRootOfTheAdminListenerOnly() async throws {
        let h = try RelayHarness()
        let engine = RelayEngine(store: h.store, backends: [h.wk, h.rc], routes: h.routes)
        let combined = BridgeListener(host: "127.0.0.1", port: 0)
        combined.attach(engine: engine, receivers: [:], serves: .all)
        let callbacks = BridgeListener(host: "127.0.0.1", port: 0)
        callbacks.attach(engine: engine, receivers: [:], serves: .callbacks)
        let admin = BridgeListener(host: "127.0.0.1", port: 0)
        admin.attach(engine: engine, receivers: [:], serves: .admin)
        for listener in [combined, callbacks, admin] { try await listener.start() }
        defer { Task { for listener in [combined, callbacks, admin] { await listener.stop() } } }

        #expect(try await get(admin.baseURL + "/").bodyString.contains("<title>IMBridge status</title>"))
        #expect(try await get(admin.baseURL + "/status").status == 200)
        #expect(try await get(admin.baseURL + "/status.json").status == 200)
        #expect(try await get(combined.baseURL + "/status").bodyString.contains("<title>IMBridge status</title>"))
        #expect(try await get(combined.baseURL + "/status.json").status == 200)
        #expect(try await get(combined.baseURL + "/").status == 404, "not at the root of the vendors' address")
        for path in ["/", "/status", "/status.json"] {
            #expect(try await get(callbacks.baseURL + path).status == 404, "\(path) on the callbacks-only listener")
        }
    }

    /// The lane table is bounded: with more lanes than `lanesShown`, the page lists that many, the one
    /// whose oldest entry is oldest first, and the total counts all. Dead letters: the newest first.
    @Test func listsAreBoundedAndOrdered() async throws {
        let h = try RelayHarness()
        let clock = TestClock(startMs: 1_000_000)
        let engine = RelayEngine(store: h.store, backends: [h.wk, h.rc], routes: h.routes, clock: clock)
        try h.store.transaction { tx in
            for n in 0..<30 {
                let lane = LaneKey(backend: "rc", conversation: .group(GroupID("g\(n)")))
                for depth in 0...(n % 3) {
                    _ = try tx.enqueue(lane: lane, sourceBackend: "wk", sourceEventID: EventID("e\(n)-\(depth)"), kind: "send", payload: Data(),
                                       at: 500_000 + Int64(n) * 1000 + Int64(depth))
                }
            }
            for n in 0..<8 {
                let id = try tx.enqueue(lane: LaneKey(backend: "rc", conversation: .group(GroupID("dead"))), sourceBackend: "wk",
                                        sourceEventID: EventID("d\(n)"), kind: "send", payload: Data(), at: 400_000)
                try tx.markDead(id, error: "reason \(n)", at: 400_001)
                _ = try tx.keepInbound(backend: "wk", key: "k\(n)", format: "f", payload: Data(), reason: "in \(n)", at: 400_000 + Int64(n))
            }
        }
        let report = await StatusReport.collect(engine: engine, context: StatusContext(lanesShown: 4, deadLettersShown: 3), readiness: ReadinessPolicy())
        #expect(report.lanes.total == 30 && report.store.pending == 60)
        #expect(report.lanes.top.map(\.conversation) == ["group:g0", "group:g1", "group:g2", "group:g3"])
        #expect(report.lanes.top.map(\.depth) == [1, 2, 3, 1])
        #expect(report.lanes.top.first?.oldestAgeMs == 500_000)
        #expect(report.deadLetters.outbound.map(\.reason) == ["reason 7", "reason 6", "reason 5"])
        #expect(report.deadLetters.inbound.map(\.key) == ["k7", "k6", "k5"])
        #expect(report.deadLetters.outboundTotal == 8 && report.deadLetters.inboundTotal == 8)
        #expect(report.backends.first { $0.name == "rc" }?.pending == 60)
        let html = StatusPage.html(report, refreshSeconds: 5)
        #expect(html.components(separatedBy: #"<tr class="lane">"#).count - 1 == 4)
        #expect(html.contains("30 lane(s) with pending entries; the 4 whose oldest entry is oldest are shown"))
    }

    /// The minute ring: increments land in the clock's current minute, minutes without activity read 0,
    /// and a minute older than the window is gone (the ring is reused, not grown).
    @Test func theActivityRingKeepsTheLastMinutesOnly() {
        let clock = TestClock(startMs: 60_000 * 1000)
        let log = ActivityLog(minutes: 3, clock: clock)
        log.record(.relayed, 2)
        log.record(.retries)
        clock.advance(byMs: 60_000)
        log.record(.relayed)
        #expect(log.recent().map { $0[.relayed] } == [0, 2, 1])
        #expect(log.recent().map { $0[.retries] } == [0, 1, 0])
        #expect(log.recent().map(\.startMs) == [999, 1000, 1001].map { Int64($0) * 60_000 })
        clock.advance(byMs: 2 * 60_000)
        log.record(.deadLetters)
        #expect(log.recent().map { $0[.relayed] } == [1, 0, 0])
        clock.advance(byMs: 10 * 60_000)
        #expect(log.recent().map { $0[.relayed] + $0[.deadLetters] + $0[.retries] } == [0, 0, 0], "nothing from before the window")
        #expect(log.total(.relayed) == 3 && log.total(.retries) == 1 && log.total(.deadLetters) == 1 && log.total(.refused) == 0,
                "the totals keep what the window forgot")

        let metrics = RelayMetrics()
        metrics.activity.use(clock: clock)
        metrics.increment("imbridge_relayed_total", ["target": "rc", "action": "send"], by: 3)
        metrics.increment("imbridge_callbacks_refused_total", ["backend": "wk", "code": "authentication_failed"])
        metrics.increment("imbridge_duplicates_total")
        let last = metrics.activity.recent().last
        #expect(last?[.relayed] == 3 && last?[.refused] == 1 && last?[.eventsIn] == 0)
    }

    @Test func urlsAndReasonsLoseTheirCredentials() {
        #expect(StatusContext.publicURL("https://user:secret@api.example.com:8443/v1/?sig=abc#frag") == "https://api.example.com:8443/v1/")
        #expect(StatusContext.publicURL("http://127.0.0.1:5001") == "http://127.0.0.1:5001")
        #expect(StatusContext.publicURL("not a url") == "(not a URL)")
        #expect(StatusContext.publicReason("POST https://app:key@api.example.com/x failed: 500") == "POST https://***@api.example.com/x failed: 500")
        #expect(StatusContext.publicReason("at postgres://u:pw@db:5432/x and http://a:b@c/") == "at postgres://***@db:5432/x and http://***@c/")
        #expect(StatusContext.publicReason(String(repeating: "x", count: 1000)).count == 401)
    }
}
