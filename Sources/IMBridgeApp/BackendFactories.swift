import IMAdapterKit
import IMCore
import IMConfig
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
    /// Whether this instance is the leader (the JMessage report poller polls only then); nil: always.
    public var leadership: Leadership?
    /// `retention` in ms (nil: the ledger keeps everything); see `AdapterContext.ledgerRetentionMs`.
    public var ledgerRetentionMs: Int64?
    /// False for a command that takes no callbacks (`AdapterContext.receivesCallbacks`).
    public var receivesCallbacks: Bool
    /// Every configured secret (`AdapterContext.secrets`, `Bridge.secretMask(of:)`).
    public var secrets: SecretMask

    public init(store: BridgeStore, registry: ContentRegistry, validateOnly: Bool = false, mappings: MappingSet = .shipped,
                leadership: Leadership? = nil, ledgerRetentionMs: Int64? = nil, receivesCallbacks: Bool = true,
                secrets: SecretMask = SecretMask()) {
        self.store = store
        self.secrets = secrets
        self.receivesCallbacks = receivesCallbacks
        self.ledgerRetentionMs = ledgerRetentionMs
        self.leadership = leadership
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
        let described = config.substituted.mapValues(ConfigNode.describeSubstitution)
        let redactor = redactor(for: config, schema: vendor.adapter.settings)
        // Every schema problem at once, each at its own line; then what the adapter itself checks.
        var problems = ConfigProblems()
        for problem in AdapterSettings.problems(values, maps: config.maps, schema: vendor.adapter.settings, described: described,
                                                backend: config.name, source: config.source) {
            problems.add(problem)
        }
        problems.redact(with: redactor)
        try problems.throwIfAny()
        let adapterContext = AdapterContext(registry: context.registry, mapping: context.mappings.table(vendor.name),
                                            checkpoints: StoreCheckpoints(store: context.store, leadership: context.leadership),
                                            notes: StoreCheckpoints(store: context.store), validateOnly: context.validateOnly,
                                            ledgerRetentionMs: context.ledgerRetentionMs, receivesCallbacks: context.receivesCallbacks,
                                            secrets: context.secrets)
        do {
            return try await vendor.adapter.makeBackend(id: config.name, settings: values, maps: config.maps, context: adapterContext,
                                                        described: described, source: config.source)
        } catch let error as IMError {
            throw redactor.redact(error)
        }
    }

    /// What no error about `config` may show: its secret settings' values, the tokens of token lists
    /// (`session_tokens`) as `***`, and each value that came from the environment as `the value of
    /// ${NAME}` (docs/architecture.md, "Secrets in errors and logs").
    public static func redactor(for config: BackendConfig, schema: [SettingSpec]) -> ConfigRedactor {
        var redactor = ConfigRedactor()
        for (key, raw) in config.substituted {
            if let value = config.settings[key] { redactor.add(value, shownAs: ConfigNode.describeSubstitution(raw)) }
        }
        for spec in schema {
            if Bridge.isTokenList(spec) { config.maps[spec.key]?.values.forEach { redactor.addSecret($0) } }
            guard let value = config.settings[spec.key], !value.isEmpty else { continue }
            if spec.isSecret || Bridge.isTokenList(spec) { redactor.addSecret(value) }
        }
        return redactor
    }
}

/// A polling adapter's position in the bridge store's checkpoints table. With several instances on one
/// store, only the leader polls: reading or writing the position waits until this instance is the leader
/// (one that lost the lead finishes at most the page in hand; the ledger dedupes what both fetched).
/// See docs/high-availability.md.
struct StoreCheckpoints: CheckpointStorage {
    let store: BridgeStore
    var leadership: Leadership? = nil
    func checkpoint(named name: String) async throws -> String? {
        try await leadership?.waitUntilLeader()
        return try await store.reading { try $0.checkpoint(name) }
    }
    func setCheckpoint(named name: String, to value: String) async throws {
        try await leadership?.waitUntilLeader()
        try await store.writing { try $0.setCheckpoint(name, value, at: SystemClock().nowMs()) }
    }
}
