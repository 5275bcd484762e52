import Foundation
import IMBridgeApp
import IMCore
import IMRelay
import IMServer
import Logging
import Synchronization
import Testing
import IMTelemetry

/// The bridge's log handler: both line formats, secret redaction inside the handler, the throttle that
/// keeps a retry storm to a few lines, and the `log:` / `shutdown:` configuration keys.
@Suite struct LoggingTests {
    /// Lines a handler wrote.
    final class Capture: Sendable {
        let lines = Mutex<[String]>([])
        func logger(_ label: String, format: LogFormat, level: Logger.Level = .info, secrets: [String] = []) -> Logger {
            Logger(label: label) { label in
                BridgeLogHandler(label: label, level: level, format: format, redactor: SecretRedactor(secrets)) { [self] line in
                    lines.withLock { $0.append(line) }
                }
            }
        }
        var all: [String] { lines.withLock { $0 } }
    }

    @Test func jsonLinesCarryTimeLevelLabelMessageAndMetadata() throws {
        let capture = Capture()
        let logger = capture.logger("imbridge.delivery", format: .json)
        logger.warning("send failed, will retry", metadata: ["backend": "wk", "lane": "wk/group:ops", "attempts": .array(["1", "2"])])
        logger.debug("below the level")
        #expect(capture.all.count == 1)
        let line = try #require(capture.all.first)
        #expect(line.hasSuffix("\n") && line.dropLast().contains("\n") == false, "one object per line")
        let object = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
        #expect(object["level"] as? String == "warning")
        #expect(object["label"] as? String == "imbridge.delivery")
        #expect(object["message"] as? String == "send failed, will retry")
        let time = try #require(object["time"] as? String)
        #expect((try? Date.ISO8601FormatStyle(includingFractionalSeconds: true).parse(time)) != nil, "time is ISO 8601: \(time)")
        let metadata = try #require(object["metadata"] as? [String: Any])
        #expect(metadata["backend"] as? String == "wk" && metadata["lane"] as? String == "wk/group:ops")
        #expect(metadata["attempts"] as? [String] == ["1", "2"])
    }

    @Test func textLinesAreOneLineWithSortedFields() throws {
        let capture = Capture()
        var logger = capture.logger("imbridge.listener", format: .text)
        logger[metadataKey: "backend"] = "rc"
        logger.warning("callback refused", metadata: ["reason": "authentication_failed", "detail": "bad signature\nsecond line"])
        let line = try #require(capture.all.first)
        #expect(line.hasSuffix("\n") && !line.dropLast().contains("\n"))
        #expect(line.contains(" warning imbridge.listener: callback refused backend=rc detail=\"bad signature\\nsecond line\" reason=authentication_failed"))
    }

