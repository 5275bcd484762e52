import IMCore
import IMMapping
import IMRelay
import IMStore
import JMessage
import RongCloud
import NIM
import WuKong

/// What an adapter factory gets besides its own settings.
public struct BackendContext: Sendable {
    public var store: BridgeStore
    public var registry: ContentRegistry
    /// True for `imbridge check`: build and validate, but contact no vendor.
    public var validateOnly: Bool
    /// The content mappings (shipped tables + the config's `mappings:` directory).
    public var mappings: MappingSet
    /// Whether this instance is the leader (the JMessage report poller polls only then); nil: always.
    public var leadership: Leadership?

    public init(store: BridgeStore, registry: ContentRegistry, validateOnly: Bool = false, mappings: MappingSet = .shipped,
                leadership: Leadership? = nil) {
        self.store = store
        self.leadership = leadership
        self.registry = registry
        self.validateOnly = validateOnly
        self.mappings = mappings
    }
}

/// Builds configured backends by adapter name. Each adapter adds its entry; `imbridge check` uses the
/// same factories, so a setting an adapter needs is validated before anything runs.
public enum BackendFactories {
    public typealias Factory = @Sendable (BackendConfig, BackendContext) async throws -> any IMBackend

    public static let factories: [String: Factory] = [
        "jmessage": { try await JMessageBackendFactory.make($0, $1) },
        "rongcloud": { config, context in
            do {
                return RongCloudBackend(try .init(id: config.name, settings: config.settings, registry: context.registry,
                                                  mapping: context.mappings.table("rongcloud")))
            } catch let error as IMError {
                throw config.error(error.details["setting"] ?? "adapter", error.message)
            }
        },
        "nim": { config, context in
            do {
                return try NIMSettings.makeBackend(id: config.name, settings: config.settings, registry: context.registry,
                                                   mapping: context.mappings.table("nim"))
            } catch let error as IMError {
                guard let key = error.details["setting"] else { throw error }
                throw config.error(key, error.message)
            }
        },
        "wukong": { config, context in
            do {
                return WuKongBackend(configuration: try .init(id: config.name, settings: config.settings), registry: context.registry,
                                     mapping: context.mappings.table("wukong"))
            } catch let error as IMError {
                throw config.error(error.details["setting"] ?? "adapter", error.message)
            }
        },
    ]

    public static func make(_ config: BackendConfig, context: BackendContext) async throws -> any IMBackend {
        guard let factory = factories[config.adapter] else {
            throw config.error("adapter", "adapter '\(config.adapter)' is not built into this imbridge yet (available: \(factories.keys.sorted().joined(separator: ", ")))")
        }
        return try await factory(config, context)
    }
}
