import ArgumentParser
import Foundation
import IMBridgeApp
import IMCore
import IMHTTP
import IMRelay
import IMServer
import IMStore
import Logging

/// `imbridge run --config FILE [--log-level LEVEL]`: relays between the configured backends until
/// SIGTERM/SIGINT (the first drains, a second exits at once; see `Bridge.run`).
struct RunCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "run", abstract: "Run the bridge.")

    @Option(name: .long, help: "The bridge configuration (YAML).") var config: String
    @Option(name: .customLong("log-level"),
            help: "trace, debug, info, notice, warning, error or critical; wins over the configuration's log.level.")
    var logLevel: String?

    func validate() throws {
        if let logLevel, Logger.Level(rawValue: logLevel) == nil {
            throw ValidationError("--log-level: expected one of \(BridgeConfig.logLevelNames.joined(separator: ", ")), got '\(logLevel)'")
        }
    }

    func run() async throws {
        var loaded: BridgeConfig
        do {
            loaded = try await ConfigCheck.load(path: config).config
        } catch {
            throw ConfigFailure.report(error, config: config)
        }
        // Once per process, before any logger exists: every line from here on (Hummingbird's too)
        // goes through the bridge's handler, with the configuration's secrets redacted.
        if let level = logLevel.flatMap(Logger.Level.init(rawValue:)) { loaded.log.level = level }
        BridgeLogHandler.bootstrap(level: loaded.log.level, format: loaded.log.format, secrets: Bridge.secrets(of: loaded))
        ConfigCheck.logWarnings(of: loaded)
        let bridge: Bridge
        do {
            bridge = try await Bridge.open(config: loaded, httpLogger: Logger(label: "imbridge.http"))
        } catch {
            throw ConfigFailure.report(error, config: config)
        }
        let logger = Logger(label: "imbridge.lifecycle")
        do {
            try await bridge.run(logger: logger)
        } catch {
            logger.critical("imbridge stopped on an error", metadata: ["error": "\(error)"])
            throw ExitCode.failure
        }
        logger.notice("imbridge stopped")
    }
}