    /// A secret is replaced wherever it appears: in the message, in metadata values of every shape, in
    /// the logger's own metadata, in both formats — the handler does it, whatever the call site passes.
    @Test(arguments: LogFormat.allCases)
    func secretsAreRedactedInTheHandler(format: LogFormat) throws {
        let secrets = ["rc-app-secret-123", "pg-pass:word", "tok"]
        let capture = Capture()
        var logger = capture.logger("imbridge.store", format: format, secrets: secrets)
        logger[metadataKey: "store"] = "postgres://bridge:pg-pass:word@db/imbridge"
        struct Described: CustomStringConvertible { var description: String { "signature key rc-app-secret-123" } }
        logger.error("request https://api.example/x?sig=rc-app-secret-123 failed", metadata: [
            "nested": .dictionary(["deep": .array([.string("a rc-app-secret-123 b")])]),
            "described": .stringConvertible(Described()),
            "short": "tok is not a secret (too short to tell from words)",
        ])
        let line = try #require(capture.all.first)
        #expect(!line.contains("rc-app-secret-123") && !line.contains("pg-pass:word"), "\(line)")
        #expect(line.components(separatedBy: "***").count - 1 == 4, "message, store, nested, described: \(line)")
        #expect(line.contains("tok is not a secret"))
        if format == .json { #expect((try? JSONSerialization.jsonObject(with: Data(line.utf8))) != nil) }
    }

    @Test func aLongerSecretContainingAShorterOneIsReplacedWhole() {
        let redactor = SecretRedactor(["abcd", "abcd-efgh-ijkl"])
        #expect(redactor.redact("x abcd-efgh-ijkl y abcd") == "x *** y ***")
    }

    /// One line per key and interval; the next line says how many were held back.
    @Test func theThrottleHoldsLinesBackAndCountsThem() {
        let throttle = LogThrottle(intervalMs: 5_000)
        #expect(throttle.admit("wk", now: 0) == 0)
        #expect(throttle.admit("wk", now: 100) == nil)
        #expect(throttle.admit("wk", now: 4_999) == nil)
        #expect(throttle.admit("rc", now: 4_999) == 0, "keys are independent")
        #expect(throttle.admit("wk", now: 5_000) == 2)
        #expect(throttle.admit("wk", now: 5_001) == nil)
    }

    /// A backend's state changes are logged once each, not once per failure: failing (with the error
    /// class), down once past the threshold, recovered at the next success.
    @Test func backendStateChangesAreLoggedOnceEach() throws {
        let capture = Capture()
        let board = HealthBoard(backends: ["wk"], downAfterMs: 1_000, logger: capture.logger("imbridge.delivery", format: .json))
        let outage = IMError(.unavailable, "HTTP 503 from http://wk.internal/secret-path", vendorCode: "http_503")
        for at in stride(from: Int64(0), through: 3_000, by: 100) { board.failed("wk", error: outage, at: at) }
        board.succeeded("wk", at: 3_100)
        board.succeeded("wk", at: 3_200)
        let lines = try capture.all.map { try #require(JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]) }
        #expect(lines.map { $0["message"] as? String } == ["backend failing", "backend down", "backend recovered"])
        let metadata = lines.map { $0["metadata"] as? [String: String] ?? [:] }
        #expect(metadata[0] == ["backend": "wk", "state": "failing", "error_class": "http_5xx"])
        #expect(metadata[1]["state"] == "down" && metadata[1]["failing_for_ms"] == "1000")
        #expect(metadata[2] == ["backend": "wk", "state": "up", "failed_for_ms": "3100"])
        #expect(!capture.all.joined().contains("wk.internal"), "an error class, never the error's URL")
    }

    @Test func logAndShutdownKeysParse() throws {
        let yaml = BridgeConfigTests.valid + "\nlog:\n  level: debug\n  format: json\nshutdown:\n  drain: 3s\n"
        let config = try BridgeConfig.parse(yaml, environment: ["WK_TOKEN": "t", "RC_SECRET": "s"])
        #expect(config.log.level == .debug && config.log.format == .json && config.shutdown.drain == .seconds(3))
        let defaults = try BridgeConfig.parse(BridgeConfigTests.valid, environment: ["WK_TOKEN": "t", "RC_SECRET": "s"])
        #expect(defaults.log.level == .info && defaults.log.format == .text && defaults.shutdown.drain == .seconds(10))
    }

    @Test(arguments: [
        ("log:\n  level: loud\n", "log.level: expected one of trace, debug, info, notice, warning, error, critical, got 'loud'"),
        ("log:\n  format: xml\n", "log.format: expected text or json, got 'xml'"),
        ("log:\n  colour: red\n", "log.colour: unknown key"),
        ("log: json\n", "log: expected a mapping"),
        ("shutdown:\n  drain_seconds: -1\n", "shutdown.drain_seconds: expected a duration from 0s to 1h, got -1 seconds"),
        ("shutdown:\n  drain: 2h\n", "shutdown.drain: expected a duration from 0s to 1h, got 2h"),
        ("shutdown:\n  drain_secs: 5\n", "shutdown.drain_secs: unknown key"),
    ])
    func badLogAndShutdownKeysAreNamed(_ extra: String, _ expected: String) {
        let message: String
        do {
            _ = try BridgeConfig.parse(BridgeConfigTests.valid + "\n" + extra, file: "b.yaml", environment: ["WK_TOKEN": "t", "RC_SECRET": "s"])
            message = "parsed"
        } catch {
            message = (error as? IMError)?.message ?? "\(error)"
        }
        #expect(message.contains(expected), "\(message)")
    }
}
