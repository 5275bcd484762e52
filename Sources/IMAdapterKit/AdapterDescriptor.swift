import IMCore
import IMMapping
import Synchronization

/// What a backend gets from the process that builds it, besides its own settings.
public struct AdapterContext: Sendable {
    /// The app's registered custom content types.
    public var registry: ContentRegistry
    /// This vendor's compiled mapping table (shipped file + the deployment's overrides).
    public var mapping: VendorTable
    /// Durable named positions (the bridge store's checkpoints), for adapters that poll.
    public var checkpoints: any CheckpointStorage
    /// Durable notes an adapter keeps about what it did on its vendor (the bridge store's checkpoints
    /// table too, under the adapter's own names), read and written by any instance — unlike
    /// `checkpoints`, never waiting to lead: JMessage's uploads of media given as URLs.
    public var notes: any CheckpointStorage
    public var clock: any IMClock
    /// True for `imbridge check`: build and validate, contact no vendor.
    public var validateOnly: Bool
    /// How long the bridge's ledger remembers a received event id (`retention`); nil: for ever.
    /// An adapter whose callbacks carry a timestamp refuses callbacks older than half of it, so a
    /// captured callback cannot be replayed once the ledger has forgotten it (`freshnessLimitMs`).
    public var ledgerRetentionMs: Int64?
    /// False for a command that takes no callbacks (`imbridge migrate`): what only the vendor's callbacks
    /// need (WuKong's `webhook_secret`) is not asked for.
    public var receivesCallbacks: Bool
    /// Every configured secret of the process (all backends, the store), masked in whatever this backend's
    /// vendor answers besides its own credentials (`HTTPClientWrapper.secrets`; docs/operations.md,
    /// "Secrets a vendor echoes").
    public var secrets: SecretMask

    public init(registry: ContentRegistry = ContentRegistry(), mapping: VendorTable,
                checkpoints: any CheckpointStorage = InMemoryCheckpointStorage(), notes: any CheckpointStorage = InMemoryCheckpointStorage(),
                clock: any IMClock = SystemClock(), validateOnly: Bool = false, ledgerRetentionMs: Int64? = nil,
                receivesCallbacks: Bool = true, secrets: SecretMask = SecretMask()) {
        self.notes = notes
        self.receivesCallbacks = receivesCallbacks
        self.secrets = secrets
        self.registry = registry
        self.mapping = mapping
        self.checkpoints = checkpoints
        self.clock = clock
        self.validateOnly = validateOnly
        self.ledgerRetentionMs = ledgerRetentionMs
    }

    /// The widest freshness window (ms, compared as |now − callback time|) that keeps replays out:
    /// a callback first accepted at time R carries a time T ≤ R + W; its ledger row goes at
    /// R + retention; a replay at X > R + retention then has X − T > retention − W, which the window
    /// refuses when W ≤ retention / 2. Nil when the ledger keeps everything. See docs/configuration.md, "What `check`
    /// and `run` refuse", and docs/adapters/nim.md §3.
    public var freshnessLimitMs: Int64? { ledgerRetentionMs.map { $0 / 2 } }
}

/// One vendor's adapter as the rest of IMBridge sees it: its name (the `adapter:` value in
/// `bridge.yaml` and the stem of its mapping file), what it can do, the settings it takes, and how
/// to build a backend from them. Each adapter publishes one (`WuKongAdapter.descriptor` …); the
/// registry (`IMVendors`) lists them.
public struct AdapterDescriptor: Sendable {
    /// `wukong`, `rongcloud`, `nim`, `jmessage`: the `adapter:` value and the mapping file's stem.
    public var name: String
    /// The vendor's own name for people (`WuKongIM`, `RongCloud` …).
    public var displayName: String
    /// What the vendor's server API can do before settings narrow it (`Capabilities` presets).
    public var capabilities: Capabilities
    /// Every setting the adapter reads.
    public var settings: [SettingSpec]
    /// Builds a backend; settings were checked against `settings` already. A value the schema cannot
    /// judge alone is refused with `AdapterSettings.refuse` (`FILE:LINE: backends.<name>.<key>: reason`).
    public var make: @Sendable (AdapterSettings, AdapterContext) async throws -> any VendorBackend
    /// The vendor's content codec with default settings (for tools and tests that work on bodies alone).
    public var contentCodec: @Sendable (ContentRegistry, VendorTable) -> any ContentCodec
    /// The vendor's error codes: what the adapter maps each to, and what its sandbox answers with.
    public var errors: VendorErrorTable

    public init(name: String, displayName: String, capabilities: Capabilities, settings: [SettingSpec],
                contentCodec: @escaping @Sendable (ContentRegistry, VendorTable) -> any ContentCodec,
                errors: VendorErrorTable,
                make: @escaping @Sendable (AdapterSettings, AdapterContext) async throws -> any VendorBackend) {
        self.name = name
        self.displayName = displayName
        self.capabilities = capabilities
        self.settings = settings
        self.contentCodec = contentCodec
        self.errors = errors
        self.make = make
    }

    /// Checks `values` (and the settings written as mappings, `maps`) against the schema and builds the
    /// backend. `described`: how errors name the values they must not quote (`AdapterSettings.described`);
    /// `source`: where they were written.
    public func makeBackend(id: BackendID, settings values: [String: String], maps: [String: [String: String]] = [:],
                            context: AdapterContext, described: [String: String] = [:],
                            source: SettingsSource = SettingsSource()) async throws -> any VendorBackend {
        try await make(try AdapterSettings(backend: id, values: values, maps: maps, schema: settings, described: described, source: source),
                       context)
    }

    /// The mapping file of this vendor in `mappings/`.
    public var mappingFile: String { "\(name).yaml" }
}

/// Where a polling adapter keeps its position: a string value by name. The bridge backs it with the
/// store's checkpoints table; tests use `InMemoryCheckpointStorage`.
///
/// Contract: `set` is durable when it returns; `get` returns the last value set under that name
/// (nil if none). Names are the caller's (the JMessage poller uses `jmessage.<backend>.poller`).
public protocol CheckpointStorage: Sendable {
    func checkpoint(named name: String) async throws -> String?
    func setCheckpoint(named name: String, to value: String) async throws
}

/// The in-memory twin of `CheckpointStorage`; share one instance to simulate a restart.
public final class InMemoryCheckpointStorage: CheckpointStorage {
    private let values = Mutex<[String: String]>([:])
    public init() {}
    public func checkpoint(named name: String) async throws -> String? { values.withLock { $0[name] } }
    public func setCheckpoint(named name: String, to value: String) async throws { values.withLock { $0[name] = value } }
}
