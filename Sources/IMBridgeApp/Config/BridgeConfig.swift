import Foundation
import IMConfig
import IMCore
import IMHTTP
import IMMapping
import IMRelay
import IMServer
import IMStore
import IMVerify
import IMOutbox
import IMTelemetry
import IMPositions

/// `bridge.yaml`, validated. Every error names the key (and line) it is about. See docs/configuration.md for each key.
///
/// Decoded in one pass: the top level and each section (`retry:`, `ha:` …) by its own decoder through
/// `ConfigSection`, which derives each section's key list from what the decoder reads and collects
/// every problem (and every deprecation warning) with its file and line.
public struct BridgeConfig: Sendable {
    public var store: String
    public var listenHost: String
    public var listenPort: Int
    /// `admin_listen: HOST:PORT`: where `/healthz`, `/readyz` and `/metrics` are served instead of on
    /// `listen` (which then answers only callbacks); nil: everything on `listen`.
    public var adminListen: (host: String, port: Int)?
    /// `readiness.backend_failing`: when `/readyz` counts a failing backend as down.
    public var readiness = ReadinessPolicy()
    public var mappings: String?
    public var backends: [BackendConfig]
    public var routes: [Route]
    public var retry = RetryPolicy()
    /// How long finished outbox rows and ledger rows are kept (`retention`, default `defaultRetention`;
    /// 0 keeps them for ever). See `RelayEngine.prune`.
    public var retention = BridgeConfig.defaultRetention
    public static let defaultRetention = ConfigDuration.days(7)
    /// `retention` in milliseconds; nil when 0 (the ledger keeps everything).
    public var ledgerRetentionMs: Int64? { retention == .zero ? nil : retention.milliseconds }
    /// `ha:`: leases of several instances on one store (docs/high-availability.md).
    public var ha = HASettings()
    /// `catch_up:`: reading sources' history after downtime or a gap (docs/architecture.md, "Catch-up").
    public var catchUp = CatchUpSettings()
    /// `profiles:`: puppets' names and avatars follow their source users' (docs/architecture.md, "Profiles").
    public var profiles = ProfileSettings()
    /// `groups:`: target groups compared again with their source groups (docs/architecture.md, "Groups").
    public var groups = GroupSettings()
    /// `verify:`: scheduled audits of both sides of the routes (docs/verify.md); off by default.
    public var verify = VerifySettings()
    /// `log:` (level and format; `imbridge run --log-level` wins over the level).
    public var log = LogSettings()
    /// `shutdown:`: how long the first SIGTERM/SIGINT lets in-flight sends finish.
    public var shutdown = ShutdownSettings()
    /// `listener:`: what a client may hold of each listener (`ListenerLimits`; docs/configuration.md).
    public var listenerLimits = ListenerLimits()
    /// `tracing:`: spans exported over OTLP (docs/operations.md, "Tracing"); off by default.
    public var tracing = TracingSettings()
    /// One line per deprecated key the file uses (`FILE:LINE: retention_hours is deprecated: write
    /// `retention: 168h``); `ConfigCheck.load` adds those of the adapters' settings, and the command
    /// that loaded the configuration logs each once (`ConfigCheck.logWarnings`).
    public var warnings: [String] = []

    init(store: String = "", listenHost: String = "127.0.0.1", listenPort: Int = 8090, backends: [BackendConfig] = [], routes: [Route] = []) {
        self.store = store
        self.listenHost = listenHost
        self.listenPort = listenPort
        self.backends = backends
        self.routes = routes
    }

    /// Every top-level key (`bridge.yaml`), and those of its sections: what their decoders read
    /// (`ConfigSection.reading`); `examples/bridge.yaml` and docs/configuration.md mention each.
    public static let topLevelKeys = ConfigSection.reading { _ = decode($0, environment: [:], requireRoutes: false, adapters: nil,
                                                                       checkStoreAccess: false) }.keys
    public static let retryKeys = ConfigSection.reading { _ = RetryPolicy.decode($0) }.keys
    public static let haKeys = ConfigSection.reading { _ = HASettings.decode($0) }.keys
    public static let readinessKeys = ConfigSection.reading { _ = ReadinessPolicy.decode($0) }.keys
    public static let logKeys = ConfigSection.reading { _ = LogSettings.decode($0) }.keys
    public static let shutdownKeys = ConfigSection.reading { _ = ShutdownSettings.decode($0) }.keys
    public static let listenerKeys = ConfigSection.reading { _ = ListenerLimits.decode($0) }.keys
    /// The names `log.level` and `--log-level` accept, quietest last (`LogSettings.levelNames`).
    public static let logLevelNames = LogSettings.levelNames
    /// Every key of each section by its top-level name, and the deprecated names each still reads.
    public static let sectionKeys: [(name: String, keys: [String], deprecated: [String])] = {
        let sections: [(String, (ConfigSection) -> Void)] = [
            ("retry", { _ = RetryPolicy.decode($0) }), ("readiness", { _ = ReadinessPolicy.decode($0) }),
            ("ha", { _ = HASettings.decode($0) }), ("log", { _ = LogSettings.decode($0) }),
            ("shutdown", { _ = ShutdownSettings.decode($0) }), ("listener", { _ = ListenerLimits.decode($0) }),
            ("catch_up", { _ = CatchUpSettings.decode($0, retention: BridgeConfig.defaultRetention) }),
            ("profiles", { _ = ProfileSettings.decode($0) }), ("groups", { _ = GroupSettings.decode($0) }),
            ("verify", { _ = VerifySettings.decode($0) }), ("tracing", { _ = TracingSettings.decode($0) }),
        ]
        return sections.map { name, decode in
            let section = ConfigSection.reading(decode)
            return (name, section.keys, section.deprecatedKeys)
        }
    }()
    /// The deprecated top-level names still read (`retention_hours`).
    public static let deprecatedTopLevelKeys = ConfigSection.reading { _ = decode($0, environment: [:], requireRoutes: false, adapters: nil,
                                                                                 checkStoreAccess: false) }.deprecatedKeys

