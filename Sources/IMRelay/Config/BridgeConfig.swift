import Foundation
import IMCore
import IMMapping
import IMStore

/// A configured backend: its adapter name and the adapter's own settings (base URLs, credentials …).
public struct BackendConfig: Sendable {
    public var name: BackendID
    public var adapter: String
    public var settings: [String: String]
    public var file: String
    /// Line of each setting, for errors.
    public var lines: [String: Int]

    public init(name: BackendID, adapter: String, settings: [String: String], file: String = "(code)", lines: [String: Int] = [:]) {
        self.name = name
        self.adapter = adapter
        self.settings = settings
        self.file = file
        self.lines = lines
    }

    /// An error about one of this backend's settings, naming `backends.<name>.<key>` and its line.
    public func error(_ key: String, _ message: String) -> IMError {
        let line = lines[key].map { ":\($0)" } ?? ""
        return IMError(.invalidArgument, "\(file)\(line): backends.\(name).\(key): \(message)", details: ["key": "backends.\(name).\(key)"])
    }

    /// A required setting.
    public func require(_ key: String) throws -> String {
        guard let value = settings[key], !value.isEmpty else { throw error(key, "is required") }
        return value
    }
}

/// `bridge.yaml`, validated. Every error names the key (and line) it is about. See the README for each key.
public struct BridgeConfig: Sendable {
    public var store: String
    public var listenHost: String
    public var listenPort: Int
    public var mappings: String?
    public var backends: [BackendConfig]
    public var routes: [Route]
    public var retry: RetryPolicy
    /// How long finished outbox rows and ledger rows are kept (`retention_hours`, default 168 = 7 days;
    /// 0 keeps them for ever). See `RelayEngine.prune`.
    public var retentionHours: Int = 168
    /// `ha.lease_ms`: how long a lane or leader lease lasts unrenewed (docs/high-availability.md).
    public var leaseMs: Int64 = LeaseSettings.defaultTTLMs
    /// `ha.instance`: this instance's name in lease owners (default: the host name).
    public var instance: String?

