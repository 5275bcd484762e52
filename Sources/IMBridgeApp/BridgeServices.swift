import Foundation
import IMAdapterKit
import IMCore
import IMMapping
import IMRelay
import IMServer
import IMStore
import IMVendors
import Logging
import ServiceLifecycle
import Synchronization
import UnixSignals
import IMCatchUp
import IMVerify

/// `imbridge run`: the bridge's parts as swift-service-lifecycle `Service`s in one `ServiceGroup`
/// (docs/architecture.md, "Running: services and shutdown").
///
/// Services, in start order (a graceful shutdown stops them in reverse):
/// 0. the span exporter (`tracing:`, `TracingExporter`), stopped last so the drain's spans are sent;
/// 1. the admin listener (`admin_listen`), stopped last so `/healthz` and `/metrics` answer during the drain;
/// 2. the engine (lane scheduler, leases): on shutdown it drains — lanes finish the send in hand — for
///    at most what is left of `shutdown.drain`, then cuts the rest off (their entries stay in
///    the outbox) and releases its leader lease;
/// 3. pruning (leader only);
/// 4. intake of the backends that fetch on their own (the JMessage report poller);
/// 5. catch-up from history (`catch_up:`; its loop starts before the listeners bind), and the scheduled
///    audits (`verify:`) when configured;
/// 6. the callback listener, stopped first: it stops accepting, answers the requests it holds, closes.
///
/// The first SIGTERM or SIGINT starts that graceful shutdown; a second one exits at once (status 130):
/// whatever was not sent stays in the outbox, as after a crash.
extension Bridge {
    /// Runs until a signal (or a service failing) stops it. The listeners bind first, so a taken port
    /// is reported (with its reason) before anything else starts.
    public func run(logger: Logger = Logger(label: "imbridge.lifecycle")) async throws {
        let drainMs = config.shutdown.drain.milliseconds
        // Before anything that makes spans; its service is first, so it is stopped (its spans flushed) last.
        let tracing = try TracingExporter.start(config.tracing, logger: logger)
        // Trapped before the listeners bind: a SIGTERM the moment the bridge answers is held until the
        // services run and then starts the graceful shutdown, instead of ending the process by the
        // signal's default action (exit status 15) in the middle of its start.
        let trapped = await UnixSignalsSequence(trapping: .sigterm, .sigint)
        try await startCatchUpAndListeners()
        logStartupSummary(logger)
        let deadline = DrainDeadline(drainMs: drainMs)
        var services: [ServiceGroupConfiguration.ServiceConfiguration] = []
        if let tracing { services.append(.init(service: tracing)) }
        if let adminListener { services.append(.init(service: ListenerService(listener: adminListener, role: "admin", logger: logger, deadline: deadline))) }
        services.append(.init(service: EngineService(engine: engine, deadline: deadline, logger: logger)))
        services.append(.init(service: PruneService(engine: engine)))
        services.append(.init(service: IntakeService(engine: engine, sources: backends, logger: logger)))
        if let catchUp { services.append(.init(service: CatchUpService(runner: catchUp, deadline: deadline, logger: logger))) }
        if let audit { services.append(.init(service: AuditService(audit: audit))) }
        services.append(.init(service: ListenerService(listener: listener, role: "callbacks", logger: logger, deadline: deadline)))
        var configuration = ServiceGroupConfiguration(services: services, logger: logger)
        // A backstop only: each service keeps the drain deadline itself (plus a second or two,
        // `finishes(within:)`), one after the other; this cancels one that still does not return.
        configuration.maximumGracefulShutdownDuration = .milliseconds(drainMs + 10_000)
        configuration.maximumCancellationDuration = .seconds(2)
        let group = ServiceGroup(configuration: configuration)
        let signals = Task {
            var count = 0
            for await signal in trapped {
                count += 1
                if count == 1 {
                    deadline.begin()
                    logger.notice("shutting down: intake stops, in-flight sends may finish (a second signal exits at once)",
                                  metadata: ["signal": "\(signal)", "drain": "\(config.shutdown.drain)"])
                    await group.triggerGracefulShutdown()
                } else {
                    logger.warning("second signal: exiting at once; unsent entries stay in the outbox for the next start",
                                   metadata: ["signal": "\(signal)"])
                    exit(130)
                }
            }
        }
        defer { signals.cancel() }
        try await group.run()
    }