    /// `requireRoutes: false` accepts a configuration without routes (`imbridge migrate` needs only
    /// the store and the backends).
    /// `adapters`: the adapter names this build has (the registry's); nil accepts any name.
    /// `checkStoreAccess`: also check that an SQLite store's file (or its directory) is writable,
    /// without creating anything (`StoreLocation.accessProblem`).
    ///
    /// Every problem found is reported at once: the error's message has one `FILE:LINE: key: reason`
    /// line per problem (`details["problems"]` counts them). No message quotes a secret's value.
    public static func load(path: String, environment: [String: String] = ProcessInfo.processInfo.environment,
                            requireRoutes: Bool = true, adapters: Set<String>? = nil, checkStoreAccess: Bool = true) throws -> BridgeConfig {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw IMError(.notFound, "cannot read config file \(path)")
        }
        return try parse(String(decoding: data, as: UTF8.self), file: path, environment: environment, requireRoutes: requireRoutes,
                         adapters: adapters, checkStoreAccess: checkStoreAccess)
    }

    public static func parse(_ yaml: String, file: String = "bridge.yaml",
                             environment: [String: String] = ProcessInfo.processInfo.environment,
                             requireRoutes: Bool = true, adapters: Set<String>? = nil, checkStoreAccess: Bool = false) throws -> BridgeConfig {
        var problems = ConfigProblems()
        let config = parse(yaml, file: file, environment: environment, requireRoutes: requireRoutes, adapters: adapters,
                           checkStoreAccess: checkStoreAccess, problems: &problems)
        try problems.throwIfAny()
        return config!
    }

    /// Parses what can be parsed, adding every problem to `problems`; nil only when the YAML itself
    /// cannot be read. No problem shows the value of an environment variable the file names (`${NAME}`)
    /// or the store's password (`redactor(yaml:environment:)`).
    public static func parse(_ yaml: String, file: String, environment: [String: String], requireRoutes: Bool,
                             adapters: Set<String>?, checkStoreAccess: Bool, problems: inout ConfigProblems) -> BridgeConfig? {
        var found = ConfigProblems()
        let config = parseCollecting(yaml, file: file, environment: environment, requireRoutes: requireRoutes, adapters: adapters,
                                     checkStoreAccess: checkStoreAccess, problems: &found)
        var redactor = redactor(yaml: yaml, environment: environment)
        if let config, let password = try? StoreLocation(parsing: config.store, environment: environment).password {
            redactor.addSecret(password)
        }
        found.redact(with: redactor)
        problems.merge(found)
        return config
    }

    /// What configuration errors must not show: the value of every `${NAME}` the file names, and the
    /// store password of the environment (`IMBRIDGE_STORE_PASSWORD`).
    public static func redactor(yaml: String, environment: [String: String]) -> ConfigRedactor {
        var redactor = ConfigRedactor(yaml: yaml, environment: environment)
        if let password = environment[StoreLocation.passwordVariable] { redactor.addSecret(password) }
        return redactor
    }

    static func parseCollecting(_ yaml: String, file: String, environment: [String: String], requireRoutes: Bool,
                                adapters: Set<String>?, checkStoreAccess: Bool, problems: inout ConfigProblems) -> BridgeConfig? {
        let root: ConfigNode
        do { root = try ConfigNode.parse(yaml, file: file, environment: environment) } catch {
            problems.add(error)
            return nil
        }
        let top = ConfigSection(root)
        var config = decode(top, environment: environment, requireRoutes: requireRoutes, adapters: adapters, checkStoreAccess: checkStoreAccess)
        top.finish(into: &problems)
        config.warnings = problems.warnings
        return config
    }

    /// The top level: its own keys, then each section by its decoder.
    static func decode(_ top: ConfigSection, environment: [String: String], requireRoutes: Bool, adapters: Set<String>?,
                       checkStoreAccess: Bool) -> BridgeConfig {
        var config = BridgeConfig()
        top.attempt { (config.listenHost, config.listenPort) = try hostAndPort(top["listen"], default: "127.0.0.1:8090") }
        let listenShown = top.node["listen"].substitution.map(ConfigNode.describeSubstitution) ?? "\(config.listenHost):\(config.listenPort)"
        config.adminListen = top.read("admin_listen") { node -> (host: String, port: Int)? in
            guard node.isPresent else { return nil }
            let admin = try hostAndPort(node, default: "")
            if admin.port != 0 && admin.port == config.listenPort
                && (admin.host == config.listenHost || admin.host == "0.0.0.0" || config.listenHost == "0.0.0.0") {
                throw node.error("must differ from listen (\(listenShown)): it keeps /metrics and health off the callbacks' address")
            }
            return admin
        }
        let backendsNode = top["backends"]
        config.backends = parseBackends(backendsNode, adapters: adapters, problems: &top.problems)
        // Every named backend, parsed or not, so a route to a backend with a problem of its own is not
        // reported a second time as "not configured".
        let names = Set(((try? backendsNode.keys()) ?? []).map(BackendID.init))
        let routesNode = top["routes"]
        if requireRoutes || routesNode.isPresent, let items = top.attempt({ try routesNode.list() }) {
            for item in items {
                var itemProblems = ConfigProblems()
                if let route = parseRoute(item, backends: names, problems: &itemProblems) { config.routes.append(route) }
                top.problems.merge(itemProblems)
            }
            if items.isEmpty && requireRoutes { top.add(routesNode.error("at least one route is needed")) }
        }
        config.retention = top.duration("retention", range: DurationRange(minimum: .seconds(1), zero: "keeps everything"),
                                        legacy: .init("retention_hours", .hours))?.value ?? defaultRetention
        config.store = top.read("store") { node -> String? in
            let store = try node.string()
            let location: StoreLocation
            // A store URL from the environment is not shown even redacted (docs/architecture.md, "Secrets in errors and logs").
            do { location = try StoreLocation(parsing: store, environment: environment) } catch let error as IMError {
                throw node.error(node.scrubbing(error.message, value: StoreLocation.redact(store)))
            }
            if checkStoreAccess, let problem = location.accessProblem() {
                guard let raw = node.substitution else { throw node.error(problem) }
                // The file and its directory are the variable's value: neither is named.
                let directory = URL(fileURLWithPath: store).deletingLastPathComponent().path
                var shown = problem
                for part in [store, directory].map(StoreLocation.redact) where !part.isEmpty && part != "/" {
                    shown = shown.replacingOccurrences(of: part, with: "…")
                }
                throw node.error("\(ConfigNode.describeSubstitution(raw)): \(shown)")
            }
            return store
        } ?? ""
        config.mappings = top.read("mappings") { try $0.optionalString() }
        config.retry = top.section("retry", RetryPolicy.decode)
        config.readiness = top.section("readiness", ReadinessPolicy.decode)
        config.ha = top.section("ha", HASettings.decode)
        config.log = top.section("log", LogSettings.decode)
        config.shutdown = top.section("shutdown", ShutdownSettings.decode)
        config.catchUp = top.section("catch_up") { CatchUpSettings.decode($0, retention: config.retention) }
        config.listenerLimits = top.section("listener", ListenerLimits.decode)
        config.profiles = top.section("profiles", ProfileSettings.decode)
        config.groups = top.section("groups", GroupSettings.decode)
        config.verify = top.section("verify", VerifySettings.decode)
        config.tracing = top.section("tracing", TracingSettings.decode)
        return config
    }

    /// `HOST:PORT` (port 0: any free port).
    static func hostAndPort(_ node: ConfigNode, default fallback: String) throws -> (host: String, port: Int) {
        let text = try node.optionalString() ?? fallback
        guard let colon = text.lastIndex(of: ":"), let port = Int(text[text.index(after: colon)...]), (0...65535).contains(port),
              colon > text.startIndex else {
            throw node.error("expected HOST:PORT, got \(node.quoted(text))")
        }
        return (String(text[..<colon]), port)
    }

}

extension BridgeConfig {
    /// The content mappings this configuration uses: the shipped tables, overridden and extended by the
    /// `mappings:` directory when one is set. Every problem in the files is reported (file and line).
    public func loadMappings() throws -> MappingSet {
        guard let mappings else { return .shipped }
        do {
            return try MappingSet.load(overrides: URL(fileURLWithPath: mappings))
        } catch let problems as MappingProblems {
            throw IMError(.invalidArgument, "mappings: \(mappings):\n" + problems.problems.map { "  " + $0 }.joined(separator: "\n"),
                          details: ["key": "mappings"])
        }
    }
}
