import BridgeTestSupport
import Foundation
import IMAdapterKit
import IMBridgeApp
import IMCore
import IMHTTP
import IMLab
import IMRelay
import IMServer
import IMStore
import PostgresTestSupport
import IMVendors
import Testing
import IMPositions

/// `examples/bridge.yaml` and `deploy/imbridge.service` are what the README tells an operator to copy:
/// the example passes `imbridge check`'s validation and mentions every key there is; the unit passes
/// `systemd-analyze verify`.
@Suite struct DeploymentFilesTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    static func example() throws -> String {
        try String(contentsOf: root.appendingPathComponent("examples/bridge.yaml"), encoding: .utf8)
    }

    /// Every `${NAME}` the example reads, with a made-up value.
    static func environment(for text: String) -> [String: String] {
        var environment: [String: String] = [:]
        var rest = Substring(text)
        while let start = rest.range(of: "${"), let end = rest[start.upperBound...].firstIndex(of: "}") {
            let name = String(rest[start.upperBound..<end])
            environment[name] = "test-\(name.lowercased())"
            rest = rest[rest.index(after: end)...]
        }
        return environment
    }

    /// The example as `imbridge check` reads it (`ConfigCheck.load`: keys, store access, mappings, every
    /// backend built with `validateOnly`), secrets from the environment. Only the store's path is moved
    /// to a scratch directory: /var/lib/imbridge exists on a server, not here.
    @Test func theExampleConfigurationPassesCheck() async throws {
        let text = try Self.example()
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("example-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let storeLines = text.split(separator: "\n", omittingEmptySubsequences: false).filter { $0.hasPrefix("store: ") }
        #expect(storeLines == ["store: /var/lib/imbridge/bridge.sqlite"], "the example's store is deploy/imbridge.service's StateDirectory")
        let moved = text.replacingOccurrences(of: "store: /var/lib/imbridge/bridge.sqlite", with: "store: \(directory.path)/bridge.sqlite")
        let path = directory.appendingPathComponent("bridge.yaml").path
        try moved.write(toFile: path, atomically: true, encoding: .utf8)
        let environment = Self.environment(for: text)
        #expect(environment.count >= 10, "the example's secrets come from the environment: \(environment.keys.sorted())")
        let (config, _) = try await ConfigCheck.load(path: path, environment: environment)
        #expect(Set(config.backends.map(\.adapter)) == Set(Vendors.names))
        #expect(config.routes.count == 2)
        #expect(config.adminListen?.host == "127.0.0.1" && config.adminListen?.port == 9090)
        #expect(config.readiness.backendFailingMs == 60_000)
        #expect(config.listenHost == "0.0.0.0" && config.listenPort == 8090)
        #expect(config.catchUp == CatchUpSettings(enabled: true, maxAgeMs: 86_400_000, maxMessagesPerConversation: 1000, intervalMs: 300_000))
        #expect(config.warnings.isEmpty, "the example writes no deprecated key: \(config.warnings)")

        // A missing secret is refused by the same path (the example really depends on its environment).
        var partial = environment
        partial.removeValue(forKey: "RC_APP_SECRET")
        await #expect(throws: IMError.self) { _ = try await ConfigCheck.load(path: path, environment: partial) }
    }

    /// Whether `key:` is written on one of `lines`, set or commented out (`# key:`), or as a list
    /// item's first key (`- key:`).
    static func mentions(_ key: String, in lines: some Collection<Substring>) -> Bool {
        lines.contains { line in
            var text = line.drop { $0 == " " }
            if text.hasPrefix("#") { text = text.dropFirst().drop { $0 == " " } }
            if text.hasPrefix("- ") { text = text.dropFirst(2) }
            return text.hasPrefix("\(key):")
        }
    }

    /// Fails when a configuration key, an adapter or an adapter setting exists that the example does not
    /// mention: adding one without documenting it here breaks this test.
    @Test func theExampleMentionsEveryKeyEveryAdapterAndEverySetting() throws {
        let text = try Self.example()
        let lines = text.split(separator: "\n", omittingEmptySubsequences: false)
        let topLevel = lines.filter { !$0.hasPrefix(" ") }
        for key in BridgeConfig.topLevelKeys {
            let mentioned = Self.mentions(key, in: topLevel)
            #expect(mentioned, "top-level key \(key) is not in examples/bridge.yaml")
        }
        for key in BridgeConfig.sectionKeys.flatMap(\.keys) + BridgeConfig.routeKeys {
            let mentioned = Self.mentions(key, in: lines)
            #expect(mentioned, "key \(key) is not in examples/bridge.yaml")
        }
        for feature in Feature.allCases {
            #expect(text.contains(feature.rawValue), "fallback feature \(feature.rawValue) is not in examples/bridge.yaml")
        }
        let config = try BridgeConfig.parse(text, file: "examples/bridge.yaml", environment: Self.environment(for: text),
                                            adapters: Set(Vendors.names))
        let starts = config.backends.compactMap(\.line).sorted()
        for vendor in Vendors.all {
            let backend = try #require(config.backends.first { $0.adapter == vendor.name }, "no backend uses adapter \(vendor.name)")
            // The backend's section: from its name to the next backend or the next top-level line.
            let start = try #require(backend.line) - 1
            let nextBackend = (starts.first { $0 > start + 1 } ?? Int.max) - 1
            var end = start + 1
            while end < lines.count, end != nextBackend, !(lines[end].first.map { $0 != " " && $0 != "#" } ?? false) { end += 1 }
            let section = lines[start..<end]
            for spec in vendor.adapter.settings {
                let mentioned = Self.mentions(spec.key, in: section)
                #expect(mentioned, "\(vendor.name) setting \(spec.key) is not under backends.\(backend.name)")
            }
        }
    }

    static let systemdAnalyze = ["/usr/bin/systemd-analyze", "/bin/systemd-analyze"].first { FileManager.default.isExecutableFile(atPath: $0) }

    /// The unit has the directives the README promises (whatever tool is installed).
    @Test func theUnitRunsTheInstalledBinaryHardened() throws {
        let unit = try String(contentsOf: Self.root.appendingPathComponent("deploy/imbridge.service"), encoding: .utf8)
        let directives = Set(unit.split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.hasPrefix("#") })
        for line in ["ExecStart=/usr/local/bin/imbridge run --config /etc/imbridge/bridge.yaml", "Restart=on-failure",
                     "EnvironmentFile=/etc/imbridge/imbridge.env", "DynamicUser=yes", "StateDirectory=imbridge", "ProtectSystem=strict",
                     "ProtectHome=yes", "PrivateTmp=yes", "NoNewPrivileges=yes", "RestrictAddressFamilies=AF_INET AF_INET6 AF_UNIX",
                     "SystemCallFilter=@system-service", "CapabilityBoundingSet="] {
            #expect(directives.contains(line), "deploy/imbridge.service lacks \(line)")
        }
    }

    /// `systemd-analyze verify` accepts the unit without a single warning (it exits 0 even for unknown
    /// keys or bad values, so its output must be empty). The binary path is pointed at the `imbridge`
    /// this test run built, since verify checks that the ExecStart program exists; nothing else changes.
    /// Skipped, and reported as skipped, where systemd is not installed (`make deps` installs it).
    @Test(.enabled(if: systemdAnalyze != nil, "systemd-analyze is not installed: deploy/imbridge.service not verified"))
    func theUnitPassesSystemdAnalyzeVerify() async throws {
        let tool = try #require(Self.systemdAnalyze)
        let unit = try String(contentsOf: Self.root.appendingPathComponent("deploy/imbridge.service"), encoding: .utf8)
        let binary = try BridgeProcess.binary()
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("unit-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let copy = directory.appendingPathComponent("imbridge.service").path
        try unit.replacingOccurrences(of: "/usr/local/bin/imbridge", with: binary).write(toFile: copy, atomically: true, encoding: .utf8)
        let (status, output) = try await Subprocess.run(tool, ["verify", copy], timeoutSeconds: 60)
        #expect(status == 0 && output.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty, "systemd-analyze verify: \(output)")

        // The check is able to fail: a misspelt directive is reported.
        let broken = directory.appendingPathComponent("broken.service").path
        try unit.replacingOccurrences(of: "/usr/local/bin/imbridge", with: binary)
            .replacingOccurrences(of: "NoNewPrivileges=yes", with: "NoNewPrivilege=yes").write(toFile: broken, atomically: true, encoding: .utf8)
        let (_, complaint) = try await Subprocess.run(tool, ["verify", broken], timeoutSeconds: 60)
        #expect(complaint.contains("NoNewPrivilege"), "systemd-analyze verify did not notice an unknown key: \(complaint)")
    }
}

