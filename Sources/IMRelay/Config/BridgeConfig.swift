import Foundation
import IMCore
import IMHTTP
import IMMapping
import IMStore
import Logging

/// A configured backend: its adapter name and the adapter's own settings (base URLs, credentials …).
public struct BackendConfig: Sendable {
    public var name: BackendID
    public var adapter: String
    public var settings: [String: String]
    public var file: String
    /// Line of each setting, for errors.
    public var lines: [String: Int]
    /// Line of `<name>:` under `backends`: where a missing setting is reported.
    public var line: Int?
    /// The settings whose values came from the environment, as written (`${WK_URL}`): errors name the
    /// variable instead of quoting the value (`ConfigNode.quoted`).
    public var substituted: [String: String] = [:]

    public init(name: BackendID, adapter: String, settings: [String: String], file: String = "(code)", lines: [String: Int] = [:],
                line: Int? = nil) {
        self.name = name
        self.adapter = adapter
        self.settings = settings
        self.file = file
        self.lines = lines
        self.line = line
    }

    /// An error about one of this backend's settings, naming `backends.<name>.<key>` and its line (for a
    /// setting that is missing, the line of the backend's own entry).
    public func error(_ key: String, _ message: String) -> IMError {
        let line = (lines[key] ?? line).map { ":\($0)" } ?? ""
        return IMError(.invalidArgument, "\(file)\(line): backends.\(name).\(key): \(message)", details: ["key": "backends.\(name).\(key)"])
    }

    /// A required setting.
    public func require(_ key: String) throws -> String {
        guard let value = settings[key], !value.isEmpty else { throw error(key, "is required") }
        return value
    }
}

/// `bridge.yaml`, validated. Every error names the key (and line) it is about. See docs/configuration.md for each key.
public struct BridgeConfig: Sendable {
    public var store: String
    public var listenHost: String
    public var listenPort: Int
    /// `admin_listen: HOST:PORT`: where `/healthz`, `/readyz` and `/metrics` are served instead of on
    /// `listen` (which then answers only callbacks); nil: everything on `listen`.
    public var adminListen: (host: String, port: Int)?
    /// `readiness.backend_failing_seconds`: when `/readyz` counts a failing backend as down.
    public var readiness = ReadinessPolicy()
    public var mappings: String?
    public var backends: [BackendConfig]
    public var routes: [Route]
    public var retry: RetryPolicy
    /// How long finished outbox rows and ledger rows are kept (`retention_hours`, default 168 = 7 days;
    /// 0 keeps them for ever). See `RelayEngine.prune`.
    public var retentionHours: Int = 168
    /// `retention_hours` in milliseconds; nil when 0 (the ledger keeps everything).
    public var ledgerRetentionMs: Int64? { retentionHours > 0 ? Int64(retentionHours) * 3_600_000 : nil }
    /// `ha.lease_ms`: how long a lane or leader lease lasts unrenewed (docs/high-availability.md).
    public var leaseMs: Int64 = LeaseSettings.defaultTTLMs
    /// `ha.instance`: this instance's name in lease owners (default: the host name).
    public var instance: String?
    /// `catch_up:`: reading sources' history after downtime or a gap (docs/architecture.md, "Catch-up").
    public var catchUp = CatchUpSettings()
    /// `profiles:`: puppets' names and avatars follow their source users' (docs/architecture.md, "Profiles").
    public var profiles = ProfileSettings()
    /// `groups:`: target groups compared again with their source groups (docs/architecture.md, "Groups").
    public var groups = GroupSettings()
    /// `verify:`: scheduled audits of both sides of the routes (docs/verify.md); off by default.
    public var verify = VerifySettings()

    /// `log.level` (default info; `imbridge run --log-level` wins) and `log.format` (text or json).
    public var logLevel: Logger.Level = .info
    public var logFormat: LogFormat = .text
    /// `shutdown.drain_seconds`: how long the first SIGTERM/SIGINT lets in-flight sends finish before
    /// the bridge stops anyway (unfinished entries stay in the outbox for the next start).
    public var drainSeconds: Int = BridgeConfig.defaultDrainSeconds
    public static let defaultDrainSeconds = 10
    /// `listener.header_timeout_seconds`, `.body_timeout_seconds`, `.idle_timeout_seconds`,
    /// `.max_connections`: what a client may hold of each listener (`ListenerLimits`; docs/configuration.md).
    public var listenerLimits = ListenerLimits()

