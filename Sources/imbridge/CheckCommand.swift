import ArgumentParser
import IMBridgeApp
import IMVendors
import Foundation
import IMCore
import IMMapping
import IMRelay
import IMStore
import IMOutbox

/// `imbridge check --config FILE`: validates the configuration and prints what it would run.
struct CheckCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "check", abstract: "Validate a bridge configuration.")

    @Option(name: .long, help: "The bridge configuration (YAML).") var config: String

    func run() async throws {
        let parsed: BridgeConfig
        let mappings: MappingSet
        do {
            (parsed, mappings) = try await ConfigCheck.load(path: config)
        } catch {
            throw ConfigFailure.report(error, config: config)
        }
        ConfigCheck.logWarnings(of: parsed)
        var out = "config \(config): ok\n  store: \(StoreLocation.redact(parsed.store))\n  listen: \(parsed.listenHost):\(parsed.listenPort)\n"
        if let admin = parsed.adminListen { out += "  admin_listen: \(admin.host):\(admin.port) (/healthz, /readyz, /metrics; not on listen)\n" }
        out += "  readiness: " + (parsed.readiness.backendFailingMs.map { "a backend failing for \($0 / 1000) s makes /readyz 503\n" }
            ?? "failing backends ignored (only the store counts)\n")
        out += "  log: \(parsed.log.level.rawValue), \(parsed.log.format.rawValue) lines on standard error (imbridge run --log-level wins)\n"
        out += "  shutdown: in-flight sends may finish for \(parsed.shutdown.drain) after the first SIGTERM/SIGINT\n"
        let limits = parsed.listenerLimits
        out += "  listener: head within \(limits.headerTimeout.components.seconds) s, body within \(limits.bodyTimeout.components.seconds) s, "
            + "idle \(limits.idleTimeout.components.seconds) s, at most \(limits.maxConnections) connections per listener\n"
        if !limits.allowedSources.isEmpty || !limits.adminAllowedSources.isEmpty {
            out += "  sources: listen takes connections from " + (limits.allowedSources.isEmpty ? "anywhere" : limits.allowedSources.map(\.description).joined(separator: ", "))
                + ", admin_listen from " + (limits.adminAllowedSources.isEmpty ? "anywhere" : limits.adminAllowedSources.map(\.description).joined(separator: ", ")) + "\n"
        }
        out += "  mappings: shipped\(parsed.mappings.map { " + \($0)" } ?? "") (\(mappings.customTypes.count) custom types)\n  backends:\n"
        for backend in parsed.backends {
            let built = Vendors.named(backend.adapter) != nil ? "" : " (adapter not built into this binary)"
            out += "    \(backend.name): \(backend.adapter)\(built)\n"
        }
        out += "  routes:\n"
        for route in parsed.routes {
            out += "    \(route.from) \(route.direction == .both ? "<->" : "->") \(route.to) users=\(describe(route.usersOnTarget)) media=\(route.media.rawValue)\n"
        }
        let table = RouteTable(parsed.routes)
        for (first, second) in table.overlaps() {
            out += "  note: routes[\(first)] and routes[\(second)] overlap: a message they both cover is delivered once, through routes[\(first)]\n"
        }
        FileHandle.standardOutput.write(Data(out.utf8))
    }

    func describe(_ mode: UserMode) -> String {
        switch mode {
        case .puppet(let prefix): "puppet(\(prefix)…)"
        case .relay(let account, _): "relay(\(account))"
        }
    }
}
