import BridgeTestSupport
import Foundation
import GRDB
import IMBridgeApp
import IMCore
import IMHTTP
import IMLab
import IMRelay
import SandboxTestSupport
import Testing

/// `imbridge run` as an operator sees it: its JSON log lines on standard error (a refused callback, a
/// retry storm, a dead letter, startup and shutdown; every line parses; no secret in any), and its
/// shutdown (the first SIGTERM drains within `shutdown.drain`, a second signal exits at once;
/// nothing unsent is lost either way). RongCloud is the source, WuKong the target whose sandbox
/// injects the failures and the latency.
@Suite(.serialized) struct OperationsTests {
    struct Setup {
        let rig: BridgeRig
        let config: BridgeConfig
        let http = HTTPClientWrapper(timeoutSeconds: 5)
        var lab: BridgeLab { rig.lab }
        var port: Int { rig.port }
        var configPath: String { rig.config }

        static func make(drainSeconds: Int, logLevel: String = "error") async throws -> Setup {
            let rig = try await BridgeRig.make([BridgeLab.Member("rc", "rongcloud"), BridgeLab.Member("wk", "wukong")],
                                               routes: "  - from: \"rc:group:*\"\n    to: \"wk:group:*\"\n    direction: forward\n    group_ids: same\n",
                                               extra: "log:\n  level: \(logLevel)\n  format: json\nshutdown:\n  drain: \(drainSeconds)s\n")
            return Setup(rig: rig, config: try BridgeConfig.parse(String(contentsOfFile: rig.config, encoding: .utf8), file: rig.config))
        }

        func start(_ arguments: [String] = []) async throws -> BridgeProcess {
            let bridge = try rig.launch(arguments: arguments)
            #expect(await bridge.waitUntilUp(), "bridge log:\n\(bridge.output)")
            return bridge
        }

        func fault(_ json: String) async throws {
            let response = try await http.send(.json(lab.url(of: "wk") + "/_sandbox/faults", Data(json.utf8)))
            #expect(response.status == 200, "\(String(decoding: response.body, as: UTF8.self))")
        }

        func clearFaults() async throws {
            let response = try await http.send(OutboundRequest(method: "DELETE", url: lab.url(of: "wk") + "/_sandbox/faults"))
            #expect(response.status == 200)
        }

        func send(_ conversation: String, _ text: String) async throws {
            let rc = try await lab.userBackend("rc", registry: ContentRegistry())
            _ = try await rc.send(OutgoingMessage(conversation: .group(GroupID(conversation)), sender: "alice", content: .text(text)))
        }

        func copies(_ text: String) async throws -> Int {
            try await lab.messages("wk").filter { $0["kind"] == "text" && $0["text"]?.stringValue == text }.count
        }

        /// The `pending` count `/healthz` reads from the store.
        func pending() async throws -> Int? {
            let response = try await http.send(OutboundRequest(method: "GET", url: "http://127.0.0.1:\(port)/healthz"))
            let object = try JSONSerialization.jsonObject(with: Data(response.body)) as? [String: Any]
            return object?["pending"] as? Int
        }

        func metric(_ line: String) async throws -> Double {
            let response = try await http.send(OutboundRequest(method: "GET", url: "http://127.0.0.1:\(port)/metrics"))
            let text = String(decoding: response.body, as: UTF8.self)
            let found = text.split(separator: "\n").first { $0.hasPrefix(line + " ") }
            return found.flatMap { Double($0.split(separator: " ").last ?? "") } ?? 0
        }
    }

    /// One parsed log line.
    struct Line {
        let level: String, label: String, message: String
        let metadata: [String: Any]
        func meta(_ key: String) -> String? { metadata[key] as? String }
    }

