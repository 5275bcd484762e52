import IMAdapterKit
import IMCore
import IMMapping
import IMRelay
import IMStore
import IMVendors

/// What building a configured backend needs besides its own settings.
public struct BackendContext: Sendable {
    public var store: BridgeStore
    public var registry: ContentRegistry
    /// True for `imbridge check`: build and validate, but contact no vendor.
    public var validateOnly: Bool
    /// The content mappings (shipped tables + the config's `mappings:` directory).
    public var mappings: MappingSet

    public init(store: BridgeStore, registry: ContentRegistry, validateOnly: Bool = false, mappings: MappingSet = .shipped) {
        self.store = store
        self.registry = registry
        self.validateOnly = validateOnly
        self.mappings = mappings
    }
}

/// Builds configured backends through the registry's adapter descriptors; `imbridge check` uses the
/// same path, so a setting an adapter needs is validated before anything runs.
public enum BackendFactories {
    public static func make(_ config: BackendConfig, context: BackendContext) async throws -> any VendorBackend {
        guard let vendor = Vendors.named(config.adapter) else {
            throw config.error("adapter", "adapter '\(config.adapter)' is not built into this imbridge (available: \(Vendors.names.joined(separator: ", ")))")
        }
        var values = config.settings
        values.removeValue(forKey: "adapter")
        let adapterContext = AdapterContext(registry: context.registry, mapping: context.mappings.table(vendor.name),
                                            checkpoints: StoreCheckpoints(store: context.store), validateOnly: context.validateOnly)
        do {
            return try await vendor.adapter.makeBackend(id: config.name, settings: values, context: adapterContext)
        } catch let error as IMError {
            guard let key = error.details["setting"] else { throw error }
            throw config.error(key, error.message)
        }
    }
}

/// A polling adapter's position in the bridge store's checkpoints table.
struct StoreCheckpoints: CheckpointStorage {
    let store: BridgeStore
    func checkpoint(named name: String) async throws -> String? { try store.read { try $0.checkpoint(name) } }
    func setCheckpoint(named name: String, to value: String) async throws {
        try store.transaction { try $0.setCheckpoint(name, value, at: SystemClock().nowMs()) }
    }
}
