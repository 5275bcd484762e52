import BridgeTestSupport
import Foundation
import IMCore
import IMHTTP
import IMLab
import Testing

/// `imbridge check` and `imbridge run` on configurations they must refuse:
/// exit status 1, every problem with FILE:LINE, no usage footer, and never a secret — the real binary,
/// each error path with secret-shaped values in the file.
@Suite struct ConfigCheckCLITests {
    static let secrets = ["S3CRET-aaaaaaaa", "S3CRET-bbbbbbbb", "S3CRET-cccccccc"]

    static func config(store: String) -> String {
        """
        store: \(store)
        listen: 127.0.0.1:0
        backends:
          wk:
            adapter: wukong
            im_url: http://127.0.0.1:1
            webhook_secret: S3CRET-bbbbbbbb
          rc:
            adapter: rongcloud
            app_key: k
            app_secret: S3CRET-aaaaaaaa
            api_url: http://127.0.0.1:1
        routes:
          - from: "wk:group:*"
            to: "rc:group:*"

        """
    }

    /// (what, edit of the valid file, fragments the output must hold)
    static let cases: [(String, @Sendable (String) -> String, [String])] = [
        ("yaml syntax", { $0.replacingOccurrences(of: "app_secret: S3CRET-aaaaaaaa", with: "app_secret: S3CRET-aaaaaaaa: x") },
         [".yaml:11:", "not valid YAML"]),
        ("duplicate key", { $0.replacingOccurrences(of: "    app_secret: S3CRET-aaaaaaaa\n", with: "    app_secret: S3CRET-aaaaaaaa\n    app_secret: S3CRET-aaaaaaaa\n") },
         ["'app_secret' is written more than once"]),
        ("wrong types", { $0.replacingOccurrences(of: "app_secret: S3CRET-aaaaaaaa", with: "app_secret: {value: S3CRET-aaaaaaaa}")
            .replacingOccurrences(of: "webhook_secret: S3CRET-bbbbbbbb", with: "webhook_secret: [S3CRET-bbbbbbbb]") + "retry: 5\n" },
         [".yaml:11: backends.rc.app_secret: expected a single value, got a mapping",
          ".yaml:7: backends.wk.webhook_secret: expected a single value, got a list", ".yaml:16: retry: expected a mapping"]),
        ("bad routes", { $0.replacingOccurrences(of: "wk:group:*", with: "wk:grop:*").replacingOccurrences(of: "rc:group:*", with: "xx:group:*") },
         [".yaml:14: routes[0].from: unknown conversation kind 'grop' (expected one of: direct, group, chatroom, system)",
          ".yaml:15: routes[0].to: backend 'xx' is not configured"]),
        ("missing keys", { $0.replacingOccurrences(of: "    app_key: k\n", with: "").replacingOccurrences(of: "    to: \"rc:group:*\"\n", with: "") },
         [".yaml:8: backends.rc.app_key: is required", ".yaml:13: routes[0].to: is required"]),
        ("unsigned webhook", { $0.replacingOccurrences(of: "    webhook_secret: S3CRET-bbbbbbbb\n", with: "") },
         [".yaml:4: backends.wk.webhook_secret: is required", "allow_unsigned_callbacks: true"]),
        ("negative durations", { $0.replacingOccurrences(of: "    api_url: http://127.0.0.1:1\n", with: "    timeout_seconds: 0\n")
            + "retry:\n  base_ms: -5\nretention_hours: -1\n" },
         [".yaml:12: backends.rc.timeout_seconds: expected a duration of at least 1s, got 0 seconds",
          ".yaml:17: retry.base_ms: expected a duration of at least 1ms, got -5 milliseconds",
          ".yaml:18: retention_hours: expected a duration of at least 1s, or 0s (keeps everything), got -1 hours"]),
        ("durations without units", { $0.replacingOccurrences(of: "    api_url: http://127.0.0.1:1\n", with: "    timeout: 10\n")
            + "retry:\n  base: 5 minutes\nretention: 7d\nretention_hours: 168\n" },
         [".yaml:12: backends.rc.timeout: expected a duration such as 250ms, 10s, 5m, 24h or 7d (a number needs its unit, e.g. 10s), got '10'",
          ".yaml:17: retry.base: expected a duration such as 250ms, 10s, 5m, 24h or 7d, got '5 minutes'",
          ".yaml:19: retention_hours: both retention_hours and retention are given: keep only retention"]),
        ("secret-holding settings", { $0.replacingOccurrences(of: "app_secret: S3CRET-aaaaaaaa", with: "app_secret: S3CRET-aaaaaaaa${X")
            .replacingOccurrences(of: "    webhook_secret: S3CRET-bbbbbbbb\n", with: "    webhook_secret: S3CRET-bbbbbbbb\n    session_tokens: S3CRET-cccccccc\n") },
         [".yaml:12: backends.rc.app_secret: unterminated ${", ".yaml:8: backends.wk.session_tokens: expected key=value pairs"]),
        ("log and shutdown", { $0 + "log:\n  level: loud\n  format: xml\nshutdown:\n  drain_seconds: 99999\n" },
         [".yaml:17: log.level: expected one of trace, debug, info, notice, warning, error, critical, got 'loud'",
          ".yaml:18: log.format: expected text or json, got 'xml'", ".yaml:20: shutdown.drain_seconds: expected a duration from 0s to 1h, got 99999 seconds"]),
        ("freshness off", { $0.replacingOccurrences(of: "    app_key: k\n", with: "    app_key: k\n    callback_max_skew_ms: 0\n") },
         [".yaml:11: backends.rc.callback_max_skew_ms: 0s turns the timestamp check off"]),
        ("bad source networks", { $0 + "listener:\n  allow_from: [10.0.0.0/33, 192.0.2.1]\n  admin_allow_from: ::1\n" },
         [".yaml:17: listener.allow_from[0]: expected an IP address or network (10.0.0.0/8, 2001:db8::/32), got 10.0.0.0/33",
          ".yaml:18: listener.admin_allow_from: expected a list, got a single value"]),
    ]