    /// Every top-level key (`bridge.yaml`), and those of its mappings; `examples/bridge.yaml` mentions each.
    public static let topLevelKeys = ["store", "listen", "admin_listen", "mappings", "backends", "routes", "retry", "retention_hours",
                                      "readiness", "ha", "log", "shutdown", "catch_up", "listener", "profiles", "groups", "verify"]
    public static let retryKeys = ["base_ms", "max_ms", "max_age_minutes"]
    public static let haKeys = ["lease_ms", "instance"]
    public static let readinessKeys = ["backend_failing_seconds"]
    public static let logKeys = ["level", "format"]
    public static let shutdownKeys = ["drain_seconds"]
    public static let listenerKeys = ["header_timeout_seconds", "body_timeout_seconds", "idle_timeout_seconds", "max_connections"]
    /// The names `log.level` and `--log-level` accept, quietest last.
    public static let logLevelNames = Logger.Level.allCases.map(\.rawValue)
    public static let routeKeys = ["from", "to", "direction", "users", "puppet_prefix", "reverse_prefix", "relay_account",
                                   "name_format", "media", "fallbacks"]

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
        problems.attempt { try root.expectMapping() }
        problems.attempt { try root.allowOnly(Set(topLevelKeys)) }
        var listenHost = "127.0.0.1", listenPort = 8090
        problems.attempt { (listenHost, listenPort) = try hostAndPort(root["listen"], default: "127.0.0.1:8090") }
        let listenShown = root["listen"].substitution.map(ConfigNode.describeSubstitution) ?? "\(listenHost):\(listenPort)"
        var adminListen: (host: String, port: Int)?
        if root["admin_listen"].isPresent {
            problems.attempt {
                let admin = try hostAndPort(root["admin_listen"], default: "")
                if admin.port != 0 && admin.port == listenPort && (admin.host == listenHost || admin.host == "0.0.0.0" || listenHost == "0.0.0.0") {
                    throw root["admin_listen"].error("must differ from listen (\(listenShown)): it keeps /metrics and health off the callbacks' address")
                }
                adminListen = admin
            }
        }
        let backends = parseBackends(root["backends"], adapters: adapters, problems: &problems)
        // Every named backend, parsed or not, so a route to a backend with a problem of its own is not
        // reported a second time as "not configured".
        let names = Set(((try? root["backends"].keys()) ?? []).map(BackendID.init))
        let routesNode = root["routes"]
        var routes: [Route] = []
        if requireRoutes || routesNode.isPresent {
            if let items = problems.attempt({ try routesNode.list() }) {
                for item in items {
                    var itemProblems = ConfigProblems()
                    if let route = parseRoute(item, backends: names, problems: &itemProblems) { routes.append(route) }
                    problems.merge(itemProblems)
                }
                if items.isEmpty && requireRoutes { problems.add(routesNode.error("at least one route is needed")) }
            }
        }
        let retry = parseRetry(root["retry"], problems: &problems)
        let retentionHours = problems.attempt { () throws -> Int in
            let hours = try root["retention_hours"].optionalInt() ?? 168
            guard hours >= 0 else { throw root["retention_hours"].error("expected hours ≥ 0 (0 keeps everything), got \(root["retention_hours"].shown(hours))") }
            return hours
        } ?? 168
        var store = ""
        problems.attempt {
            store = try root["store"].string()
            let location: StoreLocation
            // A store URL from the environment is not shown even redacted (docs/architecture.md, "Secrets in errors and logs").
            do { location = try StoreLocation(parsing: store, environment: environment) } catch let error as IMError {
                throw root["store"].error(root["store"].scrubbing(error.message, value: StoreLocation.redact(store)))
            }
            if checkStoreAccess, let problem = location.accessProblem() {
                guard let raw = root["store"].substitution else { throw root["store"].error(problem) }
                // The file and its directory are the variable's value: neither is named.
                let directory = URL(fileURLWithPath: store).deletingLastPathComponent().path
                var shown = problem
                for part in [store, directory].map(StoreLocation.redact) where !part.isEmpty && part != "/" {
                    shown = shown.replacingOccurrences(of: part, with: "…")
                }
                throw root["store"].error("\(ConfigNode.describeSubstitution(raw)): \(shown)")
            }
        }
        let mappings = problems.attempt { try root["mappings"].optionalString() } ?? nil
        var config = BridgeConfig(store: store, listenHost: listenHost, listenPort: listenPort, mappings: mappings, backends: backends,
                                  routes: routes, retry: retry, retentionHours: retentionHours)
        config.adminListen = adminListen
        let readiness = root["readiness"]
        problems.attempt { try readiness.expectMapping() }
        if readiness.isMapping {
            problems.attempt { try readiness.allowOnly(Set(readinessKeys)) }
            problems.attempt {
                let seconds = try readiness["backend_failing_seconds"].optionalInt() ?? ReadinessPolicy.defaultBackendFailingSeconds
                guard seconds >= 0 else {
                    throw readiness["backend_failing_seconds"].error("expected seconds ≥ 0 (0 turns the check off), got \(readiness["backend_failing_seconds"].shown(seconds))")
                }
                config.readiness = ReadinessPolicy(backendFailingMs: seconds == 0 ? nil : Int64(seconds) * 1000)
            }
        }
        let ha = root["ha"]
        problems.attempt { try ha.expectMapping() }
        if ha.isMapping {
            problems.attempt { try ha.allowOnly(Set(haKeys)) }
            problems.attempt {
                let leaseMs = try ha["lease_ms"].optionalInt() ?? Int(LeaseSettings.defaultTTLMs)
                guard leaseMs >= 300 else { throw ha["lease_ms"].error("expected milliseconds ≥ 300, got \(ha["lease_ms"].shown(leaseMs))") }
                config.leaseMs = Int64(leaseMs)
            }
            config.instance = problems.attempt { try ha["instance"].optionalString() } ?? nil
        }
        let log = root["log"]
        problems.attempt { try log.expectMapping() }
        if log.isMapping {
            problems.attempt { try log.allowOnly(Set(logKeys)) }
            problems.attempt {
                guard let text = try log["level"].optionalString() else { return }
                guard let level = Logger.Level(rawValue: text) else {
                    throw log["level"].error("expected one of \(logLevelNames.joined(separator: ", ")), got \(log["level"].quoted(text))")
                }
                config.logLevel = level
            }
            problems.attempt {
                guard let text = try log["format"].optionalString() else { return }
                guard let format = LogFormat(rawValue: text) else { throw log["format"].error("expected text or json, got \(log["format"].quoted(text))") }
                config.logFormat = format
            }
        }
        let shutdown = root["shutdown"]
        problems.attempt { try shutdown.expectMapping() }
        if shutdown.isMapping {
            problems.attempt { try shutdown.allowOnly(Set(shutdownKeys)) }
            problems.attempt {
                let seconds = try shutdown["drain_seconds"].optionalInt() ?? defaultDrainSeconds
                guard (0...3600).contains(seconds) else {
                    throw shutdown["drain_seconds"].error("expected seconds from 0 (stop at once) to 3600, got \(shutdown["drain_seconds"].shown(seconds))")
                }
                config.drainSeconds = seconds
            }
        }
        config.catchUp = CatchUpSettings.parse(root["catch_up"], retentionHours: retentionHours, problems: &problems)
        config.listenerLimits = parseListenerLimits(root["listener"], problems: &problems)
        config.profiles = ProfileSettings.parse(root["profiles"], problems: &problems)
        config.groups = GroupSettings.parse(root["groups"], problems: &problems)
        config.verify = VerifySettings.parse(root["verify"], problems: &problems)
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

