import Foundation
import IMCore
import IMHTTP
import IMSandbox
import PostgresTestSupport

/// One `imbridge` child process (`run`, or a long command such as `migrate` that a test interrupts), its
/// standard output and error appended to a log file (no pipe to fill up). Every wait polls: no test holds
/// a cooperative thread while a child runs (`Subprocess`, which runs a short command to its end, does the
/// same).
///
/// A `defer` cannot await, so it calls `killWithoutWaiting()`; everything else that stops the process
/// waits for it (`terminate`, `kill`, `waitForExit`), bounded.
public final class BridgeProcess: @unchecked Sendable {
    public let process = Process()
    public let logPath: String
    /// `http://127.0.0.1:PORT` whose `/healthz` says the bridge is up (a `run` process); nil for other commands.
    public let healthBase: String?

    /// Starts `imbridge <arguments>`.
    public init(_ arguments: [String], logPath: String, healthBase: String? = nil) throws {
        self.logPath = logPath
        self.healthBase = healthBase
        if !FileManager.default.fileExists(atPath: logPath) { _ = FileManager.default.createFile(atPath: logPath, contents: nil) }
        let log = try FileHandle(forWritingTo: URL(fileURLWithPath: logPath))
        log.seekToEndOfFile()
        process.executableURL = URL(fileURLWithPath: try Self.binary())
        process.arguments = arguments
        process.standardOutput = log
        process.standardError = log
        try process.run()
    }

    /// Starts `imbridge run --config <config> <arguments>`, listening on `port` (or with its `/healthz` at
    /// `healthBase`, the admin address), without waiting for it.
    public convenience init(config: String, logPath: String, port: Int? = nil, healthBase: String? = nil, arguments: [String] = []) throws {
        try self.init(["run", "--config", config] + arguments, logPath: logPath, healthBase: healthBase ?? port.map { "http://127.0.0.1:\($0)" })
    }

    /// Starts `imbridge run` and returns once its `/healthz` answers 200; throws, with the end of its log,
    /// when it does not within `seconds` (the process is killed then).
    public static func start(config: String, logPath: String, port: Int? = nil, healthBase: String? = nil, arguments: [String] = [],
                             seconds: Double = 30) async throws -> BridgeProcess {
        let bridge = try BridgeProcess(config: config, logPath: logPath, port: port, healthBase: healthBase, arguments: arguments)
        guard await bridge.waitUntilUp(seconds: seconds) else {
            let ended = bridge.isRunning ? "" : " (it ended with status \(bridge.process.terminationStatus))"
            await bridge.kill()
            throw IMError(.unavailable, "the bridge did not come up within \(Int(seconds)) s\(ended):\n\(bridge.output.suffix(6000))")
        }
        return bridge
    }

    /// Starts `imbridge migrate <arguments>`, logging to a file of its own in `directory`.
    public static func migrate(_ arguments: [String], directory: String) throws -> BridgeProcess {
        try BridgeProcess(["migrate"] + arguments, logPath: "\(directory)/migrate-\(UUID().uuidString).log")
    }

    /// The `imbridge` built next to the test bundle (the test targets that start it depend on it).
    public static func binary() throws -> String {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let candidates = [
            URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent("imbridge").path,
            root.appendingPathComponent(".build/debug/imbridge").path,
        ]
        guard let found = candidates.first(where: { FileManager.default.isExecutableFile(atPath: $0) }) else {
            throw CocoaError(.fileNoSuchFile, userInfo: [NSFilePathErrorKey: candidates.joined(separator: ", ")])
        }
        return found
    }

    /// Polls `/healthz` until it answers 200 (true), the process ends or `seconds` pass (false).
    public func waitUntilUp(seconds: Double = 30) async -> Bool {
        guard let healthBase else { return false }
        let http = HTTPClientWrapper(timeoutSeconds: 2)
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline {
            if (try? await http.send(OutboundRequest(method: "GET", url: healthBase + "/healthz")))?.status == 200 { return true }
            guard isRunning else { return false }
            try? await Task.sleep(nanoseconds: 50_000_000)
        }
        return false
    }

    public var isRunning: Bool { process.isRunning }
    public var pid: Int32 { process.processIdentifier }
    /// Everything the process wrote so far (to its log file).
    public var output: String { (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? "" }
    /// Whether it ended by a signal it did not handle (SIGKILL …); false while it runs.
    public var endedBySignal: Bool { !process.isRunning && process.terminationReason == .uncaughtSignal }

    /// Sends `signal` (SIGTERM, SIGINT, SIGSTOP, SIGCONT …) without waiting.
    public func send(_ signal: Int32) {
        if process.isRunning { Foundation.kill(process.processIdentifier, signal) }
    }

    public func pause() { send(SIGSTOP) }
    public func resume() { send(SIGCONT) }

    /// Waits up to `seconds` for the process to end; its exit status, nil if it still runs.
    public func waitForExit(seconds: Double = 60) async -> Int32? {
        let deadline = Date().addingTimeInterval(seconds)
        while process.isRunning && Date() < deadline { try? await Task.sleep(nanoseconds: 10_000_000) }
        if process.isRunning { return nil }
        process.waitUntilExit()   // it has ended: returns at once, and the status is final
        return process.terminationStatus
    }

    /// SIGKILL, as a crash would, and waits until it is gone.
    public func kill() async {
        send(SIGKILL)
        _ = await waitForExit(seconds: 30)
    }

    /// SIGTERM (a stopped process is continued first) and waits up to `seconds`; the exit status, or nil
    /// when it had not ended by then (it is SIGKILLed).
    public func terminate(seconds: Double = 60) async -> Int32? {
        guard process.isRunning else { return await waitForExit(seconds: 0) }
        send(SIGCONT)
        send(SIGTERM)
        if let status = await waitForExit(seconds: seconds) { return status }
        await kill()
        return nil
    }

    /// For a `defer` (which cannot await): SIGKILL if it still runs, without waiting.
    public func killWithoutWaiting() {
        send(SIGKILL)
    }
}

/// A port for a child bridge to bind (outside the ephemeral range the other servers draw from).
public func freePort() async throws -> Int { try await LoopbackPorts.unused(in: LoopbackPorts.forChildProcesses) }

/// A short-lived `imbridge` command (`check`, `deadletters`, `migrate` …) run to its end.
public enum IMBridgeCLI {
    public static func run(_ arguments: [String], timeoutSeconds: Double = 120,
                           environment: [String: String] = [:]) async throws -> (status: Int32, output: String) {
        try await Subprocess.run(try BridgeProcess.binary(), arguments, timeoutSeconds: timeoutSeconds, environment: environment)
    }
}
