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
        FileHandle.standardOutput.write(Data(out.utf8))
    }

    func describe(_ mode: UserMode) -> String {
        switch mode {
        case .puppet(let prefix): "puppet(\(prefix)…)"
        case .relay(let account, _): "relay(\(account))"
        }
    }
}

/// `imbridge deadletters list|retry --config FILE`: what could not be relayed, and putting it back.
struct DeadLettersCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "deadletters", abstract: "List or retry dead letters.",
                                                    subcommands: [List.self, Retry.self])

    struct List: AsyncParsableCommand {
        @Option(name: .long, help: "The bridge configuration (YAML).") var config: String
        func run() async throws {
            let store = try BridgeStore(path: try BridgeConfig.load(path: config).store)
            let letters = try store.read { try $0.deadLetters() }
            var out = "\(letters.count) dead letter(s)\n"
            for letter in letters {
                out += "  #\(letter.id) \(letter.lane) \(letter.kind) from \(letter.sourceBackend)/\(letter.sourceEventID) attempts=\(letter.attempts): \(letter.lastError ?? "")\n"
            }
            FileHandle.standardOutput.write(Data(out.utf8))
        }
    }

    struct Retry: AsyncParsableCommand {
        @Option(name: .long, help: "The bridge configuration (YAML).") var config: String
        @Option(name: .long, help: "Only these dead letters (repeatable); all when omitted.") var id: [Int64] = []
        func run() async throws {
            let store = try BridgeStore(path: try BridgeConfig.load(path: config).store)
            let count = try store.transaction { try $0.retryDeadLetters(ids: id.isEmpty ? nil : id) }
            FileHandle.standardOutput.write(Data("\(count) dead letter(s) back in their lanes; a running bridge picks them up within a second\n".utf8))
        }
    }
}
