import Foundation
import IMAdapterKit
import IMCore
import IMConfig
import IMMapping
import IMRelay
import IMStore
import IMVendors
import Logging

/// The one validation `imbridge check` and `imbridge run` share: the YAML and its keys
/// (`BridgeConfig`), the store's access, the mappings, and every backend built as `run` would build it
/// (adapter settings, unauthenticated callbacks, freshness windows), contacting no vendor. Every problem
/// is collected and thrown at once (`ConfigProblems`), one `FILE:LINE: key: reason` line each.
public enum ConfigCheck {
    /// `receivesCallbacks: false` for a command that takes no callbacks (`imbridge migrate`): settings
    /// only callbacks need are not required.
    public static func load(path: String, requireRoutes: Bool = true, receivesCallbacks: Bool = true,
                            environment: [String: String] = ProcessInfo.processInfo.environment) async throws -> (config: BridgeConfig, mappings: MappingSet) {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw IMError(.notFound, "cannot read config file \(path)")
        }
        let yaml = String(decoding: data, as: UTF8.self)
        var problems = ConfigProblems()
        guard var config = BridgeConfig.parse(yaml, file: path, environment: environment,
                                              requireRoutes: requireRoutes, adapters: Set(Vendors.names), checkStoreAccess: true,
                                              problems: &problems) else {
            try problems.throwIfAny()
            throw IMError(.invalidArgument, "\(path): cannot be read as a configuration")
        }
        // Deprecated adapter settings (`timeout_seconds`) join the file's own deprecation warnings.
        for backend in config.backends {
            guard let vendor = Vendors.named(backend.adapter) else { continue }
            config.warnings += AdapterSettings.warnings(backend.settings, schema: vendor.adapter.settings, backend: backend.name,
                                                        source: backend.source)
        }
        let mappings = problems.attempt { try config.loadMappings() } ?? .shipped
        // A scratch store for the adapters' checkpoints interface; nothing is written to it.
        let scratch = FileManager.default.temporaryDirectory.appendingPathComponent("imbridge-check-\(UUID().uuidString).sqlite").path
        defer {
            for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: scratch + suffix) }
        }
        if !config.backends.isEmpty {
            let context = BackendContext(store: try BridgeStore(path: scratch), registry: ContentRegistry(), validateOnly: true,
                                         mappings: mappings, ledgerRetentionMs: config.ledgerRetentionMs, receivesCallbacks: receivesCallbacks)
            for backend in config.backends {
                do {
                    _ = try await BackendFactories.make(backend, context: context)
                } catch {
                    problems.add(error)
                }
            }
        }
        // Every problem, whoever wrote it, with every secret the configuration holds hidden: those of
        // each backend, the store's password, each `${NAME}`'s value (docs/architecture.md, "Secrets in errors and logs").
        var redactor = BridgeConfig.redactor(yaml: yaml, environment: environment)
        for backend in config.backends {
            redactor.merge(BackendFactories.redactor(for: backend, schema: Vendors.named(backend.adapter)?.adapter.settings ?? []))
        }
        for secret in Bridge.secrets(of: config, environment: environment) { redactor.addSecret(secret) }
        problems.redact(with: redactor)
        try problems.throwIfAny()
        return (config, mappings)
    }

    /// Logs each of `config`'s warnings (deprecated keys) once, as `warning` lines.
    public static func logWarnings(of config: BridgeConfig, to logger: Logger = Logger(label: "imbridge.config")) {
        for warning in config.warnings { logger.warning("\(warning)") }
    }
}
