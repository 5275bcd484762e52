import Foundation

/// The real `imbridge` executable (built by `swift test`: this target depends on it) run as a child process.
struct MigrateProcess {
    static var executable: String {
        let beside = URL(fileURLWithPath: ProcessInfo.processInfo.arguments[0]).deletingLastPathComponent().appendingPathComponent("imbridge").path
        if FileManager.default.isExecutableFile(atPath: beside) { return beside }
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        return root.appendingPathComponent(".build/debug/imbridge").path
    }

    let process = Process()
    let output: String

    /// Starts `imbridge migrate <arguments>`; stdout and stderr go to a file (no pipe to fill up).
    init(_ arguments: [String], directory: String) throws {
        output = "\(directory)/migrate-\(UUID().uuidString).log"
        _ = FileManager.default.createFile(atPath: output, contents: nil)
        let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: output))
        process.executableURL = URL(fileURLWithPath: Self.executable)
        process.arguments = ["migrate"] + arguments
        process.standardOutput = handle
        process.standardError = handle
        try process.run()
    }

    var log: String { (try? String(contentsOfFile: output, encoding: .utf8)) ?? "" }

    func kill() { Foundation.kill(process.processIdentifier, SIGKILL) }

    /// Waits (bounded) for the process to end; returns its status, nil if it is still running.
    func wait(timeoutSeconds: Double = 60) async -> (status: Int32, signalled: Bool)? {
        let deadline = Date().addingTimeInterval(timeoutSeconds)
        while process.isRunning && Date() < deadline { try? await Task.sleep(nanoseconds: 20_000_000) }
        guard !process.isRunning else { return nil }
        return (process.terminationStatus, process.terminationReason == .uncaughtSignal)
    }
}
