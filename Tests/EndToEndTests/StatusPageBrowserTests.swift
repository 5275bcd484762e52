import BridgeTestSupport
import Foundation
import IMCore
import IMHTTP
import IMLab
import IMRelay
import IMServer
import PostgresTestSupport
import Testing

/// The status page in a real browser (docs/status-page.md): `imbridge run` as a child process with three
/// sandboxes over loopback — RongCloud relaying to WuKong and to NIM, the NIM sandbox stopped (a backend
/// down) and one poison message from RongCloud (an inbound dead letter) — and headless Chromium loading
/// `http://127.0.0.1:<admin port>/`. The test reads the DOM Chromium built (`--dump-dom`), not the
/// bytes the server sent: what an operator's browser shows.
///
/// Without Chromium the test is skipped with a printed reason, unless `IMBRIDGE_REQUIRE_BROWSER` is set
/// (`make test` sets it, so there a missing browser fails). `IMBRIDGE_STATUS_SCREENSHOT=FILE.png` also
/// saves a screenshot of the page.
@Suite(.serialized) struct StatusPageBrowserTests {
    static func chromium() -> String? {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"
        for directory in path.split(separator: ":") + ["/usr/bin"] {
            for name in ["chromium", "chromium-browser"] where FileManager.default.isExecutableFile(atPath: "\(directory)/\(name)") {
                return "\(directory)/\(name)"
            }
        }
        return nil
    }

