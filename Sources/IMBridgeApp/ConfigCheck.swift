import Foundation
import IMCore
import IMMapping
import IMRelay
import IMStore
import IMVendors

/// The one validation `imbridge check` and `imbridge run` share: the YAML and its keys
/// (`BridgeConfig`), the store's access, the mappings, and every backend built as `run` would build it
/// (adapter settings, unauthenticated callbacks, freshness windows), contacting no vendor. Every problem
/// is collected and thrown at once (`ConfigProblems`), one `FILE:LINE: key: reason` line each.
public enum ConfigCheck {
    public static func load(path: String, requireRoutes: Bool = true,
                            environment: [String: String] = ProcessInfo.processInfo.environment) async throws -> (config: BridgeConfig, mappings: MappingSet) {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw IMError(.notFound, "cannot read config file \(path)")
        }
        var problems = ConfigProblems()
        guard let config = BridgeConfig.parse(String(decoding: data, as: UTF8.self), file: path, environment: environment,
                                              requireRoutes: requireRoutes, adapters: Set(Vendors.names), checkStoreAccess: true,
                                              problems: &problems) else {
            try problems.throwIfAny()
            throw IMError(.invalidArgument, "\(path): cannot be read as a configuration")
        }
        let mappings = problems.attempt { try config.loadMappings() } ?? .shipped
        // A scratch store for the adapters' checkpoints interface; nothing is written to it.
        let scratch = FileManager.default.temporaryDirectory.appendingPathComponent("imbridge-check-\(UUID().uuidString).sqlite").path
        defer {
            for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: scratch + suffix) }
        }
        if !config.backends.isEmpty {
            let context = BackendContext(store: try BridgeStore(path: scratch), registry: ContentRegistry(), validateOnly: true,
                                         mappings: mappings, ledgerRetentionMs: config.ledgerRetentionMs)
            for backend in config.backends {
                do {
                    _ = try await BackendFactories.make(backend, context: context)
                } catch {
                    problems.add(error)
                }
            }
        }
        try problems.throwIfAny()
        return (config, mappings)
    }
}
