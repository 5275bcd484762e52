import Foundation
import IMBridgeApp
import IMCore
import IMRelay
import Testing

/// `BridgeConfig` as a linter: every problem at once, each with FILE:LINE (a missing
/// key at the line of its enclosing mapping), and none quoting a secret.
@Suite struct ConfigLintTests {
    static let adapters: Set<String> = ["wukong", "rongcloud", "nim", "jmessage"]

    func problems(_ yaml: String, checkStoreAccess: Bool = false) -> [String] {
        do {
            _ = try BridgeConfig.parse(yaml, file: "b.yaml", environment: [:], adapters: Self.adapters, checkStoreAccess: checkStoreAccess)
            return []
        } catch let error as IMError {
            return error.message.split(separator: "\n").map(String.init)
        } catch {
            return ["\(error)"]
        }
    }

    @Test func everyProblemIsReportedAtOnceWithItsLine() {
        let yaml = """
            listen: [127.0.0.1, 8090]
            backends:
              wk:
                adapter: wukong
                im_url: [wk]
              rc:
                app_key: k
            routes:
              - from: "wk:grop:*"
                to: "rc:group:*"
              - from: "wk:group:g1"
              - 7
            retry: 5
            retention_hours: -1
            ha:
              lease_ms: 0
            """
        let lines = problems(yaml)
        let expected = [
            "b.yaml:1: listen: expected a single value, got a list",
            "b.yaml:5: backends.wk.im_url: expected a single value, got a list",
            "b.yaml:6: backends.rc.adapter: is required",
            "b.yaml:9: routes[0].from: unknown conversation kind 'grop' (expected one of: direct, group, chatroom, system)",
            "b.yaml:11: routes[1].to: is required",
            "b.yaml:12: routes[2]: expected a mapping",
            "b.yaml:13: retry: expected a mapping (KEY: VALUE lines below it), got a single value",
            "b.yaml:14: retention_hours: expected a duration of at least 1s, or 0s (keeps everything), got -1 hours",
            "b.yaml:16: ha.lease_ms: expected a duration of at least 300ms, got 0 milliseconds (0s)",
            "b.yaml:1: store: is required",
        ]
        for line in expected {
            #expect(lines.contains { $0.hasPrefix(line) }, "missing \(line) in:\n\(lines.joined(separator: "\n"))")
        }
        #expect(lines.count == expected.count, "\(lines.joined(separator: "\n"))")
    }

    @Test func negativeAndZeroDurationsAreRefused() {
        let base = "store: /tmp/x.sqlite\nbackends:\n  a: {adapter: nim}\n  b: {adapter: jmessage}\nroutes:\n  - {from: 'a:group:*', to: 'b:group:*'}\n"
        for (retry, expected) in [("retry:\n  base_ms: -5\n", "b.yaml:8: retry.base_ms: expected a duration of at least 1ms, got -5 milliseconds"),
                                  ("retry:\n  base_ms: 0\n", "retry.base_ms: expected a duration of at least 1ms, got 0 milliseconds"),
                                  ("retry:\n  max_ms: -1\n", "b.yaml:8: retry.max_ms: expected a duration of at least 1ms, got -1 milliseconds"),
                                  ("retry:\n  max_age_minutes: -3\n", "retry.max_age_minutes: expected a duration of at least 1s, or 0s (retries for ever)"),
                                  ("ha:\n  lease_ms: -1\n", "ha.lease_ms: expected a duration of at least 300ms"),
                                  ("retry:\n  base: 0s\n", "b.yaml:8: retry.base: expected a duration of at least 1ms, got 0s"),
                                  ("retry:\n  base: -1s\n", "b.yaml:8: retry.base: expected a duration such as 250ms, 10s, 5m, 24h or 7d, got '-1s'"),
                                  ("ha:\n  lease: 100ms\n", "b.yaml:8: ha.lease: expected a duration of at least 300ms, got 100ms")] {
            let lines = problems(base + retry)
            #expect(lines.contains { $0.contains(expected) }, "\(lines)")
        }
    }

    @Test func aRouteKindMustBeOneTheBridgeKnows() {
        let base = "store: /tmp/x.sqlite\nbackends:\n  a: {adapter: nim}\n  b: {adapter: jmessage}\nroutes:\n"
        #expect(problems(base + "  - {from: 'a:group:*', to: 'b:group:*'}\n").isEmpty)
        let lines = problems(base + "  - {from: 'a:grop:*', to: 'b:groups:*'}\n")
        #expect(lines.count == 2 && lines.allSatisfy { $0.hasPrefix("b.yaml:6: routes[0].") && $0.contains("unknown conversation kind") })
    }

    @Test func yamlErrorsNameLineAndColumnAndNeverQuoteTheDocument() {
        let secret = "S3CRET-aaaaaaaa"
        let duplicate = "store: /tmp/x.sqlite\nbackends:\n  rc:\n    adapter: rongcloud\n    app_secret: \(secret)\n    app_secret: \(secret)\n"
        let lines = problems(duplicate)
        #expect(lines.count == 1 && lines[0].hasPrefix("b.yaml:") && lines[0].contains("'app_secret' is written more than once"), "\(lines)")
        #expect(lines[0].range(of: #"^b\.yaml:\d+:\d+: "#, options: .regularExpression) != nil, "\(lines)")
        let syntax = problems("store: /tmp/x.sqlite\nbackends:\n  rc:\n    app_secret: \(secret): oops\n")
        #expect(syntax.count == 1 && syntax[0].hasPrefix("b.yaml:4:") && syntax[0].contains("not valid YAML"), "\(syntax)")
        let unterminated = problems("store: /tmp/x.sqlite\nbackends:\n  rc:\n    adapter: rongcloud\n    app_secret: \(secret)${X\n")
        #expect(unterminated.contains { $0.hasPrefix("b.yaml:5: backends.rc.app_secret: unterminated ${") }, "\(unterminated)")
        for line in lines + syntax + unterminated { #expect(!line.contains("S3CRET"), "\(line)") }
    }

    @Test func anUnwritableStoreIsRefusedWithoutCreatingIt() throws {
        let base = "backends:\n  a: {adapter: nim}\n  b: {adapter: jmessage}\nroutes:\n  - {from: 'a:group:*', to: 'b:group:*'}\n"
        let missing = "/tmp/imbridge-no-such-dir-\(UUID().uuidString)/bridge.sqlite"
        #expect(problems("store: \(missing)\n" + base, checkStoreAccess: true) == ["b.yaml:1: store: directory \(URL(fileURLWithPath: missing).deletingLastPathComponent().path) does not exist"])
        #expect(!FileManager.default.fileExists(atPath: URL(fileURLWithPath: missing).deletingLastPathComponent().path))
        // /proc/1 is not writable even for root (tests may run as root, for whom chmod does not bite).
        let locked = problems("store: /proc/1/bridge.sqlite\n" + base, checkStoreAccess: true)
        #expect(locked.count == 1 && locked[0].hasPrefix("b.yaml:1: store: directory /proc/1 is not writable"), "\(locked)")
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("imbridge-lint-\(UUID().uuidString)")
        try Data().write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }
        #expect(problems("store: \(file.path)/bridge.sqlite\n" + base, checkStoreAccess: true).first?.contains("is not a directory") == true)
        let fresh = FileManager.default.temporaryDirectory.appendingPathComponent("imbridge-lint-\(UUID().uuidString).sqlite").path
        #expect(problems("store: \(fresh)\n" + base, checkStoreAccess: true).isEmpty)
        #expect(!FileManager.default.fileExists(atPath: fresh), "checking creates nothing")
    }
}