    static func parseListenerLimits(_ node: ConfigNode, problems: inout ConfigProblems) -> ListenerLimits {
        var limits = ListenerLimits()
        guard node.isPresent else { return limits }
        guard problems.attempt({ try node.expectMapping() }) != nil, node.isMapping else { return limits }
        problems.attempt { try node.allowOnly(Set(listenerKeys)) }
        func seconds(_ key: String, _ fallback: Int) -> Duration? {
            problems.attempt { () throws -> Duration in
                let value = try node[key].optionalInt() ?? fallback
                guard (1...3600).contains(value) else { throw node[key].error("expected seconds from 1 to 3600, got \(value)") }
                return .seconds(value)
            }
        }
        if let value = seconds("header_timeout_seconds", ListenerLimits.defaultHeaderTimeoutSeconds) { limits.headerTimeout = value }
        if let value = seconds("body_timeout_seconds", ListenerLimits.defaultBodyTimeoutSeconds) { limits.bodyTimeout = value }
        if let value = seconds("idle_timeout_seconds", ListenerLimits.defaultIdleTimeoutSeconds) { limits.idleTimeout = value }
        problems.attempt {
            let value = try node["max_connections"].optionalInt() ?? ListenerLimits.defaultMaxConnections
            guard (1...60_000).contains(value) else { throw node["max_connections"].error("expected connections from 1 to 60000, got \(value)") }
            limits.maxConnections = value
        }
        return limits
    }

