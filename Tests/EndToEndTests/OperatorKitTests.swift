import BridgeTestSupport
import Foundation
import IMCore
import IMHTTP
import IMLab
import PostgresTestSupport
import SandboxTestSupport
import Testing

/// The operator's kit in deploy/: the Prometheus alert rules pass `promtool check rules`, and every
/// metric the rules and the Grafana dashboard name is one a running bridge exports at `/metrics`
/// (docs/operations.md, "Alerts worth setting").
@Suite struct OperatorKitTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    static let rulesPath = root.appendingPathComponent("deploy/prometheus/imbridge-alerts.yml").path
    static let dashboardPath = root.appendingPathComponent("deploy/grafana/imbridge-dashboard.json").path
    static let promtool = ["/usr/bin/promtool", "/usr/local/bin/promtool", "/bin/promtool"].first { FileManager.default.isExecutableFile(atPath: $0) }

    /// The metric names in a PromQL text (the bridge's own families and the standard process ones).
    static func metricNames(in text: String) -> Set<String> {
        let pattern = try! NSRegularExpression(pattern: #"\b(?:imbridge|process)_[a-z0-9_]+"#)
        let range = NSRange(text.startIndex..., in: text)
        return Set(pattern.matches(in: text, range: range).compactMap { Range($0.range, in: text).map { String(text[$0]) } })
    }

    /// Every `expr` of the rules file (one line each).
    static func ruleExpressions() throws -> [String] {
        try String(contentsOfFile: rulesPath, encoding: .utf8).split(separator: "\n")
            .map { $0.trimmingCharacters(in: .whitespaces) }.filter { $0.hasPrefix("expr:") }.map { String($0.dropFirst(5)) }
    }

    /// Every query of the dashboard: each panel's targets and the template variables.
    static func dashboardQueries() throws -> [String] {
        let json = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: dashboardPath))) as? [String: Any])
        let panels = try #require(json["panels"] as? [[String: Any]])
        var queries = panels.flatMap { ($0["targets"] as? [[String: Any]] ?? []).compactMap { $0["expr"] as? String } }
        #expect(panels.allSatisfy { !($0["targets"] as? [[String: Any]] ?? []).isEmpty }, "every panel queries something")
        let variables = (json["templating"] as? [String: Any])?["list"] as? [[String: Any]] ?? []
        queries += variables.compactMap { $0["definition"] as? String }
        return queries
    }

    /// The metric names of a `/metrics` exposition (its samples, histogram series included).
    static func exported(_ exposition: String) -> Set<String> {
        Set(exposition.split(separator: "\n").filter { !$0.hasPrefix("#") }.compactMap { line in
            line.split(whereSeparator: { $0 == "{" || $0 == " " }).first.map(String.init)
        })
    }

    @Test func everyMetricTheRulesAndTheDashboardNameIsExportedByARunningBridge() async throws {
        let rules = try Self.ruleExpressions(), queries = try Self.dashboardQueries()
        #expect(rules.count >= 10 && queries.count >= 15)
        let named = rules.reduce(into: Set<String>()) { $0.formUnion(Self.metricNames(in: $1)) }
            .union(queries.reduce(into: Set<String>()) { $0.formUnion(Self.metricNames(in: $1)) })
        // What docs/operations.md says to alert on is there.
        for name in ["imbridge_dead_letters_total", "imbridge_backend_failing_seconds", "imbridge_outbox_oldest_pending_age_seconds",
                     "imbridge_ready", "imbridge_verify_drift"] {
            #expect(rules.contains { Self.metricNames(in: $0).contains(name) }, "no rule reads \(name)")
        }

        // A bridge with scheduled audits on (their gauges exist from the start), after one relayed message.
        let rig = try await BridgeRig.make([BridgeLab.Member("rc", "rongcloud"), BridgeLab.Member("wk", "wukong")],
                                           routes: "  - from: \"rc:group:*\"\n    to: \"wk:group:*\"\n    direction: forward\n",
                                           extra: "verify:\n  interval: 6h\n")
        defer { Task { await rig.stop() } }
        let bridge = try await rig.start()
        defer { bridge.killWithoutWaiting() }
        let rc = try await rig.lab.userBackend("rc", registry: ContentRegistry())
        _ = try await rc.send(OutgoingMessage(conversation: .group("kit"), sender: "alice", content: .text("kit-1")))
        let http = HTTPClientWrapper(timeoutSeconds: 5)
        func scrape() async throws -> String {
            String(decoding: try await http.send(OutboundRequest(method: "GET", url: rig.baseURL() + "/metrics")).body, as: UTF8.self)
        }
        #expect(try await eventually(60) { try await scrape().contains(#"imbridge_relayed_total{action="send",target="wk"} 1"#) })
        let exported = Self.exported(try await scrape())
        #expect(exported.contains("imbridge_relay_latency_seconds_bucket") && exported.contains("imbridge_ready"), "\(exported.sorted())")
        let missing = named.subtracting(exported)
        #expect(missing.isEmpty, "named in deploy/ but not exported: \(missing.sorted())")
        // The check is able to fail: a misspelt name is not exported.
        #expect(!exported.contains("imbridge_dead_letter_total"))
    }

    @Test(.enabled(if: promtool != nil, "promtool is not installed (apt-get install prometheus; `make deps` does): the alert rules' syntax is not checked"))
    func theAlertRulesPassPromtool() async throws {
        let tool = try #require(Self.promtool)
        let (status, output) = try await Subprocess.run(tool, ["check", "rules", Self.rulesPath], timeoutSeconds: 60)
        #expect(status == 0 && output.contains("SUCCESS"), "promtool check rules: \(output)")

        // The check is able to fail: a broken expression is reported.
        let broken = FileManager.default.temporaryDirectory.appendingPathComponent("rules-\(UUID().uuidString).yml").path
        defer { try? FileManager.default.removeItem(atPath: broken) }
        try String(contentsOfFile: Self.rulesPath, encoding: .utf8)
            .replacingOccurrences(of: "imbridge_ready == 0", with: "imbridge_ready == == 0").write(toFile: broken, atomically: true, encoding: .utf8)
        let (failed, complaint) = try await Subprocess.run(tool, ["check", "rules", broken], timeoutSeconds: 60)
        #expect(failed != 0, "promtool accepted a broken expression: \(complaint)")
    }
}