    /// Every line of the process's output as JSON; a line that does not parse is returned in `broken`.
    static func parse(_ output: String) -> (lines: [Line], broken: [String]) {
        var lines: [Line] = [], broken: [String] = []
        for text in output.split(separator: "\n") where !text.isEmpty {
            guard let object = try? JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any],
                  object["time"] is String, let level = object["level"] as? String, let label = object["label"] as? String,
                  let message = object["message"] as? String, let metadata = object["metadata"] as? [String: Any] else {
                broken.append(String(text))
                continue
            }
            lines.append(Line(level: level, label: label, message: message, metadata: metadata))
        }
        return (lines, broken)
    }

    @Test func refusedCallbackRetryStormAndDeadLetterAreLoggedAsJSONWithoutSecrets() async throws {
        let setup = try await Setup.make(drainSeconds: 5)
        defer { Task { await setup.rig.stop() } }
        // The configuration says `error`; the flag wins (the info lines below prove it).
        let bridge = try await setup.start(["--log-level", "info"])
        defer { bridge.killWithoutWaiting() }
        func lines() -> [Line] { Self.parse(bridge.output).lines }

        let started = try #require(lines().first { $0.message == "imbridge started" }, "\(bridge.output)")
        #expect(started.label == "imbridge.lifecycle" && started.level == "info")
        #expect(started.meta("store")?.hasPrefix("sqlite ") == true && started.meta("listen") == "http://127.0.0.1:\(setup.port)")
        #expect(started.meta("routes") == "1" && started.meta("drain") == "5s" && started.meta("log_level") == "info")

        // 1. A forged RongCloud callback (wrong signature): refused, one line with the reason, no body.
        let form = "fromUserId=mallory&toUserId=g1&objectName=RC%3ATxtMsg&content=%7B%22content%22%3A%22forged-body-text%22%7D&channelType=GROUP&msgTimestamp=1767225600000&msgUID=FAKE-FAKE-FAKE-FAKE"
        let now = Int64(Date().timeIntervalSince1970 * 1000)
        var forged = OutboundRequest(method: "POST", url: "http://127.0.0.1:\(setup.port)/callbacks/rc?nonce=1&timestamp=\(now)&signature=0000000000000000000000000000000000000000")
        forged.headers = [("Content-Type", "application/x-www-form-urlencoded")]
        forged.body = Array(form.utf8)
        #expect(try await setup.http.send(forged).status == 401)
        #expect(await eventually(10) { lines().contains { $0.message == "callback refused" } }, "\(bridge.output)")
        let refused = try #require(lines().first { $0.message == "callback refused" })
        #expect(refused.label == "imbridge.listener" && refused.level == "warning")
        #expect(refused.meta("backend") == "rc" && refused.meta("reason") == "authentication_failed")
        #expect(!bridge.output.contains("forged-body-text") && !bridge.output.contains("FAKE-FAKE"), "the body is never logged")

        // 2. A retry storm: WuKong answers 500 to every send, eight lanes retry (base 50 ms, cap 2 s).
        try await setup.fault(#"{"status":500,"count":1000000,"path_prefix":"/message/send"}"#)
        let stormBegan = Date()
        for n in 1...8 { try await setup.send("storm\(n)", "storm-\(n)") }
        #expect(try await eventually(60) { try await setup.metric(#"imbridge_retries_total{target="wk"}"#) >= 60 })
        let stormSeconds = Date().timeIntervalSince(stormBegan)
        let retries = try await setup.metric(#"imbridge_retries_total{target="wk"}"#)
        let retryLines = lines().filter { $0.message == "send failed, will retry" }
        #expect(!retryLines.isEmpty)
        // At most one line per target every 5 s (the throttle), whatever the number of retries.
        #expect(Double(retryLines.count) <= stormSeconds / 5 + 2, "\(retryLines.count) retry lines in \(stormSeconds) s for \(retries) retries")
        let retry = try #require(retryLines.first)
        #expect(retry.label == "imbridge.delivery" && retry.meta("backend") == "wk" && retry.meta("error_class") == "http_5xx")
        #expect(retry.meta("lane")?.hasPrefix("wk/") == true && retry.meta("event_id") != nil && retry.meta("route") == "rc->wk")
        if retryLines.count > 1 { #expect(Int(retryLines[1].meta("retries_not_logged") ?? "") ?? 0 > 0, "the next line counts those held back") }
        let failing = lines().filter { $0.message == "backend failing" }
        #expect(failing.count == 1 && failing.first?.meta("error_class") == "http_5xx", "one state change, not one per retry")

        // The target recovers: everything arrives, and the recovery is logged.
        try await setup.clearFaults()
        #expect(try await eventually(60) { try await setup.lab.messages("wk").filter { $0["kind"] == "text" }.count >= 8 })
        #expect(await eventually(10) { lines().contains { $0.message == "backend recovered" && $0.meta("backend") == "wk" && $0.meta("state") == "up" } })

        // 3. A dead letter: WuKong refuses one send with 400 (permanent).
        try await setup.fault(#"{"status":400,"count":1,"path_prefix":"/message/send"}"#)
        try await setup.send("dl", "dead-1")
        #expect(await eventually(30) { lines().contains { $0.message.hasPrefix("outbound dead letter") } }, "\(bridge.output)")
        let dead = try #require(lines().first { $0.message.hasPrefix("outbound dead letter") })
        #expect(dead.level == "error" && dead.label == "imbridge.delivery" && dead.meta("backend") == "wk")
        #expect(dead.meta("lane")?.hasPrefix("wk/") == true && dead.meta("lane")?.contains("dl") == true && dead.meta("event_id") != nil && dead.meta("reason")?.contains("WuKong 400: request refused") == true)

        // Shutdown: logged with what drained.
        #expect(await bridge.terminate() == 0)
        let stopped = try #require(lines().first { $0.message.hasPrefix("relay stopped") })
        #expect(stopped.meta("lanes_cut_off") == "0" && stopped.meta("drain_ms") != nil)
        #expect(lines().contains { $0.message == "imbridge stopped" })

        // Every line is one JSON object; no configured secret appears anywhere in the output.
        let parsed = Self.parse(bridge.output)
        #expect(parsed.broken.isEmpty, "lines that are not JSON: \(parsed.broken)")
        let secrets = Bridge.secrets(of: setup.config)
        #expect(secrets.contains(BridgeLab.appSecret) && secrets.contains(BridgeLab.webhookSecret))
        for secret in secrets { #expect(!bridge.output.contains(secret), "secret \(secret.prefix(3))… appears in the log") }
    }

    /// The first SIGTERM while a send hangs on a slow target: the bridge stops at the drain deadline,
    /// and the unfinished entry is relayed (once) after a restart.
    @Test func sigtermWithASlowTargetStopsWithinTheDrainDeadlineAndLosesNothing() async throws {
        let drainSeconds = 2
        let setup = try await Setup.make(drainSeconds: drainSeconds, logLevel: "info")
        defer { Task { await setup.rig.stop() } }
        var bridge = try await setup.start()
        defer { bridge.killWithoutWaiting() }
        try await setup.fault(#"{"latency_ms":6000}"#)
        try await setup.send("slow", "slow-1")
        #expect(try await eventually(20) { try await setup.pending() == 1 }, "the send is in flight")
        try await Task.sleep(nanoseconds: 300_000_000)
        let signalled = Date()
        bridge.send(SIGTERM)
        let status = await bridge.waitForExit(seconds: Double(drainSeconds) + 5)
        let seconds = Date().timeIntervalSince(signalled)
        print("shutdown with a slow target: \(String(format: "%.2f", seconds)) s (drain_seconds: \(drainSeconds))")
        #expect(status == 0, "bridge log:\n\(bridge.output)")
        #expect(seconds < Double(drainSeconds) + 3, "stopped \(seconds) s after SIGTERM with drain_seconds \(drainSeconds)")
        let lines = Self.parse(bridge.output).lines
        let stopped = try #require(lines.first { $0.message.hasPrefix("relay stopped at the drain deadline") }, "\(bridge.output)")
        #expect(stopped.meta("lanes_cut_off") == "1" && stopped.meta("pending_entries") == "1")

        // The abandoned request may still complete at the sandbox: let it, then restart without faults.
        _ = try await eventually(8) { try await setup.copies("slow-1") > 0 }
        try await setup.clearFaults()
        bridge = try await setup.start()
        #expect(try await eventually(30) { try await setup.copies("slow-1") >= 1 }, "relayed after the restart: \(bridge.output)")
        try await Task.sleep(nanoseconds: 500_000_000)
        #expect(try await setup.copies("slow-1") == 1, "exactly once")
        #expect(try await setup.pending() == 0)
        #expect(await bridge.terminate() == 0)
    }

    /// The first SIGTERM while a send takes 1.5 s, with time to spare: the send finishes (the target has
    /// the message when the process has exited) and the bridge exits cleanly right after it.
    @Test func sigtermLetsASendInFlightFinishWithinTheDeadline() async throws {
        let setup = try await Setup.make(drainSeconds: 10, logLevel: "info")
        defer { Task { await setup.rig.stop() } }
        let bridge = try await setup.start()
        defer { bridge.killWithoutWaiting() }
        try await setup.fault(#"{"latency_ms":1500}"#)
        try await setup.send("drain", "drain-1")
        #expect(try await eventually(20) { try await setup.pending() == 1 }, "the send is in flight")
        let signalled = Date()
        bridge.send(SIGTERM)
        let status = await bridge.waitForExit(seconds: 15)
        let seconds = Date().timeIntervalSince(signalled)
        print("shutdown with a 1.5 s send in flight (drain_seconds: 10): \(String(format: "%.2f", seconds)) s")
        #expect(status == 0, "bridge log:\n\(bridge.output)")
        let lines = Self.parse(bridge.output).lines
        let stopped = try #require(lines.first { $0.message.hasPrefix("relay stopped") }, "\(bridge.output)")
        #expect(stopped.message == "relay stopped: every send in flight finished")
        #expect(stopped.meta("lanes_in_flight") == "1" && stopped.meta("lanes_cut_off") == "0" && stopped.meta("pending_entries") == "0")
        #expect(try await setup.copies("drain-1") == 1, "the send in flight was carried out before the exit")
    }

    /// A callback whose body never finishes arriving (a stuck client, or a request whose store call
    /// hangs) does not keep the process past the drain, and never makes it trap: the listener is given
    /// up at the deadline and the bridge exits 0 (before, the service group killed it with SIGILL when
    /// the listener did not return within its cancellation allowance).
    @Test func aRequestThatNeverEndsDoesNotHoldTheShutdown() async throws {
        let drainSeconds = 1
        let setup = try await Setup.make(drainSeconds: drainSeconds, logLevel: "info")
        defer { Task { await setup.rig.stop() } }
        let bridge = try await setup.start()
        defer { bridge.killWithoutWaiting() }
        let connection = try RawConnection(port: setup.port)
        connection.send("POST /callbacks/wk?event=msg.notify HTTP/1.1\r\nHost: bridge\r\nX-IMBridge-Secret: \(BridgeLab.webhookSecret)\r\n"
                        + "Content-Type: application/json\r\nContent-Length: 5000\r\n\r\n[{\"a\":")
        try await Task.sleep(nanoseconds: 500_000_000)
        let signalled = Date()
        bridge.send(SIGTERM)
        let status = await bridge.waitForExit(seconds: 30)
        let seconds = Date().timeIntervalSince(signalled)
        print("shutdown with a request that never ends (drain_seconds: \(drainSeconds)): \(String(format: "%.2f", seconds)) s")
        #expect(status == 0, "exit status \(String(describing: status)); bridge log:\n\(bridge.output)")
        #expect(seconds < Double(drainSeconds) + 5, "stopped \(seconds) s after SIGTERM")
        _ = connection
    }

    /// A SIGTERM the moment the callback listener accepts connections (the bridge still starting its
    /// services) is a graceful shutdown: exit status 0, not the signal's default action (status 15). The
    /// signals are trapped before the listeners bind. Three starts, each signalled as soon as a TCP
    /// connection to the listener succeeds.
    @Test func aSigtermAsTheListenerOpensIsAGracefulShutdown() async throws {
        let setup = try await Setup.make(drainSeconds: 5, logLevel: "info")
        defer { Task { await setup.rig.stop() } }
        for attempt in 1...3 {
            let bridge = try setup.rig.launch(log: "bridge-\(attempt).log")
            defer { bridge.killWithoutWaiting() }
            let deadline = Date().addingTimeInterval(30)
            while !Self.accepts(port: setup.port), bridge.isRunning, Date() < deadline { usleep(200) }
            bridge.send(SIGTERM)
            let status = await bridge.waitForExit(seconds: 20)
            #expect(status == 0 && !bridge.endedBySignal, "start \(attempt): exit status \(String(describing: status)); bridge log:\n\(bridge.output)")
        }
    }

    /// Whether a TCP connection to 127.0.0.1:`port` succeeds (closed at once).
    static func accepts(port: Int) -> Bool {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        return withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0 }
        }
    }

    /// A second signal during the drain exits at once; the entry in flight is relayed after a restart.
    @Test func aSecondSignalDuringTheDrainExitsAtOnce() async throws {
        let setup = try await Setup.make(drainSeconds: 30, logLevel: "info")
        defer { Task { await setup.rig.stop() } }
        var bridge = try await setup.start()
        defer { bridge.killWithoutWaiting() }
        try await setup.fault(#"{"latency_ms":8000}"#)
        try await setup.send("stuck", "stuck-1")
        #expect(try await eventually(20) { try await setup.pending() == 1 }, "the send is in flight")
        try await Task.sleep(nanoseconds: 300_000_000)
        bridge.send(SIGTERM)
        #expect(await eventually(5) { bridge.output.contains("shutting down") }, "\(bridge.output)")
        #expect(bridge.isRunning, "the first signal drains: the send in flight takes seconds")
        let second = Date()
        bridge.send(SIGINT)
        let status = await bridge.waitForExit(seconds: 5)
        let seconds = Date().timeIntervalSince(second)
        print("exit after a second signal during a drain: \(String(format: "%.2f", seconds)) s")
        #expect(status == 130, "bridge log:\n\(bridge.output)")
        #expect(seconds < 3, "exited \(seconds) s after the second signal")
        #expect(Self.parse(bridge.output).lines.contains { $0.message.hasPrefix("second signal: exiting at once") })

        _ = try await eventually(10) { try await setup.copies("stuck-1") > 0 }
        try await setup.clearFaults()
        bridge = try await setup.start()
        #expect(try await eventually(30) { try await setup.copies("stuck-1") >= 1 }, "relayed after the restart: \(bridge.output)")
        try await Task.sleep(nanoseconds: 500_000_000)
        #expect(try await setup.copies("stuck-1") == 1, "exactly once")
        #expect(await bridge.terminate() == 0)
    }

    /// The store refuses the writes that record carried-out sends (a full disk, simulated with a
    /// trigger on the bridge's SQLite file): `store error` lines, at most one per operation every 5 s,
    /// and every message arrives once the store recovers.
    @Test func storeErrorsAreLoggedAndThrottled() async throws {
        let setup = try await Setup.make(drainSeconds: 2, logLevel: "info")
        defer { Task { await setup.rig.stop() } }
        let bridge = try await setup.start()
        defer { bridge.killWithoutWaiting() }
        var configuration = Configuration()
        configuration.busyMode = .timeout(10)
        let database = try DatabaseQueue(path: "\(setup.lab.directory)/bridge.sqlite", configuration: configuration)
        try await database.write { db in
            try db.execute(sql: "CREATE TRIGGER full_disk BEFORE INSERT ON id_map BEGIN SELECT RAISE(ABORT, 'database or disk is full'); END")
        }
        let began = Date()
        for n in 1...3 { try await setup.send("full", "full-\(n)") }
        func storeLines() -> [Line] { Self.parse(bridge.output).lines.filter { $0.message == "store error" } }
        #expect(try await eventually(30) { try await setup.metric(#"imbridge_store_errors_total{operation="record"}"#) >= 5 })
        let seconds = Date().timeIntervalSince(began)
        let lines = storeLines()
        #expect(!lines.isEmpty && Double(lines.count) <= seconds / 5 + 2, "\(lines.count) lines in \(seconds) s")
        let first = try #require(lines.first)
        #expect(first.label == "imbridge.store" && first.level == "error" && first.meta("operation") == "record")
        #expect(first.meta("error")?.contains("database or disk is full") == true && first.meta("lane")?.hasPrefix("wk/") == true)
        try await database.write { try $0.execute(sql: "DROP TRIGGER full_disk") }
        try database.close()
        #expect(try await eventually(60) {
            var all = true
            for n in 1...3 where try await setup.copies("full-\(n)") != 1 { all = false }
            return all
        }, "every message once after the store recovered")
        #expect(await bridge.terminate() == 0)
    }

    /// A second instance on a taken port says why it cannot listen (the reason was swallowed before).
    @Test func aTakenPortIsReportedWithItsReason() async throws {
        let setup = try await Setup.make(drainSeconds: 1, logLevel: "info")
        defer { Task { await setup.rig.stop() } }
        let first = try await setup.start()
        defer { first.killWithoutWaiting() }
        let second = try await IMBridgeCLI.run(["run", "--config", setup.configPath], timeoutSeconds: 60)
        #expect(second.status != 0)
        let failure = try #require(Self.parse(second.output).lines.first { $0.level == "critical" }, "\(second.output)")
        #expect(failure.meta("error")?.contains("could not listen on 127.0.0.1:\(setup.port)") == true)
        #expect(failure.meta("error")?.lowercased().contains("address already in use") == true, "\(failure.metadata)")
        #expect(await first.terminate() == 0)
    }
}