    /// One line saying what runs: version, store (kind and location, password hidden), listeners with
    /// their ports, backends, routes, logging and drain settings; then one line per route.
    func logStartupSummary(_ logger: Logger) {
        let location = (try? StoreLocation(parsing: config.store))?.redacted ?? "(unreadable)"
        var metadata: Logger.Metadata = [
            "version": "\(IMBridgeVersion.text)",
            "store": "\(store.kind.rawValue) \(location)",
            "listen": "\(listener.baseURL)",
            "backends": .array(config.backends.map { "\($0.name)=\($0.adapter)" }),
            "routes": "\(config.routes.count)",
            "log_level": "\(config.log.level.rawValue)",
            "drain": "\(config.shutdown.drain)",
            "listener_limits": "header \(config.listenerLimits.headerTimeout.components.seconds) s, body \(config.listenerLimits.bodyTimeout.components.seconds) s, idle \(config.listenerLimits.idleTimeout.components.seconds) s, max \(config.listenerLimits.maxConnections) connections",
        ]
        if !config.listenerLimits.allowedSources.isEmpty {
            metadata["allow_from"] = "\(config.listenerLimits.allowedSources.map(\.description).joined(separator: ", "))"
        }
        metadata["admin_listen"] = adminListener.map { "\($0.baseURL)" } ?? "(none: /healthz, /readyz, /metrics, /status on listen)"
        logger.info("imbridge started", metadata: metadata)
        for (index, route) in config.routes.enumerated() {
            logger.info("route", metadata: ["index": "\(index)", "from": "\(route.from)", "to": "\(route.to)",
                                            "direction": "\(route.direction.rawValue)"])
        }
    }

    /// Whether `spec` is a map of tokens (`session_tokens`: `uid: token` lines), whose values are secrets.
    static func isTokenList(_ spec: SettingSpec) -> Bool {
        if case .pairs = spec.kind { return spec.key.contains("token") }
        return false
    }

    /// The values `BridgeLogHandler` redacts: every adapter setting its schema marks secret, the values
    /// of token lists (`session_tokens`), the password of a URL setting (`https://user:password@…`),
    /// and the store's password — each also in the forms it travels in (`SecretMask`: URL-encoded,
    /// base64, and with the backend's `app_key` as HTTP Basic credentials).
    public static func secrets(of config: BridgeConfig,
                               environment: [String: String] = ProcessInfo.processInfo.environment) -> [String] {
        let (secrets, pairs) = configuredSecrets(of: config, environment: environment)
        return secrets + SecretMask(secrets, pairs: pairs).forms
    }

    /// The mask every adapter reads its vendor's answers through (`AdapterContext.secrets`): the secrets of
    /// `secrets(of:)` and their forms.
    public static func secretMask(of config: BridgeConfig,
                                  environment: [String: String] = ProcessInfo.processInfo.environment) -> SecretMask {
        let (secrets, pairs) = configuredSecrets(of: config, environment: environment)
        return SecretMask(secrets, pairs: pairs)
    }

