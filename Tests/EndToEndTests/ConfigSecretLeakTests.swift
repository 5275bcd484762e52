import BridgeTestSupport
import Foundation
import IMAdapterKit
import IMBridgeApp
import IMCore
import IMStore
import IMVendors
import Testing

/// No configuration error shows a secret (docs/architecture.md, "Secrets in errors and logs"): every
/// error path `ConfigCheck` reaches — each adapter's settings with invalid values, store URL forms,
/// route references, the top-level keys — fed with secret-shaped values (`S3CR3T-marker-<n>`, and
/// numbers starting `7331000`), directly in secret settings and store passwords and through `${VAR}`
/// in the other keys. The whole output is searched: the error's message and details in process, and
/// standard output and error of `imbridge check` as a subprocess.
@Suite struct ConfigSecretLeakTests {
    /// A configuration to check: overrides of the valid base, and the environment it is read with.
    struct Case: Sendable, CustomStringConvertible {
        var name: String
        var store: String? = nil
        var listen: String? = nil
        /// backend → setting → YAML value (added to or replacing the base's).
        var settings: [String: [(String, String)]] = [:]
        /// YAML appended at the top level.
        var extra: String = ""
        var routes: String? = nil
        var environment: [String: String] = [:]
        /// False: the configuration is valid (the output is still searched).
        var fails = true
        /// Text the output must hold (the redacted forms).
        var expect: [String] = []
        var description: String { name }
    }

    static let markerPrefix = "S3CR3T-marker-"
    static let numericPrefix = "7331000"

    /// Distinct markers, numbered in the order the cases ask for them.
    final class Markers: @unchecked Sendable {
        var count = 0
        func next() -> String { count += 1; return "\(ConfigSecretLeakTests.markerPrefix)\(count)" }
        /// A negative whole number no check accepts (`-7331000<n>`).
        func negative() -> String { count += 1; return "-\(ConfigSecretLeakTests.numericPrefix)\(count)" }
        /// A large whole number (`7331000<n>`).
        func large() -> String { count += 1; return "\(ConfigSecretLeakTests.numericPrefix)\(count)" }
    }

    static let base: [(String, String, [(String, String)])] = [
        ("wk", "wukong", [("im_url", "http://127.0.0.1:1"), ("webhook_secret", "S3CR3T-marker-base-wk")]),
        ("rc", "rongcloud", [("app_key", "k"), ("app_secret", "S3CR3T-marker-base-rc"), ("api_url", "http://127.0.0.1:1")]),
        ("yx", "nim", [("app_key", "k"), ("app_secret", "S3CR3T-marker-base-yx"), ("api_url", "http://127.0.0.1:1")]),
        ("jm", "jmessage", [("app_key", "k"), ("master_secret", "S3CR3T-marker-base-jm"), ("admin", "bridge"),
                            ("api_url", "http://127.0.0.1:1"), ("report_url", "http://127.0.0.1:1")]),
    ]

    static let defaultRoutes = """
    routes:
      - from: "wk:group:*"
        to: "rc:group:*"

    """

    static func yaml(_ c: Case, directory: String) -> String {
        var text = "store: \(c.store ?? "\(directory)/bridge.sqlite")\nlisten: \(c.listen ?? "127.0.0.1:0")\nbackends:\n"
        for (name, adapter, settings) in base {
            var merged = [("adapter", adapter)] + settings
            for (key, value) in c.settings[name] ?? [] {
                if let index = merged.firstIndex(where: { $0.0 == key }) { merged[index].1 = value } else { merged.append((key, value)) }
            }
            text += "  \(name):\n"
            for (key, value) in merged { text += "    \(key): \(value)\n" }
        }
        text += c.routes ?? defaultRoutes
        text += c.extra
        return text
    }

