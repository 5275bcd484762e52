import IMCore
import IMRelay
import IMStore

/// What an adapter factory gets besides its own settings.
struct BackendContext: Sendable {
    var store: BridgeStore
    var registry: ContentRegistry
}

/// Builds configured backends by adapter name. Each adapter adds its entry; `imbridge check` uses the
/// same factories, so a setting an adapter needs is validated before anything runs.
enum BackendFactories {
    typealias Factory = @Sendable (BackendConfig, BackendContext) async throws -> any IMBackend

    static let factories: [String: Factory] = [
        "jmessage": { try await JMessageBackendFactory.make($0, $1) },
    ]

    static func make(_ config: BackendConfig, context: BackendContext) async throws -> any IMBackend {
        guard let factory = factories[config.adapter] else {
            throw config.error("adapter", "adapter '\(config.adapter)' is not built into this imbridge yet (available: \(factories.keys.sorted().joined(separator: ", ")))")
        }
        return try await factory(config, context)
    }
}
