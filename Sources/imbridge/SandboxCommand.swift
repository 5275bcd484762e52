import ArgumentParser
import IMBridgeApp
import IMLab
import IMVendors
import Foundation
import IMSandbox
import Logging
import ServiceLifecycle

/// `imbridge sandbox <vendor> --port P [--host H] [--app-key K] [--app-secret S] [--callback-url U]
/// [--state FILE] [--option key=value …]`: serves one vendor's emulated server API until SIGINT/SIGTERM.
struct SandboxCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "sandbox",
        abstract: "Run a local server that speaks a vendor's server API.",
        discussion: "Prints `listening on http://HOST:PORT` once ready. Vendors: \(Vendors.names.joined(separator: ", ")).")

    @Argument(help: "The vendor to emulate.") var vendor: String
    @Option(help: "Address to listen on.") var host = "127.0.0.1"
    @Option(help: "Port to listen on; 0 picks a free one.") var port = 0
    @Option(name: .customLong("app-key"), help: "App key the sandbox accepts.") var appKey = "sandbox-app-key"
    @Option(name: .customLong("app-secret"), help: "App secret (or master secret) the sandbox signs and verifies with.") var appSecret = "sandbox-app-secret"
    @Option(name: .customLong("callback-url"), help: "Where the sandbox delivers the vendor's callbacks.") var callbackURL: String?
    @Option(name: .customLong("state"), help: "SQLite file to keep state in (default: in memory).") var statePath: String?
    @Option(name: .customLong("option"), help: "Vendor-specific setting as key=value (repeatable).") var extra: [String] = []

    func run() async throws {
        guard let sandbox = Vendors.named(vendor)?.sandbox else {
            throw ValidationError("unknown vendor '\(vendor)'; known: \(Vendors.names.joined(separator: ", "))")
        }
        var settings: [String: String] = [:]
        for pair in extra {
            guard let equals = pair.firstIndex(of: "=") else { throw ValidationError("--option expects key=value, got '\(pair)'") }
            settings[String(pair[..<equals])] = String(pair[pair.index(after: equals)...])
        }
        let options = SandboxOptions(host: host, port: port, appKey: appKey, appSecret: appSecret, callbackURL: callbackURL,
                                     statePath: statePath, extra: settings)
        let server = try await sandbox.make(options)
        let port = try await server.start()
        FileHandle.standardOutput.write(Data("listening on http://\(host):\(port)\n".utf8))
        let group = ServiceGroup(configuration: ServiceGroupConfiguration(
            services: [.init(service: StopOnShutdown { await server.stop() })], gracefulShutdownSignals: [.sigterm, .sigint],
            logger: Logger(label: "imbridge.sandbox")))
        try await group.run()
    }
}