    static func parseRetry(_ node: ConfigNode, problems: inout ConfigProblems) -> RetryPolicy {
        var retry = RetryPolicy()
        guard node.isPresent else { return retry }
        guard problems.attempt({ try node.expectMapping() }) != nil else { return retry }
        problems.attempt { try node.allowOnly(Set(retryKeys)) }
        let base = problems.attempt { () throws -> Int64 in
            let value = Int64(try node["base_ms"].optionalInt() ?? Int(retry.baseMs))
            if value <= 0 { throw node["base_ms"].error("expected milliseconds > 0, got \(node["base_ms"].shown(value))") }
            return value
        }
        if let base { retry.baseMs = base }
        problems.attempt {
            let value = Int64(try node["max_ms"].optionalInt() ?? Int(retry.maxMs))
            if value <= 0 { throw node["max_ms"].error("expected milliseconds > 0, got \(node["max_ms"].shown(value))") }
            if value < retry.baseMs {
                let base = node["base_ms"].substitution.map(ConfigNode.describeSubstitution) ?? "\(retry.baseMs)"
                throw node["max_ms"].error("expected milliseconds ≥ base_ms (\(base)), got \(node["max_ms"].shown(value))")
            }
            retry.maxMs = value
        }
        problems.attempt {
            if let minutes = try node["max_age_minutes"].optionalInt() {
                guard minutes >= 0 else {
                    throw node["max_age_minutes"].error("expected minutes ≥ 0 (0 retries for ever), got \(node["max_age_minutes"].shown(minutes))")
                }
                retry.maxAgeMs = minutes == 0 ? nil : Int64(minutes) * 60_000
            }
        }
        return retry
    }

    static func parseBackends(_ node: ConfigNode, adapters: Set<String>?, problems: inout ConfigProblems) -> [BackendConfig] {
        guard let names = problems.attempt({ try node.keys() }) else { return [] }
        if names.isEmpty { problems.add(node.error("at least one backend is needed")) }
        return names.compactMap { name -> BackendConfig? in
            let entry = node[name]
            var ok = true
            if name.contains(":") || name.contains("/") {
                problems.add(entry.error("backend names may not contain ':' or '/'"))
                ok = false
            }
            guard problems.attempt({ try entry.expectMapping() }) != nil, entry.isMapping else {
                if !entry.isPresent { problems.add(entry.error("expected a mapping with at least adapter: NAME")) }
                return nil
            }
            let adapter = problems.attempt { () throws -> String in
                let adapter = try entry["adapter"].string()
                if let adapters, !adapters.contains(adapter) {
                    throw entry["adapter"].error("unknown adapter \(entry["adapter"].quoted(adapter)) (known: \(adapters.sorted().joined(separator: ", ")))")
                }
                return adapter
            }
            var settings: [String: String] = [:]
            var lines: [String: Int] = [:]
            var substituted: [String: String] = [:]
            for key in (try? entry.keys()) ?? [] where key != "adapter" {
                if let value = problems.attempt({ try entry[key].string() }) { settings[key] = value } else { ok = false }
                lines[key] = entry[key].line
                substituted[key] = entry[key].substitution
            }
            guard ok, let adapter else { return nil }
            var backend = BackendConfig(name: BackendID(name), adapter: adapter, settings: settings, file: entry.file, lines: lines,
                                        line: entry.keyLine)
            backend.substituted = substituted
            return backend
        }
    }

    /// The conversation kinds a route may name (`BACKEND:KIND:ID`).
    public static let routeKinds: [ConversationRef.Kind] = [.direct, .group, .chatroom, .system]

