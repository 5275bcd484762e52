import Foundation
import IMHTTP
import IMSandbox
import PostgresTestSupport

/// `imbridge run` as a child process, so a test can SIGKILL it like a crash would.
final class BridgeProcess: @unchecked Sendable {
    let process = Process()
    let logPath: String

    init(config: String, logPath: String, arguments extra: [String] = []) throws {
        self.logPath = logPath
        FileManager.default.createFile(atPath: logPath, contents: nil)
        let log = try FileHandle(forWritingTo: URL(fileURLWithPath: logPath))
        log.seekToEndOfFile()
        process.executableURL = URL(fileURLWithPath: try Self.binary())
        process.arguments = ["run", "--config", config] + extra
        process.standardOutput = log
        process.standardError = log
        try process.run()
    }

    /// The `imbridge` built next to the test bundle (the test target depends on it).
    static func binary() throws -> String {
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

    func kill() {
        Foundation.kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
    }

    func terminate() -> Int32 {
        process.terminate()
        process.waitUntilExit()
        return process.terminationStatus
    }

    /// Sends `signal` (SIGTERM, SIGINT …) without waiting.
    func send(_ signal: Int32) {
        Foundation.kill(process.processIdentifier, signal)
    }

    /// Waits up to `seconds` for the process to end; its exit status, nil if it still runs.
    func waitForExit(seconds: Double) async -> Int32? {
        let deadline = Date().addingTimeInterval(seconds)
        while process.isRunning && Date() < deadline { try? await Task.sleep(nanoseconds: 10_000_000) }
        if process.isRunning { return nil }
        process.waitUntilExit()
        return process.terminationStatus
    }

    var output: String { (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? "" }
}

/// A port for the child bridge to bind (outside the ephemeral range the other servers draw from).
func freePort() async throws -> Int { try await LoopbackPorts.unused(in: LoopbackPorts.forChildProcesses) }

/// A short-lived `imbridge` command (`check`, `deadletters`, `migrate` …) run to its end.
enum IMBridgeCLI {
    static func run(_ arguments: [String], timeoutSeconds: Double = 120,
                    environment: [String: String] = [:]) async throws -> (status: Int32, output: String) {
        try await Subprocess.run(try BridgeProcess.binary(), arguments, timeoutSeconds: timeoutSeconds, environment: environment)
    }
}
