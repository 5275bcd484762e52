import Foundation
import IMCore
import IMHTTP
import IMSandbox

/// `imbridge run` as a child process the campaign can kill, stop, pause and start again; every start
/// logs to its own file (`bridge-1.log`, `bridge-2.log` …) in `directory`.
final class ChaosBridge: @unchecked Sendable {
    let config: String
    let directory: String
    let port: Int
    private(set) var process: Process?
    private(set) var runs = 0

    init(config: String, directory: String, port: Int) {
        self.config = config
        self.directory = directory
        self.port = port
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

    var logPaths: [String] { (1...max(1, runs)).map { "\(directory)/bridge-\($0).log" } }

    /// Starts a new process and waits until `/healthz` answers 200 (up to `seconds`). A process that
    /// exits before it answers (its store unreachable at start: PostgreSQL down) is started again a
    /// second later, as systemd does with deploy/imbridge.service (`Restart=on-failure`).
    func start(seconds: Double = 60) async throws {
        let deadline = Date().addingTimeInterval(seconds)
        let http = HTTPClientWrapper(timeoutSeconds: 2)
        while Date() < deadline {
            runs += 1
            let logPath = "\(directory)/bridge-\(runs).log"
            FileManager.default.createFile(atPath: logPath, contents: nil)
            let log = try FileHandle(forWritingTo: URL(fileURLWithPath: logPath))
            let process = Process()
            process.executableURL = URL(fileURLWithPath: try Self.binary())
            process.arguments = ["run", "--config", config]
            process.standardOutput = log
            process.standardError = log
            try process.run()
            self.process = process
            while Date() < deadline {
                if (try? await http.send(OutboundRequest(method: "GET", url: "http://127.0.0.1:\(port)/healthz")))?.status == 200 { return }
                guard process.isRunning else { break }
                try await Task.sleep(nanoseconds: 50_000_000)
            }
            if process.isRunning { break }
            self.process = nil
            try await Task.sleep(nanoseconds: 1_000_000_000)
        }
        throw IMError(.unavailable, "bridge run \(runs) did not come up within \(seconds) s (see \(directory)/bridge-\(runs).log)")
    }

    func kill() {
        guard let process else { return }
        Foundation.kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
        self.process = nil
    }

    /// SIGTERM and waits up to `seconds`; the exit status, or nil when it had to be SIGKILLed.
    func terminate(seconds: Double = 30) async -> Int32? {
        guard let process else { return nil }
        Foundation.kill(process.processIdentifier, SIGCONT)
        process.terminate()
        let deadline = Date().addingTimeInterval(seconds)
        while process.isRunning && Date() < deadline { try? await Task.sleep(nanoseconds: 20_000_000) }
        if process.isRunning {
            kill()
            return nil
        }
        process.waitUntilExit()
        self.process = nil
        return process.terminationStatus
    }

    func pause() {
        if let process { Foundation.kill(process.processIdentifier, SIGSTOP) }
    }

    func resume() {
        if let process { Foundation.kill(process.processIdentifier, SIGCONT) }
    }
}