    /// Every case; built once, so the markers are numbered the same in both tests.
    static let cases: [Case] = {
        let m = Markers()
        var cases: [Case] = []
        func env(_ value: String) -> (String, [String: String]) {
            let name = "IMB_LEAK_\(m.count)_\(cases.count)"
            return ("${\(name)}", [name: value])
        }
        // Each adapter's settings, by kind.
        for (backend, adapter, _) in base {
            for spec in Vendors.named(adapter)!.adapter.settings {
                let what = "\(backend).\(spec.key)"
                // `retry: 5` makes the configuration fail whatever the setting under test does (every backend
                // is still built and checked).
                let failing = "retry: 5\n"
                if spec.isSecret {
                    cases.append(Case(name: "\(what) direct", settings: [backend: [(spec.key, m.next())]], extra: failing))
                    let (ref, vars) = env(m.next())
                    cases.append(Case(name: "\(what) via env", settings: [backend: [(spec.key, ref)]], extra: failing, environment: vars))
                    continue
                }
                switch spec.kind {
                case .url(let list):
                    let (ref, vars) = env(m.next())
                    cases.append(Case(name: "\(what) not a URL via env", settings: [backend: [(spec.key, ref)]], environment: vars,
                                      expect: ["the value of \(ref) is not an http(s) URL"]))
                    if list {
                        let (ref2, vars2) = env("http://127.0.0.1:1,ftp://u:\(m.next())@h/")
                        cases.append(Case(name: "\(what) list via env", settings: [backend: [(spec.key, ref2)]], environment: vars2,
                                          expect: ["an item of the value of \(ref2) is not an http(s) URL"]))
                    }
                    cases.append(Case(name: "\(what) URL with credentials", settings: [backend: [(spec.key, "\"ftp://user:\(m.next())@host/x?token=\(m.next())#\(m.next())\"")]],
                                      expect: ["'ftp://user:***@host/x?token=***#***' is not an http(s) URL"]))
                case .integer:
                    let (ref, vars) = env(m.negative())
                    cases.append(Case(name: "\(what) negative via env", settings: [backend: [(spec.key, ref)]],
                                      environment: vars, expect: ["got the value of \(ref)"]))
                    let (ref2, vars2) = env(m.large())
                    cases.append(Case(name: "\(what) large via env", settings: [backend: [(spec.key, ref2)]], extra: failing, environment: vars2))
                case .duration:
                    let (ref, vars) = env(m.negative())
                    cases.append(Case(name: "\(what) negative via env", settings: [backend: [(spec.key, ref)]],
                                      environment: vars, expect: ["got the value of \(ref)"]))
                    let (ref2, vars2) = env(m.large() + "d")
                    cases.append(Case(name: "\(what) large via env", settings: [backend: [(spec.key, ref2)]], extra: failing, environment: vars2))
                    if let legacy = spec.legacy {
                        let (ref3, vars3) = env(m.negative())
                        cases.append(Case(name: "\(backend).\(legacy.key) negative via env", settings: [backend: [(legacy.key, ref3)]],
                                          environment: vars3, expect: ["got the value of \(ref3)"]))
                    }
                case .flag:
                    let (ref, vars) = env(m.next())
                    cases.append(Case(name: "\(what) flag via env", settings: [backend: [(spec.key, ref)]], environment: vars,
                                      expect: ["got the value of \(ref)"]))
                case .pairs:
                    let (ref, vars) = env(m.next())
                    cases.append(Case(name: "\(what) not pairs via env", settings: [backend: [(spec.key, ref)]], environment: vars,
                                      expect: ["expected key=value pairs"]))
                    let (ref2, vars2) = env("\(m.next())=RC:\(m.next())")
                    cases.append(Case(name: "\(what) bad pair via env", settings: [backend: [(spec.key, ref2)]], extra: failing, environment: vars2))
                    cases.append(Case(name: "\(what) tokens direct", settings: [backend: [(spec.key, "u1=\(m.next()),u2=\(m.next())")]], extra: failing))
                    // Written as a YAML mapping: directly, through the environment, and with a value that is not a single one.
                    cases.append(Case(name: "\(what) map direct", settings: [backend: [(spec.key, "{u1: \(m.next()), \"2\": \(m.next())}")]],
                                      extra: failing))
                    let (ref3, vars3) = env(m.next())
                    cases.append(Case(name: "\(what) map via env", settings: [backend: [(spec.key, "{u1: \"\(ref3)\"}")]], extra: failing,
                                      environment: vars3))
                    cases.append(Case(name: "\(what) map value not single", settings: [backend: [(spec.key, "{u1: [\(m.next())]}")]],
                                      expect: ["backends.\(backend).\(spec.key).u1: expected a single value"]))
                case .text, .secret:
                    let (ref, vars) = env(m.next())
                    cases.append(Case(name: "\(what) text via env", settings: [backend: [(spec.key, ref)]], extra: failing, environment: vars))
                }
            }
            let (ref, vars) = env(m.next())
            cases.append(Case(name: "\(backend) adapter via env", settings: [backend: [("adapter", ref)]], environment: vars,
                              expect: ["unknown adapter the value of \(ref)"]))
            let (ref2, vars2) = env(m.next())
            cases.append(Case(name: "\(backend) unknown setting via env", settings: [backend: [("no_such_setting", ref2)]], environment: vars2))
        }
        // Store URLs written in the file: the password (and what may be part of it) never shows.
        let stores: [(String, [String])] = [
            ("postgres://imb:ab@\(m.next())@db/imb", ["postgres://imb:***@db/imb"]),
            ("postgres://imb:\(m.next())@\(m.next())@db:5432/imb?schema=x", ["postgres://imb:***@db:5432/imb?schema=x"]),
            ("postgres://imb:\(m.next())/x@db/imb", ["postgres://imb:***@db/imb"]),
            ("postgresql:/imb:\(m.next())@db/imb", ["postgresql:***@db/imb"]),
            ("postgres:imb:\(m.next())@db/imb", ["postgres:***@db/imb"]),
            ("postgres//imb:\(m.next())@db/imb", ["postgres//imb:***@db/imb"]),
            ("mysql://imb:\(m.next())@db/imb", ["mysql://imb:***@db/imb"]),
            ("imb:\(m.next())@db/imb", ["imb:***@db"]),
            ("postgres://imb@db/imb?password=\(m.next())", ["password=***"]),
            ("postgres://imb@db/imb?sslpassword=\(m.next())&sslmode=disable", ["sslpassword=***"]),
            ("postgres://imb:\(m.next())@db/imb?schema=bad-name", ["postgres://imb:***@db/imb?schema=bad-name"]),
            ("postgres://imb:\(m.next())@db/imb?tls=require", ["postgres://imb:***@db/imb?tls=require"]),
            ("postgres://imb:\(m.next())@/imb", ["postgres://imb:***@/imb"]),
            ("postgres://imb:\(m.next())@db", ["postgres://imb:***@db"]),
            ("postgres://:\(m.next())@db/imb", ["postgres://:***@db/imb"]),
            ("postgres://imb:\(m.next())%40x@db/imb?x=1", ["postgres://imb:***@db/imb?x=***"]),
            ("postgres://imb:\(m.next())/imb", ["postgres://imb:***/imb"]),
            ("postgres://imb:\(m.next())@db:5x/imb", ["postgres://imb:***@db:***/imb"]),
            ("postgres://imb:\(m.next())@db/imb#\(m.next())", ["postgres://imb:***@db/imb#***"]),
        ]
        for (index, (store, expect)) in stores.enumerated() {
            cases.append(Case(name: "store form \(index): \(store)", store: "\"\(store)\"", expect: expect))
        }
        cases.append(Case(name: "store valid with a password", store: "postgres://imb:\(m.next())@db/imb", fails: false))
        // A store from the environment is not shown, not even redacted.
        for value in ["postgres://imb:\(m.next())@db/imb?bad=\(m.next())", "postgres://\(m.next()):pw@db", "/nonexistent/\(m.next())/bridge.sqlite",
                      "postgres://imb:ab@\(m.next())@db/imb"] {
            let (ref, vars) = env(value)
            cases.append(Case(name: "store via env: \(value)", store: ref, environment: vars, expect: ["the value of \(ref)"]))
        }
        // The store password of the environment, with another problem.
        cases.append(Case(name: "IMBRIDGE_STORE_PASSWORD", store: "postgres://imb@db/imb?schema=bad-name",
                          environment: [StoreLocation.passwordVariable: m.next()]))
        // Route references.
        for value in ["\(m.next()):group:*", "wk:\(m.next()):*", m.next(), "wk:direct:\(m.next())"] {
            let (ref, vars) = env(value)
            cases.append(Case(name: "route from via env: \(value)", routes: "routes:\n  - from: \"\(ref)\"\n    to: \"rc:group:*\"\n",
                              environment: vars))
            let (ref2, vars2) = env(value)
            cases.append(Case(name: "route to via env: \(value)", routes: "routes:\n  - from: \"wk:group:g1\"\n    to: \"\(ref2)\"\n",
                              environment: vars2))
        }
        for key in ["users", "direction", "media", "relay_account", "puppet_prefix", "reverse_prefix", "name_format"] {
            let (ref, vars) = env(m.next())
            var route = "routes:\n  - from: \"wk:group:*\"\n    to: \"rc:group:*\"\n    \(key): \"\(ref)\"\n"
            if key == "relay_account" || key == "name_format" { route += "    users: relay\n" }
            // Something else wrong in the same route, so it is refused whatever the key does.
            if key != "direction" { route += "    direction: sideways\n" }
            cases.append(Case(name: "route \(key) via env", routes: route, environment: vars,
                              expect: key == "users" ? ["got the value of \(ref)"] : []))
        }
        for feature in Feature.allCases {
            let (ref, vars) = env(m.next())
            cases.append(Case(name: "route fallback \(feature.rawValue) via env",
                              routes: "routes:\n  - from: \"wk:group:*\"\n    to: \"rc:group:*\"\n    fallbacks:\n      \(feature.rawValue): \(ref)\n",
                              environment: vars))
        }
        // Top-level keys through the environment.
        func top(_ name: String, _ yaml: (String) -> String, _ value: String, expect: [String] = [], fails: Bool = true) {
            let (ref, vars) = env(value)
            cases.append(Case(name: name, extra: yaml(ref), environment: vars, fails: fails, expect: expect.map { $0.replacingOccurrences(of: "REF", with: ref) }))
        }
        do {
            let (ref, vars) = env(m.next())
            cases.append(Case(name: "listen", listen: ref, environment: vars, expect: ["got the value of \(ref)"]))
        }
        top("admin_listen", { "admin_listen: \($0)\n" }, m.next(), expect: ["got the value of REF"])
        do {
            let host = m.next()
            let (ref, vars) = env("\(host):8090")
            let (adminRef, adminVars) = env("\(host):8090")
            cases.append(Case(name: "admin_listen equal to listen", listen: ref, extra: "admin_listen: \(adminRef)\n",
                              environment: vars.merging(adminVars) { $1 }, expect: ["must differ from listen (the value of \(ref))"]))
        }
        top("log.level", { "log:\n  level: \($0)\n" }, m.next(), expect: ["got the value of REF"])
        top("log.format", { "log:\n  format: \($0)\n" }, m.next(), expect: ["got the value of REF"])
        top("retention_hours", { "retention_hours: \($0)\n" }, m.negative(), expect: ["got the value of REF"])
        top("retry.base_ms", { "retry:\n  base_ms: \($0)\n" }, m.negative(), expect: ["got the value of REF"])
        top("retry.max_ms", { "retry:\n  max_ms: \($0)\n" }, m.negative(), expect: ["got the value of REF"])
        top("retry.base_ms above max_ms", { "retry:\n  base_ms: \($0)\n  max_ms: 5\n" }, m.large(), expect: ["base_ms (the value of REF)"])
        top("retention", { "retention: \($0)\n" }, m.next(), expect: ["got the value of REF"])
        top("retry.base", { "retry:\n  base: \($0)\n" }, m.negative(), expect: ["got the value of REF"])
        top("listener.idle_timeout", { "listener:\n  idle_timeout: \($0)\n" }, m.large() + "d", expect: ["got the value of REF"])
        top("retry.max_age_minutes", { "retry:\n  max_age_minutes: \($0)\n" }, m.negative(), expect: ["got the value of REF"])
        top("readiness", { "readiness:\n  backend_failing_seconds: \($0)\n" }, m.negative(), expect: ["got the value of REF"])
        top("ha.lease_ms", { "ha:\n  lease_ms: \($0)\n" }, m.negative(), expect: ["got the value of REF"])
        top("ha.instance", { "ha:\n  instance: \($0)\nretry: 5\n" }, m.next())
        top("shutdown", { "shutdown:\n  drain_seconds: \($0)\n" }, m.large(), expect: ["got the value of REF"])
        top("catch_up.max_age", { "catch_up:\n  max_age: \($0)\n" }, m.next(), expect: ["got the value of REF"])
        top("catch_up.max_age negative", { "catch_up:\n  max_age: \($0)\n" }, m.negative() + "s")
        top("catch_up.interval", { "catch_up:\n  interval: \($0)\n" }, m.next(), expect: ["got the value of REF"])
        top("catch_up.max_messages", { "catch_up:\n  max_messages_per_conversation: \($0)\n" }, m.negative(), expect: ["got the value of REF"])
        top("catch_up.enabled", { "catch_up:\n  enabled: \($0)\n" }, m.next())
        top("mappings", { "mappings: \($0)\n" }, "/nonexistent/\(m.next())", expect: ["the value of REF"])
        top("mappings with text around", { "mappings: /nonexistent/\($0)\n" }, m.next())
        // Everything at once: one problem per path, and the markers nowhere.
        return cases
    }()