    static func parseRoute(_ node: ConfigNode, backends: Set<BackendID>, problems: inout ConfigProblems) -> Route? {
        guard problems.attempt({ try node.expectMapping() }) != nil, node.isMapping else {
            if !node.isPresent { problems.add(node.error("expected a mapping with from: and to:")) }
            return nil
        }
        let before = problems.count
        problems.attempt { try node.allowOnly(Set(routeKeys)) }
        func endpoint(_ key: String) -> RouteEndpoint? {
            problems.attempt {
                let text = try node[key].string()
                let endpoint: RouteEndpoint
                // A part of a value from the environment is not shown either: the message names the variable.
                let shown = node[key].substitution.map { ConfigNode.describeSubstitution($0) + ": " }
                do { endpoint = try RouteEndpoint(parsing: text) } catch let error as IMError {
                    throw node[key].error(shown.map { $0 + "not BACKEND:KIND:ID (or BACKEND:KIND:*)" } ?? error.message)
                }
                guard backends.contains(endpoint.backend) else {
                    throw node[key].error((shown ?? "") + "backend \(shown == nil ? "'\(endpoint.backend)' " : "")is not configured under backends")
                }
                guard Self.routeKinds.contains(endpoint.kind) else {
                    throw node[key].error((shown ?? "") + "unknown conversation kind \(shown == nil ? "'\(endpoint.kind)' " : "")(expected one of: \(Self.routeKinds.map(\.description).joined(separator: ", ")))")
                }
                return endpoint
            }
        }
        let from = endpoint("from"), to = endpoint("to")
        if let from, let to {
            if from.backend == to.backend { problems.add(node["to"].error("a route joins two different backends")) }
            if (from.id == nil) != (to.id == nil) { problems.add(node["to"].error("use '*' on both sides or on neither")) }
            else if from.kind != to.kind && from.id == nil { problems.add(node["to"].error("a '*' route maps one kind to the same kind")) }
        }
        let direction = problems.attempt { () throws -> Route.Direction in
            let text = try node["direction"].optionalString() ?? "both"
            guard let direction = Route.Direction(rawValue: text) else { throw node["direction"].error("expected both or forward") }
            return direction
        }
        let modes = problems.attempt { () throws -> (UserMode, UserMode) in
            let mode = try node["users"].optionalString() ?? "puppet"
            switch mode {
            case "puppet":
                return (.puppet(prefix: try node["puppet_prefix"].optionalString() ?? "\(from?.backend.rawValue ?? "")_"),
                        .puppet(prefix: try node["reverse_prefix"].optionalString() ?? "\(to?.backend.rawValue ?? "")_"))
            case "relay":
                let account = UserID(try node["relay_account"].string())
                let format = try node["name_format"].optionalString() ?? "[{name}] "
                return (.relay(account: account, nameFormat: format), .relay(account: account, nameFormat: format))
            default:
                throw node["users"].error("expected puppet or relay, got \(node["users"].quoted(mode))")
            }
        }
        let media = problems.attempt { () throws -> Route.Media in
            let text = try node["media"].optionalString() ?? "link"
            guard let media = Route.Media(rawValue: text) else { throw node["media"].error("expected link or rehost") }
            return media
        }
        var fallbacks: [Feature: FallbackPolicy] = [:]
        let fallbackNode = node["fallbacks"]
        if fallbackNode.isPresent, problems.attempt({ try fallbackNode.expectMapping() }) != nil {
            for key in (try? fallbackNode.keys()) ?? [] {
                problems.attempt {
                    guard let feature = Feature(rawValue: key) else {
                        throw fallbackNode[key].error("unknown feature (expected one of: \(Feature.allCases.map(\.rawValue).joined(separator: ", ")))")
                    }
                    let text = try fallbackNode[key].string()
                    guard let policy = FallbackPolicy(rawValue: text) else { throw fallbackNode[key].error("expected notice or drop") }
                    fallbacks[feature] = policy
                }
            }
        }
        guard problems.count == before, let from, let to, let direction, let modes, let media else { return nil }
        return Route(from: from, to: to, direction: direction, usersOnTarget: modes.0, usersOnSource: modes.1, media: media,
                     fallbacks: fallbacks)
    }
}

/// Every problem found in a configuration, in the order found; thrown as one `invalid_argument` whose
/// message has one line per problem.
public struct ConfigProblems: Sendable {
    public private(set) var errors: [IMError] = []

    public init() {}

    public var count: Int { errors.count }
    public var isEmpty: Bool { errors.isEmpty }

    public mutating func add(_ error: any Error) {
        if let error = error as? IMError {
            // A nested collection (a backend's adapter settings) arrives as one error of several lines.
            if let nested = Int(error.details["problems"] ?? ""), nested > 1 {
                for line in error.message.split(separator: "\n") {
                    errors.append(IMError(error.code, String(line), details: ["key": error.details["key"] ?? ""]))
                }
            } else {
                errors.append(error)
            }
        } else {
            errors.append(IMError(.invalidArgument, "\(error)"))
        }
    }

    public mutating func merge(_ other: ConfigProblems) { errors += other.errors }

    /// Every problem with what `redactor` hides hidden.
    public mutating func redact(with redactor: ConfigRedactor) { errors = errors.map(redactor.redact) }

    /// Runs `body`; a thrown error is recorded and nil returned.
    @discardableResult
    public mutating func attempt<T>(_ body: () throws -> T) -> T? {
        do { return try body() } catch {
            add(error)
            return nil
        }
    }

    /// One line per problem.
    public var message: String { errors.map(\.message).joined(separator: "\n") }

    /// Throws one `invalid_argument` carrying every problem (`details["problems"]` = how many).
    public func throwIfAny() throws {
        guard !errors.isEmpty else { return }
        if errors.count == 1 { throw errors[0] }
        throw IMError(.invalidArgument, message, details: ["problems": String(errors.count)])
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
