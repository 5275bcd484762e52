import Foundation
import IMCore
import IMHTTP
import IMMapping
@testable import IMRelay
import IMServer
import IMStore
import Testing
@testable import IMOutbox
@testable import IMTelemetry

@Suite struct MetricsTests {
    static let repo = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    /// A running bridge (real listener, real SQLite store): `/metrics` parses strictly before and after
    /// traffic, every family has HELP, the build is named, counters exist at zero from the start, and the
    /// outbox gauges show what the store holds — with no conversation in any label.
    @Test func scrapeOfARunningBridgeParsesStrictlyWithHelpBuildInfoAndStoreGauges() async throws {
        let h = try RelayHarness(rcWrapper: { FlakyBackend($0) })
        let flaky = try #require(h.rc as? FlakyBackend)
        let hooked = HookedMemoryBackend(h.wk, secret: "s")
        let engine = RelayEngine(store: h.store, backends: [hooked, h.rc], routes: h.routes, retry: RetryPolicy(baseMs: 5, maxMs: 50))
        let listener = BridgeListener(engine: engine, receivers: ["wk": hooked], host: "127.0.0.1", port: 0)
        try await listener.start()
        let http = HTTPClientWrapper()
        func scrape() async throws -> PrometheusExposition {
            let response = try await http.send(OutboundRequest(method: "GET", url: listener.baseURL + "/metrics"))
            #expect(response.status == 200)
            #expect(response.header("content-type")?.hasPrefix("text/plain; version=0.0.4") == true)
            return try PrometheusExposition.parse(response.bodyString)
        }
        func post(_ id: String, _ text: String, group: String) async throws {
            let body = #"{"text":"\#(text)","id":"\#(id)","sender":"alice","group":"\#(group)"}"#
            let answer = try await http.send(.json(listener.callbackURL(for: "wk"), Data(body.utf8), headers: [("X-Secret", "s")]))
            #expect(answer.status == 200)
        }

        let first = try await scrape()
        for family in first.families.values {
            #expect(family.help?.isEmpty == false, "\(family.name) has no # HELP")
            #expect(family.type != nil, "\(family.name) has no # TYPE")
        }
        let build = MappingSet.buildVersion
        #expect(first.value("imbridge_build_info", ["version": build.version, "commit": build.commit]) == 1)
        #expect(first.value("imbridge_retries_total", ["target": "rc"]) == 0, "a configured target's counters exist from the start")
        #expect(first.value("imbridge_dead_letters_total", ["target": "rc"]) == 0)
        #expect(first.value("imbridge_relayed_total", ["target": "rc", "action": "send"]) == 0)
        #expect(first.value("imbridge_events_in_total", ["backend": "wk", "kind": "message"]) == 0)
        #expect(first.value("imbridge_callbacks_refused_total", ["backend": "wk", "code": "authentication_failed"]) == 0)
        #expect(first.value("imbridge_outbox_pending", ["target": "rc"]) == 0)
        #expect(first.value("imbridge_outbox_dead_letters") == 0)
        #expect(first.value("imbridge_store_up") == 1)
        #expect(first.value("imbridge_relay_latency_seconds_count") == 0)
        #if os(Linux)
        // The standard process families, read from /proc: plausible for this very process.
        #expect((first.value("process_resident_memory_bytes") ?? 0) > 1_000_000)
        #expect((first.value("process_virtual_memory_bytes") ?? 0) >= (first.value("process_resident_memory_bytes") ?? .infinity))
        #expect((first.value("process_open_fds") ?? 0) >= 3)
        #expect((first.value("process_max_fds") ?? 0) >= (first.value("process_open_fds") ?? .infinity))
        #expect((first.value("process_cpu_seconds_total") ?? 0) > 0)
        let startedAt = first.value("process_start_time_seconds") ?? 0
        #expect(startedAt <= Date().timeIntervalSince1970 + 2 && startedAt > Date().timeIntervalSince1970 - 86_400 * 7,
                "the test process started within the last week: \(startedAt)")
        #expect(first.families["process_cpu_seconds_total"]?.type == "counter")
        #endif

        // One relayed, one refused for good (dead letter), three held by a target that keeps answering 429.
        flaky.permanent.withLock { $0.insert("doomed") }
        flaky.failing.withLock { $0[.group(GroupID("slow"))] = 1_000_000; $0[.group(GroupID("slow2"))] = 1_000_000 }
        await engine.start()
        try await post("1", "hello", group: "g")
        try await post("2", "doomed", group: "g")
        #expect(try await eventually { try h.store.read { try $0.count(state: .dead) } == 1 && engine.metrics.value("imbridge_relayed_total", ["target": "rc", "action": "send"]) == 1 })
        try await post("3", "a", group: "slow")
        try await post("4", "b", group: "slow")
        try await post("5", "c", group: "slow2")
        #expect(await eventually { engine.metrics.value("imbridge_retries_total", ["target": "rc"]) >= 2 })
        try await Task.sleep(nanoseconds: 20_000_000)