    static func configuredSecrets(of config: BridgeConfig, environment: [String: String])
        -> (secrets: [String], pairs: [(user: String, password: String)]) {
        var secrets: [String] = []
        var pairs: [(user: String, password: String)] = []
        for backend in config.backends {
            for spec in Vendors.named(backend.adapter)?.adapter.settings ?? [] {
                if isTokenList(spec) { secrets += backend.maps[spec.key]?.values.filter { !$0.isEmpty } ?? [] }
                guard let value = backend.settings[spec.key], !value.isEmpty else { continue }
                if spec.isSecret {
                    secrets.append(value)
                    if let key = backend.settings["app_key"], !key.isEmpty { pairs.append((key, value)) }
                }
                if isTokenList(spec) {
                    for pair in value.split(separator: ",") {
                        if let equals = pair.firstIndex(of: "=") { secrets.append(String(pair[pair.index(after: equals)...])) }
                    }
                }
                if case .url = spec.kind {
                    for url in value.split(separator: ",") {
                        guard let password = URLComponents(string: url.trimmingCharacters(in: .whitespaces))?.password, !password.isEmpty else { continue }
                        secrets.append(password)
                        if let decoded = password.removingPercentEncoding { secrets.append(decoded) }
                    }
                }
            }
        }
        if let password = (try? StoreLocation(parsing: config.store, environment: environment))?.password {
            secrets.append(password)
            if let encoded = password.addingPercentEncoding(withAllowedCharacters: .urlPasswordAllowed) { secrets.append(encoded) }
        }
        return (secrets, pairs)
    }
}

/// The version the startup line shows.
public enum IMBridgeVersion {
    public static var text: String { "\(MappingSet.buildVersion.version) (commit \(MappingSet.buildVersion.commit))" }
}

/// When the drain began (the first signal) and how much of it is left.
final class DrainDeadline: Sendable {
    let drainMs: Int64
    let clock: any IMClock
    private let began = Mutex<Int64?>(nil)

    init(drainMs: Int64, clock: any IMClock = SystemClock()) {
        self.drainMs = drainMs
        self.clock = clock
    }

    func begin() { began.withLock { if $0 == nil { $0 = clock.nowMs() } } }

    var remainingMs: Int64 {
        begin()
        let start = began.withLock { $0 } ?? clock.nowMs()
        return max(0, drainMs - (clock.nowMs() - start))
    }
}

/// A started listener: stops (no new connections, the requests it holds answered) at shutdown.
struct ListenerService: Service {
    let listener: BridgeListener
    let role: String
    let logger: Logger
    let deadline: DrainDeadline

    func run() async throws {
        if listener.port == nil { try await listener.start() }
        try? await gracefulShutdown()
        // The server waits for the requests in progress; one that never ends (a store call stuck on a
        // connection) must not keep the process past the drain: the service group would trap.
        if await finishes(within: deadline.remainingMs + 2_000, { await listener.stop() }) {
            logger.info("listener stopped", metadata: ["role": "\(role)", "listen": "\(listener.baseURL)"])
        } else {
            logger.warning("listener still had requests in progress at the drain deadline: they are cut off at exit (the vendors redeliver)",
                           metadata: ["role": "\(role)", "listen": "\(listener.baseURL)"])
        }
    }
}

/// Runs `work` and waits for it at most `ms`; false when it was still running then (it goes on,
/// unawaited, until the process exits). Neither wait is cancellable from outside, so the deadline is
/// what bounds it: a service must return in time after shutdown begins, or `ServiceGroup` traps.
func finishes(within ms: Int64, _ work: @escaping @Sendable () async -> Void) async -> Bool {
    let once = FirstOutcome()
    return await withCheckedContinuation { (continuation: CheckedContinuation<Bool, Never>) in
        Task { await work(); if once.claim() { continuation.resume(returning: true) } }
        Task {
            try? await Task.sleep(nanoseconds: UInt64(max(0, ms)) * 1_000_000)
            if once.claim() { continuation.resume(returning: false) }
        }
    }
}

/// Which of two racing tasks resumes a continuation: the first to claim.
private final class FirstOutcome: Sendable {
    private let claimed = Mutex(false)
    func claim() -> Bool {
        claimed.withLock { done in
            defer { done = true }
            return !done
        }
    }
}

/// The relay engine's scheduler and lanes; drains at shutdown within the deadline.
struct EngineService: Service {
    let engine: RelayEngine
    let deadline: DrainDeadline
    let logger: Logger