    static func directory() throws -> String {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("imbridge-leak-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }

    static func leaks(_ output: String) -> [String] {
        var found: [String] = []
        for prefix in [markerPrefix, numericPrefix, "S3CR3T"] {
            var rest = Substring(output)
            while let range = rest.range(of: prefix) {
                found.append(String(rest[range.lowerBound...].prefix(40)))
                rest = rest[range.upperBound...]
            }
        }
        return found
    }

    @Test(arguments: cases) func noErrorShowsASecret(_ c: Case) async throws {
        let dir = try Self.directory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let path = "\(dir)/bridge.yaml"
        try Self.yaml(c, directory: dir).write(toFile: path, atomically: true, encoding: .utf8)
        var output = ""
        do {
            _ = try await ConfigCheck.load(path: path, environment: ProcessInfo.processInfo.environment.merging(c.environment) { _, set in set })
            #expect(!c.fails, "\(c.name): the configuration was accepted\n\(Self.yaml(c, directory: dir))")
        } catch let error as IMError {
            output = error.message + "\n" + error.details.map { "\($0.key)=\($0.value)" }.joined(separator: "\n") + "\n\(error)"
            #expect(c.fails, "\(c.name): \(output)")
        }
        #expect(Self.leaks(output).isEmpty, "\(c.name) shows \(Self.leaks(output)):\n\(output)")
        for fragment in c.expect { #expect(output.contains(fragment), "\(c.name): missing '\(fragment)' in:\n\(output)") }
    }

    /// The same through the binary: `imbridge check`'s standard output and error.
    @Test(arguments: cases) func noCheckOutputShowsASecret(_ c: Case) async throws {
        let dir = try Self.directory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let path = "\(dir)/bridge.yaml"
        try Self.yaml(c, directory: dir).write(toFile: path, atomically: true, encoding: .utf8)
        let result = try await IMBridgeCLI.run(["check", "--config", path], timeoutSeconds: 60, environment: c.environment)
        #expect(result.status == (c.fails ? 1 : 0), "\(c.name): status \(result.status)\n\(result.output)")
        #expect(Self.leaks(result.output).isEmpty, "\(c.name) printed \(Self.leaks(result.output)):\n\(result.output)")
        for fragment in c.expect { #expect(result.output.contains(fragment), "\(c.name): missing '\(fragment)' in:\n\(result.output)") }
    }

    /// The first leak: a password with an unencoded `@` printed from its second part on.
    @Test func aStorePasswordWithAnAtSignIsHiddenWhole() async throws {
        let dir = try Self.directory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let path = "\(dir)/bridge.yaml"
        try Self.yaml(Case(name: "at", store: "postgres://imb:ab@cd-S3CR3T-marker-at@db/imb"), directory: dir)
            .write(toFile: path, atomically: true, encoding: .utf8)
        for command in ["check", "run"] {
            let result = try await IMBridgeCLI.run([command, "--config", path], timeoutSeconds: 60)
            #expect(result.status == 1, "\(command): \(result.output)")
            #expect(result.output.contains("postgres://imb:***@db/imb") && !result.output.contains("cd-"), "\(command): \(result.output)")
            #expect(Self.leaks(result.output).isEmpty, "\(command): \(result.output)")
        }
    }

    /// The second leak: a `${VAR}` holding a secret, in a non-secret setting that fails validation.
    @Test func aSecretFromTheEnvironmentInAPlainSettingIsNamedNotQuoted() async throws {
        let dir = try Self.directory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let path = "\(dir)/bridge.yaml"
        try Self.yaml(Case(name: "env", settings: ["wk": [("im_url", "${IMB_LEAK_URL}"), ("timeout_seconds", "${IMB_LEAK_TIMEOUT}")]]), directory: dir)
            .write(toFile: path, atomically: true, encoding: .utf8)
        let environment = ["IMB_LEAK_URL": "S3CR3T-marker-url", "IMB_LEAK_TIMEOUT": "S3CR3T-marker-timeout"]
        for command in ["check", "run"] {
            let result = try await IMBridgeCLI.run([command, "--config", path], timeoutSeconds: 60, environment: environment)
            #expect(result.status == 1, "\(command): \(result.output)")
            #expect(result.output.contains("backends.wk.im_url: the value of ${IMB_LEAK_URL} is not an http(s) URL"), "\(command): \(result.output)")
            #expect(result.output.contains("backends.wk.timeout_seconds: expected a whole number of seconds, got the value of ${IMB_LEAK_TIMEOUT}"),
                    "\(command): \(result.output)")
            #expect(Self.leaks(result.output).isEmpty, "\(command): \(result.output)")
        }
    }
}