        let after = try await scrape()
        for family in after.families.values { #expect(family.help?.isEmpty == false, "\(family.name) has no # HELP") }
        #expect(after.value("imbridge_outbox_pending", ["target": "rc"]) == 3)
        // The store's own counters: every callback above was at least one transaction of statements.
        let statements = (after.value("imbridge_store_statements_total") ?? 0, first.value("imbridge_store_statements_total") ?? 0)
        let transactions = (after.value("imbridge_store_transactions_total") ?? 0, first.value("imbridge_store_transactions_total") ?? 0)
        #expect(transactions.0 - transactions.1 >= 5, "five callbacks recorded, each in a write transaction")
        #expect(statements.0 - statements.1 >= transactions.0 - transactions.1, "a transaction is at least one statement")
        #expect(after.value("imbridge_outbox_lanes_with_work", ["target": "rc"]) == 2)
        #expect((after.value("imbridge_outbox_oldest_pending_age_seconds", ["target": "rc"]) ?? 0) > 0)
        #expect(after.value("imbridge_outbox_dead_letters") == 1)
        #expect(after.value("imbridge_dead_letters_total", ["target": "rc"]) == 1)
        #expect(after.value("imbridge_relayed_total", ["target": "rc", "action": "send"]) == 1)
        #expect(after.value("imbridge_events_in_total", ["backend": "wk", "kind": "message"]) == 5)
        #expect(after.value("imbridge_relay_latency_seconds_count") == 1)
        #expect((after.value("imbridge_retries_total", ["target": "rc"]) ?? 0) >= 2)
        #expect(after.families["imbridge_lane_depth"] == nil)
        #if os(Linux)
        #expect((after.value("process_cpu_seconds_total") ?? 0) >= (first.value("process_cpu_seconds_total") ?? .infinity), "a counter never goes down")
        #endif
        let labels = after.families.values.flatMap(\.samples).flatMap(\.labels)
        #expect(!labels.contains { ["lane", "conversation"].contains($0.key) || $0.value.contains("slow") },
                "no label names a conversation")
        await listener.stop()
        await engine.stop()
    }

    /// A label value with a double quote, a backslash and a line feed is escaped so that a strict parser
    /// reads back the same value (and the series stays on one line).
    @Test func labelValuesAreEscapedPerTheTextFormat() throws {
        let metrics = RelayMetrics()
        let nasty = "say \"hi\" \\ back\nslash"
        metrics.increment("imbridge_fallbacks_total", ["feature": nasty, "policy": "notice"], by: 2)
        let text = metrics.exposition()
        #expect(text.contains(#"feature="say \"hi\" \\ back\nslash""#))
        let parsed = try PrometheusExposition.parse(text)
        #expect(parsed.value("imbridge_fallbacks_total", ["feature": nasty, "policy": "notice"]) == 2)
        #expect(metrics.value("imbridge_fallbacks_total", ["feature": nasty, "policy": "notice"]) == 2)
    }

    /// `/proc/self/stat` with a command name holding spaces and a parenthesis: fields are counted after
    /// the last `)`.
    @Test func processStatsParseProcFields() throws {
        // pid (comm) state ppid pgrp session tty tpgid flags minflt cminflt majflt cmajflt utime stime … starttime vsize rss
        let stat = "4242 (imb ridge) x) S 1 4242 4242 0 -1 4194560 900 0 0 0 250 50 0 0 20 0 12 0 3000 104857600 2560 18446744073709551615\n"
        let limits = "Limit                     Soft Limit           Hard Limit           Units\nMax open files            1024                 524288               files\n"
        let stats = try #require(ProcessStats.parse(stat: stat, ticksPerSecond: 100, pageSize: 4096, openFDs: 9, limits: limits,
                                                     bootTime: ProcessStats.bootTime(procStat: "cpu  1 2 3\nbtime 1700000000\nprocesses 5\n")))
        #expect(stats == ProcessStats(cpuSeconds: 3, residentBytes: 2560 * 4096, virtualBytes: 104_857_600, openFDs: 9, maxFDs: 1024,
                                      startTimeSeconds: 1_700_000_030))
        #expect(ProcessStats.parse(stat: "garbage", ticksPerSecond: 100, pageSize: 4096, openFDs: 0, limits: nil, bootTime: nil) == nil)
        #expect(ProcessStats.maxOpenFiles(limits: "Max open files            unlimited            unlimited            files") == nil)
    }

    /// Each bridge has its own registry: two in one process count apart (no global bootstrap).
    @Test func twoBridgesInOneProcessCountApart() throws {
        let one = RelayMetrics(), two = RelayMetrics()
        one.increment("imbridge_retries_total", ["target": "rc"], by: 3)
        #expect(one.value("imbridge_retries_total", ["target": "rc"]) == 3)
        #expect(two.value("imbridge_retries_total", ["target": "rc"]) == 0)
        #expect(one.total("imbridge_retries_total") == 3)
        one.observeLatency(seconds: 0.02)
        let parsed = try PrometheusExposition.parse(one.exposition())
        #expect(parsed.value("imbridge_relay_latency_seconds_bucket", ["le": "0.01"]) == 0)
        #expect(parsed.value("imbridge_relay_latency_seconds_bucket", ["le": "0.025"]) == 1)
        #expect(try PrometheusExposition.parse(two.exposition()).value("imbridge_relay_latency_seconds_count") == 0)
    }

    /// Every family name the sources record is declared (so it gets its HELP), and every declared family
    /// is listed in docs/architecture.md.
    @Test func everyRecordedFamilyIsDeclaredAndDocumented() throws {
        let pattern = try NSRegularExpression(pattern: #"(?:increment|gauge)\("(imbridge_[a-z0-9_]+)""#)
        var used: Set<String> = []
        for dir in ["Sources", "adapters"] {
            let files = FileManager.default.enumerator(at: Self.repo.appendingPathComponent(dir), includingPropertiesForKeys: nil)
            while let file = files?.nextObject() as? URL {
                guard file.pathExtension == "swift", let text = try? String(contentsOf: file, encoding: .utf8) else { continue }
                for match in pattern.matches(in: text, range: NSRange(text.startIndex..., in: text)) {
                    used.insert(String(text[Range(match.range(at: 1), in: text)!]))
                }
            }
        }
        #expect(used.count >= 10, "the scan found the engine's counters")
        let declared = Set(RelayMetrics.families.keys)
        #expect(used.subtracting(declared).isEmpty, "recorded but not declared: \(used.subtracting(declared).sorted())")
        let architecture = try String(contentsOf: Self.repo.appendingPathComponent("docs/architecture.md"), encoding: .utf8)
        let undocumented = declared.filter { !architecture.contains("`\($0)") }
        #expect(undocumented.isEmpty, "not in docs/architecture.md: \(undocumented.sorted())")
    }

    /// The parser is strict: each of these breaks a rule of the text format and is refused.
    @Test func theParserRefusesMalformedExpositions() throws {
        let good = """
        # HELP a_total A counter.
        # TYPE a_total counter
        a_total{x="1"} 2
        # HELP h A histogram.
        # TYPE h histogram
        h_bucket{le="0.5"} 1
        h_bucket{le="+Inf"} 2
        h_sum 0.7
        h_count 2

        """
        #expect(try PrometheusExposition.parse(good).value("h_count") == 2)
        let bad: [String: String] = [
            "no TYPE": "a_total 1\n",
            "duplicate series": "# TYPE a counter\na{x=\"1\"} 1\na{x=\"1\"} 2\n",
            "TYPE after samples": "# TYPE a gauge\na 1\n# HELP a late\n",
            "bad escape": "# TYPE a gauge\na{x=\"\\t\"} 1\n",
            "unquoted label": "# TYPE a gauge\na{x=1} 1\n",
            "bad metric name": "# TYPE 1a gauge\n1a 1\n",
            "split group": "# TYPE a gauge\n# TYPE b gauge\na 1\nb 1\na{x=\"2\"} 1\n",
            "count differs from +Inf": "# TYPE h histogram\nh_bucket{le=\"+Inf\"} 2\nh_sum 1\nh_count 3\n",
            "no +Inf bucket": "# TYPE h histogram\nh_bucket{le=\"1\"} 2\nh_sum 1\nh_count 2\n",
            "buckets not cumulative": "# TYPE h histogram\nh_bucket{le=\"1\"} 2\nh_bucket{le=\"+Inf\"} 1\nh_sum 1\nh_count 1\n",
            "negative counter": "# TYPE a counter\na -1\n",
            "no final line feed": "# TYPE a gauge\na 1",
            "value not a number": "# TYPE a gauge\na one\n",
        ]
        for (rule, text) in bad {
            #expect(throws: PrometheusExposition.ParseError.self, "\(rule)") { try PrometheusExposition.parse(text) }
        }
    }
}