    func run() async throws {
        await engine.start(pruning: false)
        try? await gracefulShutdown()
        // Bounded like the listeners: the lanes' drain keeps the deadline itself, but a lane or the count
        // below stuck on the store (a connection that stopped answering) must not keep the service past
        // it, or the service group traps (status 4) instead of exiting.
        let outcome = Mutex<(RelayEngine.StopReport, Int?)?>(nil)
        let finished = await finishes(within: deadline.remainingMs + 1_000) { [engine, deadline] in
            let report = await engine.stop(drainMs: deadline.remainingMs)
            let pending = try? await engine.store.reading { try $0.count(state: .pending) }
            outcome.withLock { $0 = (report, pending) }
        }
        guard finished, let (report, pending) = outcome.withLock({ $0 }) else {
            logger.warning("relay still stopping at the drain deadline (a store call did not answer): left unfinished; the unfinished entries stay in the outbox")
            return
        }
        var metadata: Logger.Metadata = [
            "lanes_in_flight": "\(report.lanesInFlight)", "lanes_cut_off": "\(report.lanesCutOff)",
            "drain_ms": "\(report.elapsedMs)", "drain_limit_ms": "\(deadline.drainMs)",
        ]
        if let pending { metadata["pending_entries"] = "\(pending)" }
        if report.lanesCutOff > 0 {
            logger.warning("relay stopped at the drain deadline; the unfinished entries stay in the outbox", metadata: metadata)
        } else {
            logger.notice("relay stopped: every send in flight finished", metadata: metadata)
        }
    }
}

/// Finished work pruned once a minute while this instance leads (`RelayEngine.pruneLoop`).
struct PruneService: Service {
    let engine: RelayEngine

    func run() async throws {
        guard engine.retentionMs != nil else {
            try? await gracefulShutdown()   // a service that returns would stop the group
            return
        }
        let loop = Task { [engine] in await engine.pruneLoop() }
        try? await gracefulShutdown()
        loop.cancel()
        // A prune under way runs one store statement at a time; one that does not answer is left behind.
        _ = await finishes(within: 1_000) { await loop.value }
    }
}

/// The backends' own intake (pollers): started with the group, stopped before the engine drains.
struct IntakeService: Service {
    let engine: RelayEngine
    let sources: [any VendorBackend]
    let logger: Logger

    func run() async throws {
        try await engine.startIntake(sources)
        try? await gracefulShutdown()
        if await finishes(within: 2_000, { [engine] in await engine.stopIntake() }) {
            logger.info("intake stopped")
        } else {
            logger.warning("intake still stopping after 2 s (a poll did not end): left unfinished")
        }
    }
}

/// Catch-up from history (`CatchUpRunner`, started before the listeners): stopped after the callback
/// listener, saving the checkpoints live traffic moved.
struct CatchUpService: Service {
    let runner: CatchUpRunner
    let deadline: DrainDeadline
    let logger: Logger

    func run() async throws {
        try? await gracefulShutdown()
        // A read under way finishes first; one stuck on a vendor or the store is left at the deadline
        // (its conversation is read again from its checkpoint on the next start).
        if await !finishes(within: deadline.remainingMs + 1_000, { await runner.stop() }) {
            logger.warning("catch-up still reading at the drain deadline: left unfinished (read again from its checkpoint on the next start)")
        }
    }
}

/// Scheduled audits (`verify:`): started with the group, stopped on shutdown (an audit under way is cancelled).
struct AuditService: Service {
    let audit: VerifyAudit

    func run() async throws {
        await audit.start()
        try? await gracefulShutdown()
        _ = await finishes(within: 1_000) { await audit.stop() }
    }
}

/// Waits for the group's graceful shutdown, then runs `stop`: what a command that serves until
/// SIGTERM/SIGINT (`imbridge sandbox`) puts in its `ServiceGroup`.
public struct StopOnShutdown: Service {
    let stop: @Sendable () async -> Void

    public init(_ stop: @escaping @Sendable () async -> Void) { self.stop = stop }

    public func run() async throws {
        try? await gracefulShutdown()
        await stop()
    }
}