    func directory() throws -> String {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("imbridge-cfg-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }

    @Test func theValidFileChecksAndPrintsNoSecret() async throws {
        let dir = try directory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        try Self.config(store: "\(dir)/bridge.sqlite").write(toFile: "\(dir)/bridge.yaml", atomically: true, encoding: .utf8)
        let result = try await IMBridgeCLI.run(["check", "--config", "\(dir)/bridge.yaml"], timeoutSeconds: 60)
        #expect(result.status == 0 && result.output.contains("ok"), "\(result.output)")
        #expect(!result.output.contains("S3CRET"))
        #expect(result.output.contains("log: info, text lines") && result.output.contains("shutdown: in-flight sends may finish for 10s"))
        #expect(result.output.contains("listener: head within 10 s, body within 30 s, idle 60 s, at most 1024 connections per listener"))
        #expect(!FileManager.default.fileExists(atPath: "\(dir)/bridge.sqlite"), "check creates no store")
        #expect(!result.output.contains("sources:"), "no allow list: nothing said")

        let restricted = Self.config(store: "\(dir)/bridge.sqlite") + "listener:\n  allow_from: [10.20.0.0/16, \"2001:db8::/32\"]\n"
        try restricted.write(toFile: "\(dir)/bridge.yaml", atomically: true, encoding: .utf8)
        let listed = try await IMBridgeCLI.run(["check", "--config", "\(dir)/bridge.yaml"], timeoutSeconds: 60)
        #expect(listed.status == 0 && listed.output.contains("sources: listen takes connections from 10.20.0.0/16, 2001:db8::/32, admin_listen from anywhere"),
                "\(listed.output)")
    }

    /// Keys of earlier versions still check, each named once in a warning with the key to write instead.
    @Test func deprecatedKeysCheckWithOneWarningEach() async throws {
        let dir = try directory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let old = Self.config(store: "\(dir)/bridge.sqlite").replacingOccurrences(of: "    app_key: k\n", with: "    app_key: k\n    timeout_seconds: 5\n")
            + "retention_hours: 168\nretry:\n  base_ms: 200\n"
        try old.write(toFile: "\(dir)/bridge.yaml", atomically: true, encoding: .utf8)
        let result = try await IMBridgeCLI.run(["check", "--config", "\(dir)/bridge.yaml"], timeoutSeconds: 60)
        #expect(result.status == 0 && result.output.contains("ok"), "\(result.output)")
        for warning in ["bridge.yaml:17: retention_hours is deprecated: write `retention: 168h`",
                        "bridge.yaml:19: retry.base_ms is deprecated: write `base: 200ms`",
                        "bridge.yaml:11: backends.rc.timeout_seconds is deprecated: write `timeout: 5s`"] {
            #expect(result.output.components(separatedBy: warning).count == 2, "not once: \(warning)\n\(result.output)")
        }
        #expect(!result.output.contains("S3CRET"))
    }

    @Test(arguments: 0..<cases.count) func everyErrorPathRefusesWithLinesAndNoSecret(_ index: Int) async throws {
        let (what, edit, fragments) = Self.cases[index]
        let dir = try directory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let path = "\(dir)/bridge.yaml"
        try edit(Self.config(store: "\(dir)/bridge.sqlite")).write(toFile: path, atomically: true, encoding: .utf8)
        for command in ["check", "run"] {
            let result = try await IMBridgeCLI.run([command, "--config", path], timeoutSeconds: 60)
            #expect(result.status == 1, "\(what), \(command): status \(result.status)\n\(result.output)")
            for secret in Self.secrets { #expect(!result.output.contains(secret), "\(what), \(command) printed a secret:\n\(result.output)") }
            #expect(!result.output.contains("Usage:") && !result.output.contains("USAGE:"), "\(what), \(command): usage footer\n\(result.output)")
            for fragment in fragments {
                #expect(result.output.contains(fragment), "\(what), \(command): missing '\(fragment)' in:\n\(result.output)")
            }
        }
        #expect(!FileManager.default.fileExists(atPath: "\(dir)/bridge.sqlite"), "\(what): a refused configuration creates no store")
    }

    @Test func anUnwritableStoreIsRefusedByBothCommands() async throws {
        let dir = try directory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let path = "\(dir)/bridge.yaml"
        for store in ["/proc/1/bridge.sqlite", "\(dir)/missing/bridge.sqlite"] {
            try Self.config(store: store).write(toFile: path, atomically: true, encoding: .utf8)
            for command in ["check", "run"] {
                let result = try await IMBridgeCLI.run([command, "--config", path], timeoutSeconds: 60)
                #expect(result.status == 1 && result.output.contains("bridge.yaml:1: store: directory"), "\(command) \(store):\n\(result.output)")
                for secret in Self.secrets { #expect(!result.output.contains(secret)) }
            }
        }
        #expect(!FileManager.default.fileExists(atPath: "\(dir)/missing"))
    }
}

/// `/healthz` names error classes, never the URL, host or body of a failing backend,
/// and shows how old the oldest pending entry of each backend is.
@Suite struct HealthzLeakTests {
    @Test func aFailingBackendShowsItsErrorClassNotItsURL() async throws {
        let hidden = "internal-gateway-7f3a9c"
        let env = try await InProcessBridge.start(
            [BridgeLab.Member("wk", "wukong"), BridgeLab.Member("rc", "rongcloud", settings: ["api_url": "http://127.0.0.1:1/\(hidden)/"]),
             BridgeLab.Member("yx", "nim")],
            routes: route("wk:group:*", "rc:group:*", direction: "forward") + route("wk:group:*", "yx:group:*", direction: "forward"))
        defer { Task { await env.stop() } }
        // NIM answers 503 for a while: its class is http_5xx.
        let fault = try await HTTPClientWrapper().send(.json(env.lab.url(of: "yx") + "/_sandbox/faults",
            Data(#"{"status":503,"count":1000,"path_prefix":"/msg"}"#.utf8)))
        #expect(fault.status == 200)
        let wk = try await env.users("wk")
        _ = try await wk.send(OutgoingMessage(conversation: .group("g"), sender: "alice", content: .text("hello")))
        let http = HTTPClientWrapper(timeoutSeconds: 5)
        var body = ""
        let degraded = try await eventually(30) {
            let response = try await http.send(OutboundRequest(method: "GET", url: env.listener.baseURL + "/healthz"))
            body = response.bodyString
            let json = try JSONValue.parse(Data(response.body))
            return json["backends"]?["rc"]?["last_error_class"] == "connection_refused"
                && json["backends"]?["yx"]?["last_error_class"] == "http_5xx"
                && (json["backends"]?["rc"]?["oldest_pending_age_ms"]?.int64Value ?? -1) >= 0
        }
        #expect(degraded, "\(body)")
        // Later tries keep the class: a retry first looks for an earlier attempt's copy, and that lookup must
        // not fail on its own (a team NIM does not have holds no copy) and turn the class into another.
        let firstFailure = try JSONValue.parse(Data(body.utf8))["backends"]?["yx"]?["last_failure_ms"]?.int64Value ?? .max
        var later = ""
        let triedAgain = try await eventually(30) {
            later = try await http.send(OutboundRequest(method: "GET", url: env.listener.baseURL + "/healthz")).bodyString
            return (try JSONValue.parse(Data(later.utf8))["backends"]?["yx"]?["last_failure_ms"]?.int64Value ?? .min) > firstFailure
        }
        let laterClass = try JSONValue.parse(Data(later.utf8))["backends"]?["yx"]?["last_error_class"]?.stringValue
        #expect(triedAgain && laterClass == "http_5xx", "\(later)")
        let json = try JSONValue.parse(Data(body.utf8))
        #expect(json["status"] == "degraded" && json["backends"]?["rc"]?["state"] == "degraded")
        #expect(json["backends"]?["wk"]?["oldest_pending_age_ms"] == nil, "no pending entry for wk")
        for leak in [hidden, "127.0.0.1:1", "http://", env.lab.url(of: "yx")] {
            #expect(!body.contains(leak), "/healthz shows '\(leak)': \(body)")
        }
    }
}