/// `admin_listen:` through the whole bridge (`Bridge.open` from YAML): the operator's endpoints move
/// to the admin address and leave the callbacks' one, which still takes callbacks.
@Suite struct AdminListenTests {
    @Test func metricsAndHealthMoveToTheAdminListener() async throws {
        let listener = BridgeListener(host: "127.0.0.1", port: 0)
        try await listener.start()
        let lab = try await BridgeLab(members: [BridgeLab.Member("rc", "rongcloud"), BridgeLab.Member("wk", "wukong")],
                                      callbackBase: listener.baseURL)
        let yaml = lab.configYAML(store: "\(lab.directory)/bridge.sqlite", listen: "127.0.0.1:\(listener.port ?? 0)",
                                  routes: route("rc:group:*", "wk:group:*")) + "admin_listen: 127.0.0.1:0\nreadiness:\n  backend_failing_seconds: 5\n"
        let bridge = try await Bridge.open(config: try BridgeConfig.parse(yaml, file: "lab.yaml"), listener: listener)
        try await bridge.start()
        let admin = try #require(bridge.adminListener)
        #expect(admin.port != nil && admin.port != listener.port)
        let http = HTTPClientWrapper()
        func status(_ url: String, method: String = "GET") async throws -> Int {
            try await http.send(OutboundRequest(method: method, url: url, headers: [("Content-Type", "application/json")], body: Array("{}".utf8))).status
        }
        #expect(try await status(listener.baseURL + "/metrics") == 404, "/metrics is not on the callbacks' port")
        #expect(try await status(listener.baseURL + "/healthz") == 404)
        #expect(try await status(listener.baseURL + "/readyz") == 404)
        #expect(try await status(admin.baseURL + "/metrics") == 200)
        #expect(try await status(admin.baseURL + "/healthz") == 200)
        let ready = try await http.send(OutboundRequest(method: "GET", url: admin.baseURL + "/readyz"))
        let body = try JSONValue.parse(Data(ready.body))
        #expect(ready.status == 200 && body["status"] == "ready" && body["backend_failing_threshold_ms"] == 5000, "\(ready.bodyString)")
        // Callbacks: an unsigned one reaches the RongCloud receiver on `listen` (refused there, 401), and
        // nothing at all on the admin port (404).
        #expect(try await status(listener.callbackURL(for: "rc"), method: "POST") == 401)
        #expect(try await status(admin.baseURL + "/callbacks/rc", method: "POST") == 404)
        await bridge.stop()
        await lab.stop()
    }

