import IMAdapterKit
import IMCore
import IMRelay
import IMServer
import IMStore
import IMVendors
import Logging
import IMCatchUp
import IMVerify
import IMOutbox
import IMPositions

/// A configured bridge: store, backends, engine and listener, started and stopped together.
public struct Bridge: Sendable {
    public let config: BridgeConfig
    public let store: BridgeStore
    public let backends: [any VendorBackend]
    public let engine: RelayEngine
    /// Callbacks, and (without `admin_listen`) the operator's endpoints.
    public let listener: BridgeListener
    /// `/healthz`, `/readyz`, `/metrics` and the status page on `admin_listen`, when configured; nil otherwise.
    public let adminListener: BridgeListener?
    /// Catch-up from the sources' history (`catch_up:`); nil when turned off.
    public let catchUp: CatchUpRunner?
    /// Scheduled audits (`verify:`, docs/verify.md); nil when `verify.interval` is not set.
    public let audit: VerifyAudit?

    /// `requireRoutes: false` opens a configuration without routes (migration needs only store and backends).
    /// `receivesCallbacks: false` for a command that takes no callbacks (`ConfigCheck.load`).
    public static func open(configPath: String, requireRoutes: Bool = true, receivesCallbacks: Bool = true) async throws -> Bridge {
        let config = try await ConfigCheck.load(path: configPath, requireRoutes: requireRoutes, receivesCallbacks: receivesCallbacks).config
        ConfigCheck.logWarnings(of: config)
        return try await open(config: config, receivesCallbacks: receivesCallbacks)
    }

    /// `httpLogger`: the listeners' HTTP server lines (`imbridge run` passes the bootstrapped one).
    public static func open(config: BridgeConfig, registry: ContentRegistry = ContentRegistry(), listener existing: BridgeListener? = nil,
                            httpLogger: Logger? = nil, receivesCallbacks: Bool = true) async throws -> Bridge {
        let mappings = try config.loadMappings()
        let store = try BridgeStore(path: config.store)
        let leadership = Leadership()
        var backends: [any VendorBackend] = []
        for backend in config.backends {
            backends.append(try await BackendFactories.make(backend, context: BackendContext(store: store, registry: registry, mappings: mappings,
                                                                                             leadership: leadership,
                                                                                             ledgerRetentionMs: config.ledgerRetentionMs,
                                                                                             receivesCallbacks: receivesCallbacks,
                                                                                             secrets: secretMask(of: config))))
        }
        // Change feeds (WuKong's extras) read on from the positions recorded with their changes
        // (docs/architecture.md, "Catch-up of changes").
        if receivesCallbacks {
            for case let feed as any ChangeFeedSource in backends { await feed.useStoredPositions(FeedPositions.Reader(store: store)) }
        }
        let vendors = Dictionary(config.backends.map { ($0.name, $0.adapter) }, uniquingKeysWith: { first, _ in first })
        let engine = RelayEngine(store: store, backends: backends.map { $0 as any IMBackend }, routes: config.routes, retry: config.retry,
                                 retentionMs: config.ledgerRetentionMs,
                                 customFallbacks: CustomTypeFallbacks(mappings: mappings, vendors: vendors),
                                 lease: LeaseSettings(owner: LeaseSettings.uniqueOwner(config.ha.instance), ttlMs: config.ha.lease.milliseconds),
                                 leadership: leadership, backendDownAfterMs: config.readiness.backendFailingMs,
                                 profiles: config.profiles, groups: config.groups)
        let listener = existing ?? BridgeListener(host: config.listenHost, port: config.listenPort, logger: httpLogger,
                                                        limits: config.listenerLimits)
        listener.attach(engine: engine, receivers: Dictionary(backends.map { ($0.id, $0 as any InboundHandling) },
                                                               uniquingKeysWith: { first, _ in first }),
                        serves: config.adminListen == nil ? .all : .callbacks, readiness: config.readiness, status: StatusContext(config: config))
        var admin: BridgeListener?
        if let address = config.adminListen {
            admin = BridgeListener(host: address.host, port: address.port, logger: httpLogger, limits: config.listenerLimits.forAdmin)
            admin?.attach(engine: engine, receivers: [:], serves: .admin, readiness: config.readiness, status: StatusContext(config: config))
        }
        let catchUp = config.catchUp.enabled
            ? CatchUpRunner(engine: engine, backends: backends.map { $0 as any IMBackend }, routes: config.routes, settings: config.catchUp)
            : nil
        let audit = config.verify.intervalMs != nil
            ? VerifyAudit(engine: engine, backends: backends.map { $0 as any IMBackend }, routes: config.routes, settings: config.verify)
            : nil
        return Bridge(config: config, store: store, backends: backends, engine: engine, listener: listener, adminListener: admin,
                      catchUp: catchUp, audit: audit)
    }

    /// Catch-up first (live messages of its sources then wait for its start-up pass), then the callback
    /// and admin listeners unless started beforehand; a failing admin listener stops the callback one.
    func startCatchUpAndListeners() async throws {
        // Before callbacks are taken: live messages of the catch-up sources wait for the start-up catch-up.
        try await catchUp?.start()
        if listener.port == nil { try await listener.start() }
        if let adminListener, adminListener.port == nil {
            do { try await adminListener.start() } catch {
                await listener.stop()
                throw error
            }
        }
    }

    /// Starts listening (unless the listener was started beforehand), relaying, and the backends'
    /// own intake (pollers).
    public func start() async throws {
        try await startCatchUpAndListeners()
        await engine.start()
        try await engine.startIntake(backends)
    }

    /// Stops intake first (the listener), then lets the lanes finish what they hold.
    public func stop() async {
        await listener.stop()
        await catchUp?.stop()
        await engine.stop()
        await adminListener?.stop()
    }
}

