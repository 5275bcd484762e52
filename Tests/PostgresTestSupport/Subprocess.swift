import Foundation

/// A child process run to its end, its output through files (no pipe to fill up), waited for by polling:
/// a test never holds one of the cooperative pool's threads while a child runs (with two of them,
/// a blocked one starves the tests beside it into their deadlines).
public enum Subprocess {
    /// stdout and stderr together. `environment`: variables set for the child on top of this process's own.
    public static func run(_ executable: String, _ arguments: [String], timeoutSeconds: Double = 180,
                           environment: [String: String] = [:]) async throws -> (status: Int32, output: String) {
        let result = try await run(executable, arguments, timeoutSeconds: timeoutSeconds, environment: environment, apart: false)
        return (result.status, result.output)
    }

    /// stdout and stderr apart.
    public static func runApart(_ executable: String, _ arguments: [String], timeoutSeconds: Double = 180,
                                environment: [String: String] = [:]) async throws -> (status: Int32, output: String, errors: String) {
        try await run(executable, arguments, timeoutSeconds: timeoutSeconds, environment: environment, apart: true)
    }

    private static func run(_ executable: String, _ arguments: [String], timeoutSeconds: Double, environment: [String: String],
                            apart: Bool) async throws -> (status: Int32, output: String, errors: String) {
        let base = FileManager.default.temporaryDirectory.appendingPathComponent("subprocess-\(UUID().uuidString)").path
        let paths = apart ? [base + ".out", base + ".err"] : [base + ".log"]
        for path in paths { FileManager.default.createFile(atPath: path, contents: nil) }
        defer { for path in paths { try? FileManager.default.removeItem(atPath: path) } }
        let handles = try paths.map { try FileHandle(forWritingTo: URL(fileURLWithPath: $0)) }
        defer { for handle in handles { try? handle.close() } }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        if !environment.isEmpty { process.environment = ProcessInfo.processInfo.environment.merging(environment) { _, set in set } }
        process.standardOutput = handles[0]
        process.standardError = handles[handles.count - 1]
        try process.run()
        let deadline = Date().addingTimeInterval(timeoutSeconds)
        while process.isRunning && Date() < deadline { try await Task.sleep(nanoseconds: 20_000_000) }
        if process.isRunning { process.terminate() }
        process.waitUntilExit()
        let texts = paths.map { (try? String(contentsOfFile: $0, encoding: .utf8)) ?? "" }
        return (process.terminationStatus, texts[0], apart ? texts[1] : "")
    }
}