    @Test func checkRefusesAnAdminAddressThatIsTheCallbacksOne() throws {
        let base = "store: /tmp/x.sqlite\nbackends:\n  wk:\n    adapter: wukong\n    im_url: http://127.0.0.1:1\n    webhook_secret: s\n"
            + "routes:\n  - from: \"wk:group:*\"\n    to: \"wk:group:*\"\n"
        func problems(_ extra: String) -> String {
            do {
                _ = try BridgeConfig.parse("listen: 0.0.0.0:8090\n" + extra + base, file: "b.yaml", environment: [:])
                return ""
            } catch { return (error as? IMError)?.message ?? "\(error)" }
        }
        #expect(problems("admin_listen: 127.0.0.1:8090\n").contains("b.yaml:2: admin_listen: must differ from listen"))
        #expect(problems("admin_listen: nonsense\n").contains("b.yaml:2: admin_listen: expected HOST:PORT"))
        #expect(problems("readiness:\n  backend_failing_seconds: -1\n").contains("b.yaml:3: readiness.backend_failing_seconds: expected a duration of at least 1s, or 0s (never), got -1 seconds"))
        #expect(problems("readiness:\n  backend_failing: 0.5s\n").contains("b.yaml:3: readiness.backend_failing: expected a duration such as"))
        #expect(problems("readiness: 5\n").contains("b.yaml:2: readiness: expected a mapping"))
        #expect(!problems("admin_listen: 127.0.0.1:9090\n").contains("admin_listen"))
    }
}

