import BridgeTestSupport
import Foundation
import IMCore

/// One instance of the campaign's bridge: the `imbridge run` processes (`BridgeProcess`) started one
/// after the other on its configuration as the faults kill, stop and pause it; every start logs to its
/// own file (`bridge-1.log`, `bridge-2.log` …; `instance-1-bridge-1.log` … for a second instance) in the
/// lab's directory.
final class ChaosBridge: @unchecked Sendable {
    let rig: BridgeRig
    let instance: Int
    private(set) var process: BridgeProcess?
    private(set) var runs = 0

    init(rig: BridgeRig, instance: Int) {
        self.rig = rig
        self.instance = instance
    }

    func log(run: Int) -> String { (instance == 0 ? "" : "instance-\(instance)-") + "bridge-\(run).log" }
    var logPaths: [String] { (1...max(1, runs)).map { "\(rig.lab.directory)/\(log(run: $0))" } }

    /// Starts a new process and waits until `/healthz` answers 200 (up to `seconds`). A process that
    /// exits before it answers (its store unreachable at start: PostgreSQL down) is started again a
    /// second later, as systemd does with deploy/imbridge.service (`Restart=on-failure`).
    func start(seconds: Double = 60) async throws {
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline {
            runs += 1
            // The bridges log at debug unless `IMBRIDGE_CHAOS_LOG_LEVEL` says otherwise: a failing seed's
            // kept logs then follow every event and lane outcome (docs/operations.md, "Logs") on its first
            // run, as most failures are races that a replay does not repeat.
            let level = ["--log-level", Self.logLevel]
            let process = try rig.launch(instance, log: log(run: runs), arguments: level)
            self.process = process
            if await process.waitUntilUp(seconds: deadline.timeIntervalSinceNow) { return }
            if process.isRunning { break }
            self.process = nil
            try await Task.sleep(nanoseconds: 1_000_000_000)
        }
        throw IMError(.unavailable, "bridge run \(runs) did not come up within \(seconds) s (see \(logPaths.last ?? ""))")
    }

    /// The level the bridges log at (`IMBRIDGE_CHAOS_LOG_LEVEL`, default debug).
    static var logLevel: String { ProcessInfo.processInfo.environment["IMBRIDGE_CHAOS_LOG_LEVEL"] ?? "debug" }

    /// The configuration's `log:` section: `migrate` and `verify` beside the bridges log at their level too
    /// (their output is kept in the lab directory).
    static var logYAML: String { "log:\n  level: \(logLevel)\n" }

    func kill() async {
        await process?.kill()
        process = nil
    }

    /// SIGTERM and waits up to `seconds`; the exit status, or nil when it had to be SIGKILLed.
    func terminate(seconds: Double = 30) async -> Int32? {
        guard let process else { return nil }
        let status = await process.terminate(seconds: seconds)
        self.process = nil
        return status
    }

    func pause() { process?.pause() }
    func resume() { process?.resume() }
}
