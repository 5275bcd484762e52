import ArgumentParser
import IMBridgeApp
import IMVendors
import Foundation
import IMCore
import IMMapping
import IMRelay
import IMStore

/// `imbridge check --config FILE`: validates the configuration and prints what it would run.
struct CheckCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "check", abstract: "Validate a bridge configuration.")

    @Option(name: .long, help: "The bridge configuration (YAML).") var config: String

    func run() async throws {
        let parsed: BridgeConfig
        do {
            parsed = try BridgeConfig.load(path: config, adapters: Set(Vendors.names))
        } catch let error as IMError {
            throw ValidationError(error.message)
        }
        // Build every backend as `run` would (adapter settings are validated there), contacting no vendor.
        let scratch = FileManager.default.temporaryDirectory.appendingPathComponent("imbridge-check-\(UUID().uuidString).sqlite").path
        defer { try? FileManager.default.removeItem(atPath: scratch) }
        let mappings: MappingSet
        do {
            mappings = try parsed.loadMappings()
        } catch let error as IMError {
            throw ValidationError(error.message)
        }
        let context = BackendContext(store: try BridgeStore(path: scratch), registry: ContentRegistry(), validateOnly: true,
                                     mappings: mappings)
        for backend in parsed.backends {
            do {
                _ = try await BackendFactories.make(backend, context: context)
            } catch let error as IMError {
                throw ValidationError(error.message)
            }
        }
        var out = "config \(config): ok\n  store: \(StoreLocation.redact(parsed.store))\n  listen: \(parsed.listenHost):\(parsed.listenPort)\n"
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