/// `/readyz` when the store can be read but not written: a PostgreSQL database switched to read-only
/// (`default_transaction_read_only`, taking effect as the bridge reconnects). Liveness stays 200
/// (the store answers), readiness is 503 `store_unwritable`; both return to normal when it is writable.
@Suite struct StoreReadinessTests {
    static func psql(_ url: URL, database: String, _ sql: String) async throws {
        let binary = (["/usr/bin/psql"] + ((try? FileManager.default.contentsOfDirectory(atPath: "/usr/lib/postgresql")) ?? [])
            .map { "/usr/lib/postgresql/\($0)/bin/psql" }).first { FileManager.default.isExecutableFile(atPath: $0) }
        let (status, output) = try await Subprocess.run(try #require(binary, "psql not found"),
                                                        ["-v", "ON_ERROR_STOP=1", "-h", url.host ?? "127.0.0.1", "-p", String(url.port ?? 5432),
                                                         "-U", url.user ?? "imbridge", "-d", database, "-c", sql], timeoutSeconds: 60)
        #expect(status == 0, "psql \(sql): \(output)")
    }

    @Test func aStoreThatRefusesWritesIsLiveButNotReady() async throws {
        let cluster = try TestPostgres.cluster()
        let server = try #require(URL(string: cluster.url))
        let database = "ready_\(UUID().uuidString.replacingOccurrences(of: "-", with: "").prefix(12).lowercased())"
        try await Self.psql(server, database: "imbridge", "CREATE DATABASE \(database)")
        let store = try BridgeStore(path: "postgres://\(server.user ?? "imbridge")@\(server.host ?? "127.0.0.1"):\(server.port ?? 5432)/\(database)")
        let engine = RelayEngine(store: store, backends: [], routes: [])
        let listener = BridgeListener(engine: engine, receivers: [:], host: "127.0.0.1", port: 0)
        try await listener.start()
        let http = HTTPClientWrapper()
        func get(_ path: String) async -> (status: Int, body: JSONValue?)? {
            guard let response = try? await http.send(OutboundRequest(method: "GET", url: listener.baseURL + path)) else { return nil }
            return (response.status, try? JSONValue.parse(Data(response.body)))
        }
        func switchReadOnly(_ on: Bool) async throws {
            try await Self.psql(server, database: "imbridge", "ALTER DATABASE \(database) SET default_transaction_read_only = \(on ? "on" : "off")")
            try await Self.psql(server, database: "imbridge",
                                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = '\(database)' AND pid <> pg_backend_pid()")
        }
        #expect(await get("/readyz")?.status == 200)

        try await switchReadOnly(true)
        // Conditions, not timing: the probe may first answer `store_stuck` (its session reconnecting took
        // over 0.9 s on a busy machine); what must come is `store_unwritable` with liveness 200, and no
        // other reason on the way.
        var seen: [JSONValue] = []
        var answer: (status: Int, body: JSONValue?)?
        let unwritable = await eventually(60) {
            guard let ready = await get("/readyz"), let live = await get("/healthz") else { return false }
            if ready.status != 200 { seen.append(ready.body?["reasons"] ?? .null) }
            answer = ready
            return ready.status == 503 && ready.body?["reasons"] == .array(["store_unwritable"]) && live.status == 200
        }
        #expect(unwritable, "read-only store: /readyz 503 store_unwritable while /healthz 200; seen: \(seen), last: \(String(describing: answer))")
        let expected: Set<JSONValue> = [.array(["store_unwritable"]), .array(["store_stuck"])]
        #expect(seen.allSatisfy { expected.contains($0) }, "only the store's reasons: \(seen)")
        let shown = answer?.body?.jsonString() ?? ""
        let quotesDriver = shown.contains("read-only") || shown.contains(database)
        #expect(!quotesDriver, "the driver's message is not shown: \(shown)")

        try await switchReadOnly(false)
        #expect(await eventually(60) { await get("/readyz")?.status == 200 })
        await listener.stop()
        try await Self.psql(server, database: "imbridge", "DROP DATABASE \(database) WITH (FORCE)")
    }
}
