import ArgumentParser
import IMBridgeApp
import Foundation
import IMCore
import IMHTTP
import IMRelay
import IMStore

/// `imbridge run --config FILE`: relays between the configured backends until SIGTERM/SIGINT.
struct RunCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "run", abstract: "Run the bridge.")

    @Option(name: .long, help: "The bridge configuration (YAML).") var config: String

    func run() async throws {
        let bridge: Bridge
        do {
            bridge = try await Bridge.open(configPath: config)
        } catch {
            throw ConfigFailure.report(error, config: config)
        }
        try await bridge.start()
        if let admin = bridge.adminListener {
            log("imbridge: listening on \(bridge.listener.baseURL) (callbacks at /callbacks/<backend>); /healthz, /readyz, /metrics on \(admin.baseURL)")
        } else {
            log("imbridge: listening on \(bridge.listener.baseURL) (callbacks at /callbacks/<backend>, /healthz, /readyz, /metrics)")
        }
        await ShutdownSignal.wait()
        log("imbridge: stopping (finishing in-flight sends)")
        await bridge.stop()
        log("imbridge: stopped")
    }

    /// Progress lines go to standard error; standard output stays free for what a command prints.
    private func log(_ line: String) {
        FileHandle.standardError.write(Data((line + "\n").utf8))
    }
}
