import IMHTTP

/// Ports for tests that need a number before a server exists (a bridge in a child process) or a port
/// nobody answers on (a dead primary host).
///
/// Every server in this project binds port 0 and gets a port from Linux's ephemeral range (32768 and
/// up), so a port from below that range that is free now stays free: probing one and releasing it is
/// not a race with the other servers of a parallel test run, as releasing a port-0 binding would be.
public enum LoopbackPorts {
    /// Hands out ports for a process that will bind them itself.
    public static let forChildProcesses = 20_000..<26_000
    /// Ports that must stay dead (connection refused).
    public static let dead = 26_000..<32_000

    /// A port in `range` that nothing on 127.0.0.1 listens on now.
    public static func unused(in range: Range<Int>) async throws -> Int {
        for _ in 0..<64 {
            let port = Int.random(in: range)
            let probe = HTTPServer(host: "127.0.0.1", port: port) { _ in .text("") }
            if (try? await probe.start()) != nil {
                await probe.stop()
                return port
            }
        }
        throw IMHTTPError.bindFailed("no unused port in \(range)")
    }
}
