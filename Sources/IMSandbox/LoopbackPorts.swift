import IMHTTP
import Synchronization

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

    /// Ports handed out by this process: a port is free until its taker binds it, so a second call before
    /// that could be given the same one (a bridge's `listen` and a sandbox's port in one chaos seed did:
    /// the bridge could then never start, docs/reliability.md, session 44). None is handed out twice while
    /// fewer than half of a range's ports have been; after that the oldest are forgotten.
    private static let handedOut = Mutex<(ports: Set<Int>, order: [Int])>(([], []))

    /// A port in `range` that nothing on 127.0.0.1 listens on now and that this process has not handed out.
    public static func unused(in range: Range<Int>) async throws -> Int {
        for _ in 0..<64 {
            let port = Int.random(in: range)
            guard handedOut.withLock({ !$0.ports.contains(port) }) else { continue }
            let probe = HTTPServer(host: "127.0.0.1", port: port) { _ in .text("") }
            if (try? await probe.start()) != nil {
                await probe.stop()
                let taken = handedOut.withLock { state -> Bool in
                    guard state.ports.insert(port).inserted else { return false }
                    state.order.append(port)
                    if state.order.count > range.count / 2 { state.ports.remove(state.order.removeFirst()) }
                    return true
                }
                if taken { return port }
            }
        }
        throw IMHTTPError.bindFailed("no unused port in \(range)")
    }
}