    /// Runs the browser headless on `url` with `arguments`; its standard output (the DOM) apart from its
    /// standard error (its own diagnostics).
    static func browse(_ browser: String, _ arguments: [String], url: String, profile: String) async throws -> (status: Int32, stdout: String, stderr: String) {
        // Root needs --no-sandbox; a profile of its own keeps runs apart.
        let run = try await Subprocess.runApart(browser, ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                                                          "--user-data-dir=\(profile)/profile"] + arguments + [url], timeoutSeconds: 90)
        return (run.status, run.output, run.errors)
    }

    @Test func chromiumShowsBackendStatesADeadLetterAndALane() async throws {
        guard let browser = Self.chromium() else {
            if ProcessInfo.processInfo.environment["IMBRIDGE_REQUIRE_BROWSER"] != nil {
                Issue.record("IMBRIDGE_REQUIRE_BROWSER is set but no chromium is installed (apt-get install chromium; `make deps` does)")
            } else {
                print("StatusPageBrowserTests: skipped: chromium is not installed (apt-get install chromium) and IMBRIDGE_REQUIRE_BROWSER is unset")
            }
            return
        }
        let adminPort = try await freePort()
        let rig = try await BridgeRig.make([BridgeLab.Member("rc", "rongcloud"), BridgeLab.Member("wk", "wukong"), BridgeLab.Member("yx", "nim")],
                                           routes: route("rc:group:*", "wk:group:*", direction: "forward") + route("rc:group:*", "yx:group:*", direction: "forward"),
                                           extra: "admin_listen: 127.0.0.1:\(adminPort)\n")
        let lab = rig.lab
        let admin = "http://127.0.0.1:\(adminPort)"
        let bridge = try rig.launch(healthBase: admin)
        defer {
            bridge.killWithoutWaiting()
            Task { await rig.stop() }
        }
        let http = HTTPClientWrapper()
        func status() async throws -> StatusReport {
            try StatusReport.decode(Data(try await http.send(OutboundRequest(method: "GET", url: admin + "/status.json")).body))
        }
        try #require(await bridge.waitUntilUp(seconds: 60), "the bridge did not come up: \(bridge.output)")

        // NIM goes away; then traffic: two messages (relayed to WuKong, stuck for NIM) and a poison one.
        await lab.sandboxes["yx"]?.stop()
        let users = try await lab.userBackend("rc", registry: ContentRegistry())
        let group = ConversationRef.group("ops")
        for text in ["first", "second"] { _ = try await users.send(OutgoingMessage(conversation: group, sender: "alice", content: .text(text))) }
        _ = try await users.send(OutgoingMessage(conversation: group, sender: "alice", content: .unsupported(
            UnsupportedContent(vendor: "rongcloud", vendorType: "RC:ImgMsg", raw: #"{"content":"aGk=","extra":""}"#))))
        let settled = await eventually(60) {
            guard let report = try? await status() else { return false }
            let byName = Dictionary(uniqueKeysWithValues: report.backends.map { ($0.name, $0) })
            // A pooled connection the stopped sandbox closed gives `connection_reset` first; later tries are refused.
            // Waiting for the refusal keeps the class the page shows the same as the one read here.
            return byName["yx"]?.state == "degraded" && byName["yx"]?.lastErrorClass == "connection_refused"
                && byName["wk"]?.state == "ok" && report.deadLetters.inboundTotal == 1
                && report.lanes.top.contains { $0.lane == "yx/group:ops" && $0.depth == 2 }
        }
        let report = try await status()
        #expect(settled, "status.json never showed the expected state: \(report) \(bridge.output)")
        let deadLetter = try #require(report.deadLetters.inbound.first)
        #expect(deadLetter.reason.contains("imageUri"), "\(deadLetter.reason)")
        let yxError = try #require(report.backends.first { $0.name == "yx" }?.lastErrorClass)

        let shot = ProcessInfo.processInfo.environment["IMBRIDGE_STATUS_SCREENSHOT"]
        let page = try await Self.browse(browser, ["--virtual-time-budget=3000", "--dump-dom"] + (shot.map { ["--screenshot=\($0)", "--window-size=1280,1400"] } ?? []),
                                         url: admin + "/", profile: lab.directory)
        let dom = page.stdout
        #expect(page.status == 0 && dom.contains("<title>IMBridge status</title>"),
                "chromium exited \(page.status); stderr: \(page.stderr.suffix(2000)); dom: \(dom.prefix(500))")
        // Backend states, as rows the browser parsed.
        #expect(dom.contains(#"data-backend="yx" data-state="degraded""#), "\(dom)")
        #expect(dom.contains(#"data-backend="wk" data-state="ok""#))
        #expect(dom.contains(#"data-backend="rc""#))
        #expect(dom.contains("<code>\(yxError)</code>"), "the last error class of the stopped backend (\(yxError))")
        // The dead letter with its reason, and the waiting lane.
        #expect(dom.range(of: #"<td class="reason">[^<]*imageUri"#, options: .regularExpression) != nil, "the dead letter's reason")
        #expect(dom.range(of: #"<tr class="lane"><td><code>yx</code></td><td><code>group:ops</code></td><td class="num">2</td>"#,
                          options: .regularExpression) != nil, "the lane of the stopped backend with its depth")
        #expect(dom.contains("<code>rc:group:*</code>") && dom.contains("<code>yx:group:*</code>"), "the routes")
        #expect(!dom.contains(BridgeLab.appSecret) && !dom.contains(BridgeLab.webhookSecret), "no secret on the page")
        if let shot { print("StatusPageBrowserTests: screenshot at \(shot)") }
    }

    /// A scheduled audit (`verify: interval: 10s`) of a WuKong → RongCloud relay after a copy was removed from
    /// RongCloud (`POST /_sandbox/drift`): `/status.json`, `/metrics` and the page in Chromium show the
    /// missing copy with both message ids.
    @Test func chromiumShowsTheLastAuditsDrift() async throws {
        guard let browser = Self.chromium() else {
            if ProcessInfo.processInfo.environment["IMBRIDGE_REQUIRE_BROWSER"] != nil {
                Issue.record("IMBRIDGE_REQUIRE_BROWSER is set but no chromium is installed (apt-get install chromium; `make deps` does)")
            } else {
                print("StatusPageBrowserTests: skipped: chromium is not installed (apt-get install chromium) and IMBRIDGE_REQUIRE_BROWSER is unset")
            }
            return
        }
        let adminPort = try await freePort()
        let rig = try await BridgeRig.make([BridgeLab.Member("wk", "wukong"), BridgeLab.Member("rc", "rongcloud")],
                                           routes: route("wk:group:*", "rc:group:*", direction: "forward"),
                                           extra: "admin_listen: 127.0.0.1:\(adminPort)\nverify:\n  interval: 10s\n  window: 1h\n")
        let lab = rig.lab
        let admin = "http://127.0.0.1:\(adminPort)"
        let bridge = try rig.launch(healthBase: admin)
        defer {
            bridge.killWithoutWaiting()
            Task { await rig.stop() }
        }
        let http = HTTPClientWrapper()
        func status() async throws -> StatusReport {
            try StatusReport.decode(Data(try await http.send(OutboundRequest(method: "GET", url: admin + "/status.json")).body))
        }
        try #require(await bridge.waitUntilUp(seconds: 60), "the bridge did not come up: \(bridge.output)")
        let before = try await status()
        #expect(before.audit.enabled && before.audit.last == nil, "audits on, none finished yet: \(before.audit)")

        let users = try await lab.userBackend("wk", registry: ContentRegistry())
        var sent: [MessageID] = []
        for text in ["one", "two", "three"] {
            sent.append(try await users.send(OutgoingMessage(conversation: .group("audit"), sender: "alice", content: .text(text))).id)
        }
        let relayed = await eventually(30) { ((try? await lab.messages("rc")) ?? []).filter { $0["conversation_id"] == "audit" }.count == 3 }
        try #require(relayed, "\(bridge.output)")
        let copies = try await lab.messages("rc").filter { $0["conversation_id"] == "audit" }.compactMap { $0["id"]?.stringValue }
        let removal = try await http.send(OutboundRequest(method: "POST", url: lab.url(of: "rc") + "/_sandbox/drift",
                                                          body: Array(#"{"op":"remove","id":"\#(copies[1])"}"#.utf8)))
        try #require(removal.status == 200)

        // The next audit (every 10 s) finds the removed copy.
        let audited = await eventually(60) {
            guard let last = try? await status().audit.last else { return false }
            return last.drift["missing"] == 1
        }
        let report = try await status()
        #expect(audited, "the audit found the removed copy: \(String(describing: report.audit)) \(bridge.output.suffix(3000))")
        let item = try #require(report.audit.last?.items.first)
        #expect(item.kind == "missing" && item.sourceMessage == sent[1].rawValue && item.targetMessage == copies[1], "\(item)")
        #expect(report.audit.last?.drift.values.reduce(0, +) == 1)
        let metrics = String(decoding: try await http.send(OutboundRequest(method: "GET", url: admin + "/metrics")).body, as: UTF8.self)
        #expect(metrics.contains(#"imbridge_verify_drift{kind="missing"} 1"#), "\(metrics)")
        #expect(metrics.contains(#"imbridge_verify_drift{kind="doubled"} 0"#))
        #expect(metrics.range(of: #"imbridge_verify_last_run_timestamp_seconds [1-9]"#, options: .regularExpression) != nil)
        #expect(bridge.output.contains("drift between source and target"), "a warning per drift item")

        let page = try await Self.browse(browser, ["--virtual-time-budget=3000", "--dump-dom"], url: admin + "/", profile: lab.directory)
        let dom = page.stdout
        #expect(page.status == 0 && dom.contains("<h2>Last audit</h2>"), "stderr: \(page.stderr.suffix(2000)); dom: \(dom.prefix(500))")
        #expect(dom.contains(#"<td class="num drift-missing">1</td>"#), "\(dom)")
        #expect(dom.contains(#"<tr class="drift"><td>missing</td><td><code>wk:group:audit → rc:group:audit</code></td><td class="mono">\#(sent[1].rawValue)</td><td class="mono">\#(copies[1])</td>"#),
                "the drift item with both ids: \(dom)")
    }
}