    /// `requireRoutes: false` accepts a configuration without routes (`imbridge migrate` needs only
    /// the store and the backends).
    /// `adapters`: the adapter names this build has (the registry's); nil accepts any name.
    public static func load(path: String, environment: [String: String] = ProcessInfo.processInfo.environment,
                            requireRoutes: Bool = true, adapters: Set<String>? = nil) throws -> BridgeConfig {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw IMError(.notFound, "cannot read config file \(path)")
        }
        return try parse(String(decoding: data, as: UTF8.self), file: path, environment: environment, requireRoutes: requireRoutes,
                         adapters: adapters)
    }

    public static func parse(_ yaml: String, file: String = "bridge.yaml",
                             environment: [String: String] = ProcessInfo.processInfo.environment,
                             requireRoutes: Bool = true, adapters: Set<String>? = nil) throws -> BridgeConfig {
        let root = try ConfigNode.parse(yaml, file: file, environment: environment)
        try root.allowOnly(["store", "listen", "mappings", "backends", "routes", "retry", "retention_hours", "ha"])
        let listen = try root["listen"].optionalString() ?? "127.0.0.1:8090"
        guard let colon = listen.lastIndex(of: ":"), let port = Int(listen[listen.index(after: colon)...]), (0...65535).contains(port) else {
            throw root["listen"].error("expected HOST:PORT, got '\(listen)'")
        }
        let backends = try parseBackends(root["backends"], adapters: adapters)
        let names = Set(backends.map(\.name))
        let routesNode = root["routes"]
        let routes = requireRoutes || routesNode.isPresent ? try routesNode.list().map { try parseRoute($0, backends: names) } : []
        if routes.isEmpty && requireRoutes { throw routesNode.error("at least one route is needed") }
        var retry = RetryPolicy()
        if root["retry"].isPresent {
            try root["retry"].allowOnly(["base_ms", "max_ms", "max_age_minutes"])
            retry.baseMs = Int64(try root["retry"]["base_ms"].optionalInt() ?? Int(retry.baseMs))
            retry.maxMs = Int64(try root["retry"]["max_ms"].optionalInt() ?? Int(retry.maxMs))
            if retry.baseMs <= 0 { throw root["retry"]["base_ms"].error("expected milliseconds > 0, got \(retry.baseMs)") }
            if retry.maxMs < retry.baseMs { throw root["retry"]["max_ms"].error("expected milliseconds ≥ base_ms (\(retry.baseMs)), got \(retry.maxMs)") }
            if let minutes = try root["retry"]["max_age_minutes"].optionalInt() {
                guard minutes >= 0 else { throw root["retry"]["max_age_minutes"].error("expected minutes ≥ 0 (0 retries for ever), got \(minutes)") }
                retry.maxAgeMs = minutes == 0 ? nil : Int64(minutes) * 60_000
            }
        }
        let retentionHours = try root["retention_hours"].optionalInt() ?? 168
        guard retentionHours >= 0 else { throw root["retention_hours"].error("expected hours ≥ 0 (0 keeps everything), got \(retentionHours)") }
        let store = try root["store"].string()
        do {
            _ = try StoreLocation(parsing: store, environment: environment)
        } catch let error as IMError {
            throw root["store"].error(error.message)
        }
        var config = BridgeConfig(store: store, listenHost: String(listen[..<colon]), listenPort: port,
                                  mappings: try root["mappings"].optionalString(), backends: backends, routes: routes, retry: retry,
                                  retentionHours: retentionHours)
        let ha = root["ha"]
        if ha.isPresent {
            try ha.allowOnly(["lease_ms", "instance"])
            let leaseMs = try ha["lease_ms"].optionalInt() ?? Int(LeaseSettings.defaultTTLMs)
            guard leaseMs >= 300 else { throw ha["lease_ms"].error("expected milliseconds ≥ 300, got \(leaseMs)") }
            config.leaseMs = Int64(leaseMs)
            config.instance = try ha["instance"].optionalString()
        }
        return config
    }

    static func parseBackends(_ node: ConfigNode, adapters: Set<String>?) throws -> [BackendConfig] {
        let names = try node.keys()
        if names.isEmpty { throw node.error("at least one backend is needed") }
        return try names.map { name in
            let entry = node[name]
            guard !name.contains(":"), !name.contains("/") else { throw entry.error("backend names may not contain ':' or '/'") }
            let adapter = try entry["adapter"].string()
            if let adapters, !adapters.contains(adapter) {
                throw entry["adapter"].error("unknown adapter '\(adapter)' (known: \(adapters.sorted().joined(separator: ", ")))")
            }
            let settings = try entry.stringMap()
            var lines: [String: Int] = [:]
            for key in settings.keys { lines[key] = entry[key].line }
            return BackendConfig(name: BackendID(name), adapter: adapter, settings: settings, file: entry.file, lines: lines)
        }
    }

    static func parseRoute(_ node: ConfigNode, backends: Set<BackendID>) throws -> Route {
        try node.allowOnly(["from", "to", "direction", "users", "puppet_prefix", "reverse_prefix", "relay_account",
                            "name_format", "media", "fallbacks"])
        func endpoint(_ key: String) throws -> RouteEndpoint {
            let text = try node[key].string()
            let endpoint: RouteEndpoint
            do { endpoint = try RouteEndpoint(parsing: text) } catch let error as IMError { throw node[key].error(error.message) }
            guard backends.contains(endpoint.backend) else { throw node[key].error("backend '\(endpoint.backend)' is not configured under backends") }
            return endpoint
        }
        let from = try endpoint("from"), to = try endpoint("to")
        if from.backend == to.backend { throw node["to"].error("a route joins two different backends") }
        if (from.id == nil) != (to.id == nil) { throw node["to"].error("use '*' on both sides or on neither") }
        if from.kind != to.kind && from.id == nil { throw node["to"].error("a '*' route maps one kind to the same kind") }
        let directionText = try node["direction"].optionalString() ?? "both"
        guard let direction = Route.Direction(rawValue: directionText) else { throw node["direction"].error("expected both or forward") }
        let mode = try node["users"].optionalString() ?? "puppet"
        let forward: UserMode, reverse: UserMode
        switch mode {
        case "puppet":
            forward = .puppet(prefix: try node["puppet_prefix"].optionalString() ?? "\(from.backend)_")
            reverse = .puppet(prefix: try node["reverse_prefix"].optionalString() ?? "\(to.backend)_")
        case "relay":
            let account = UserID(try node["relay_account"].string())
            let format = try node["name_format"].optionalString() ?? "[{name}] "
            forward = .relay(account: account, nameFormat: format)
            reverse = .relay(account: account, nameFormat: format)
        default:
            throw node["users"].error("expected puppet or relay, got '\(mode)'")
        }
        let mediaText = try node["media"].optionalString() ?? "link"
        guard let media = Route.Media(rawValue: mediaText) else { throw node["media"].error("expected link or rehost") }
        var fallbacks: [Feature: FallbackPolicy] = [:]
        if node["fallbacks"].isPresent {
            for key in try node["fallbacks"].keys() {
                guard let feature = Feature(rawValue: key) else {
                    throw node["fallbacks"][key].error("unknown feature (expected one of: \(Feature.allCases.map(\.rawValue).joined(separator: ", ")))")
                }
                let text = try node["fallbacks"][key].string()
                guard let policy = FallbackPolicy(rawValue: text) else { throw node["fallbacks"][key].error("expected notice or drop") }
                fallbacks[feature] = policy
            }
        }
        return Route(from: from, to: to, direction: direction, usersOnTarget: forward, usersOnSource: reverse, media: media,
                     fallbacks: fallbacks)
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
