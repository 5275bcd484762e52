import Foundation
import Synchronization

/// The PostgreSQL server the tests use: the throwaway cluster of `scripts/test-postgres.sh`.
/// `make test` starts one and names its directory in `IMBRIDGE_TEST_POSTGRES`; a test process started
/// without it (a bare `swift test`) starts its own on first use and stops it when the process exits.
/// There is no skipping: when no server can be started, every PostgreSQL test fails with the reason.
public enum TestPostgres {
    public struct Cluster: Sendable {
        /// The cluster's directory (for `restart`).
        public var directory: String
        /// `postgres://imbridge@127.0.0.1:PORT/imbridge`
        public var url: String
    }

    public struct Unavailable: Error, CustomStringConvertible {
        public var description: String
    }

    private static let started = Mutex<Result<Cluster, Unavailable>?>(nil)

    /// The cluster, started when needed.
    public static func cluster() throws -> Cluster {
        try started.withLock { state -> Result<Cluster, Unavailable> in
            if let state { return state }
            let result = locate()
            state = result
            return result
        }.get()
    }

    /// A store URL in a schema of its own (created by the store on open): tests do not see each other's rows.
    public static func freshURL(_ label: String = "t") throws -> String {
        let schema = "\(label)_\(UUID().uuidString.replacingOccurrences(of: "-", with: "").prefix(16).lowercased())"
        return try cluster().url + "?schema=\(schema)"
    }

    static var scriptPath: String {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("scripts/test-postgres.sh").path
    }

    private static func locate() -> Result<Cluster, Unavailable> {
        var directory = ProcessInfo.processInfo.environment["IMBRIDGE_TEST_POSTGRES"] ?? ""
        if directory.isEmpty {
            directory = FileManager.default.temporaryDirectory.appendingPathComponent("imbridge-pg-\(UUID().uuidString.prefix(8))").path
            do {
                try script("start", directory)
            } catch {
                return .failure(Unavailable(description: "cannot start a PostgreSQL test cluster (\(scriptPath) start): \(error)"))
            }
            ownedDirectory = directory
            atexit {
                if let directory = TestPostgres.ownedDirectory {
                    try? TestPostgres.script("stop", directory)
                    try? FileManager.default.removeItem(atPath: directory)
                }
            }
        }
        guard let url = try? String(contentsOfFile: directory + "/url", encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines),
              url.hasPrefix("postgres://") else {
            return .failure(Unavailable(description: "IMBRIDGE_TEST_POSTGRES=\(directory) holds no cluster url (scripts/test-postgres.sh start DIR)"))
        }
        return .success(Cluster(directory: directory, url: url))
    }

    nonisolated(unsafe) static var ownedDirectory: String?

    /// Runs `test-postgres.sh COMMAND DIRECTORY` to its end, blocking the calling thread (for the
    /// synchronous paths: finding the cluster, `atexit`, `destroy` in a `defer`).
    static func script(_ command: String, _ directory: String) throws {
        // Output to a file, not a pipe: the server the script starts inherits the descriptor, so a pipe
        // would never reach end-of-file.
        let logPath = FileManager.default.temporaryDirectory.appendingPathComponent("imbridge-pg-\(UUID().uuidString.prefix(8)).out").path
        FileManager.default.createFile(atPath: logPath, contents: nil)
        defer { try? FileManager.default.removeItem(atPath: logPath) }
        let log = try FileHandle(forWritingTo: URL(fileURLWithPath: logPath))
        defer { try? log.close() }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/bash")
        process.arguments = [scriptPath, command, directory]
        process.standardOutput = log
        process.standardError = log
        try process.run()
        process.waitUntilExit()
        let text = (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? ""
        guard process.terminationStatus == 0 else {
            throw Unavailable(description: "test-postgres.sh \(command) exited \(process.terminationStatus): \(text)")
        }
    }

    /// The same for async callers, through `Subprocess` (waited for by polling): `initdb` and `pg_ctl`
    /// take seconds on a loaded machine, and a cooperative thread held that long (two of them here)
    /// starves the tests beside it.
    static func scriptPolled(_ command: String, _ directory: String) async throws {
        let run = try await Subprocess.run("/bin/bash", [scriptPath, command, directory])
        guard run.status == 0 else {
            throw Unavailable(description: "test-postgres.sh \(command) exited \(run.status): \(run.output)")
        }
    }
}

extension TestPostgres {
    /// A cluster of the caller's own (for a test that stops and starts the server); `destroy` removes it.
    public static func startPrivateCluster() async throws -> Cluster {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("imbridge-pg-\(UUID().uuidString.prefix(8))").path
        try await scriptPolled("start", directory)
        let url = try String(contentsOfFile: directory + "/url", encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
        return Cluster(directory: directory, url: url)
    }

    /// Stops the server of `cluster` (immediate shutdown, like a crash), keeping its data.
    public static func stopServer(_ cluster: Cluster) async throws { try await scriptPolled("stop-server", cluster.directory) }

    /// Starts it again on the same port.
    public static func startServer(_ cluster: Cluster) async throws { try await scriptPolled("start-server", cluster.directory) }

    /// Stops the server and removes the cluster's directory.
    public static func destroy(_ cluster: Cluster) {
        try? script("stop", cluster.directory)
        try? FileManager.default.removeItem(atPath: cluster.directory)
    }
}

extension TestPostgres {
    /// Runs `sql` with `psql` against a store URL (its `?schema=` becomes the search path) and returns the
    /// rows, one line each, columns separated by `|`. For tests that look at what the bridge's sessions do
    /// (`pg_stat_activity`) or at rows the store API does not list.
    public static func query(_ url: String, _ sql: String) throws -> [String] {
        var components = URLComponents(string: url)!
        let schema = components.queryItems?.first { $0.name == "schema" }?.value
        components.queryItems = nil
        let bin = (try? FileManager.default.contentsOfDirectory(atPath: "/usr/lib/postgresql"))?.sorted().last
            .map { "/usr/lib/postgresql/\($0)/bin/psql" } ?? "/usr/bin/psql"
        let process = Process()
        process.executableURL = URL(fileURLWithPath: bin)
        let prefix = schema.map { "SET search_path TO \"\($0)\"; " } ?? ""
        process.arguments = [components.string!, "-Atq", "-c", prefix + sql]
        let output = Pipe()
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        try process.run()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else { throw CocoaError(.fileReadUnknown, userInfo: [NSDebugDescriptionErrorKey: "psql failed: \(sql)"]) }
        return String(decoding: data, as: UTF8.self).split(separator: "\n").map(String.init)
    }
}
