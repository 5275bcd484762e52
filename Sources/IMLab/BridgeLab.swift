import Foundation
import IMBridgeApp
import IMCore
import IMHTTP
import IMRelay
import IMSandbox
import IMServer
import IMStore
import IMVendors

/// Sandboxes and a bridge on one machine, wired to each other over loopback: what `imbridge demo`
/// runs and what the end-to-end tests drive. Every part is the real one — sandboxes are HTTP servers
/// speaking the vendors' APIs, the bridge talks to them through the adapters, the store is a SQLite
/// file in a temporary directory.
public final class BridgeLab: Sendable {
    /// One sandbox to start: a backend name (`wk`) and the vendor it emulates (`wukong`).
    public struct Member: Sendable {
        public var name: BackendID
        public var vendor: String
        /// `--option` settings of the sandbox.
        public var options: [String: String]
        /// Extra adapter settings (custom type tables …) for every backend talking to this sandbox.
        public var settings: [String: String]
        /// The port to listen on; 0: any free one. A sandbox that will refuse connections for a while
        /// (`SandboxServer.refuseConnections`) takes one outside the ephemeral range
        /// (`LoopbackPorts.forChildProcesses`), so that no client socket takes it meanwhile.
        public var port: Int
        public init(_ name: BackendID, _ vendor: String, options: [String: String] = [:], settings: [String: String] = [:], port: Int = 0) {
            self.name = name
            self.vendor = vendor
            self.options = options
            self.settings = settings
            self.port = port
        }
    }

    public static let appKey = "lab-app-key"
    public static let appSecret = "lab-app-secret"
    public static let webhookSecret = "lab-webhook-secret"

    public let directory: String
    public let sandboxes: [BackendID: SandboxServer]
    public let members: [Member]
    public let callbackBase: String

    /// Starts the sandboxes, each delivering its callbacks to `<callbackBase>/callbacks/<name>`.
    public init(members: [Member], callbackBase: String, fastCallbacks: Bool = true) async throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("imbridge-lab-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        self.members = members
        self.callbackBase = callbackBase
        var sandboxes: [BackendID: SandboxServer] = [:]
        for member in members {
            guard let vendor = Vendors.named(member.vendor) else {
                throw IMError(.invalidArgument, "no sandbox for vendor '\(member.vendor)' (known: \(Vendors.names.joined(separator: ", ")))")
            }
            let endpoint = Self.endpoint(baseURL: "")
            let extra = vendor.sandbox.labOptions(endpoint, fastCallbacks).merging(member.options) { _, given in given }
            let options = SandboxOptions(host: "127.0.0.1", port: member.port, appKey: Self.appKey, appSecret: Self.appSecret,
                                         callbackURL: "\(callbackBase)/callbacks/\(member.name)", extra: extra)
            let server = try await vendor.sandbox.make(options)
            try await server.start()
            sandboxes[member.name] = server
        }
        self.sandboxes = sandboxes
    }

    public func url(of backend: BackendID) -> String { sandboxes[backend]?.baseURL ?? "" }

    /// The `backends:` settings each adapter needs to talk to its sandbox, with the member's own over
    /// them. A member setting written under its deprecated name (`poll_interval_ms`) replaces the
    /// sandbox's setting of the new name (`poll_interval`), as the two may not both be given.
    public func settings(for member: Member) -> [String: String] {
        var base = base(for: member)
        for spec in Vendors.named(member.vendor)?.adapter.settings ?? [] {
            if let legacy = spec.legacy, member.settings[legacy.key] != nil { base.removeValue(forKey: spec.key) }
        }
        return base.merging(member.settings) { _, extra in extra }
    }

    func base(for member: Member) -> [String: String] {
        Vendors.named(member.vendor)?.sandbox.adapterSettings(Self.endpoint(baseURL: url(of: member.name))) ?? [:]
    }

    static func endpoint(baseURL: String) -> SandboxDescriptor.Endpoint {
        SandboxDescriptor.Endpoint(baseURL: baseURL, appKey: appKey, appSecret: appSecret, webhookSecret: webhookSecret)
    }

    /// A complete bridge configuration for these sandboxes.
    public func configYAML(store: String, listen: String, routes: String, mappings: String? = nil) -> String {
        var yaml = "store: \(store)\nlisten: \(listen)\n" + (mappings.map { "mappings: \($0)\n" } ?? "")
            + "retry:\n  base: 50ms\n  max: 2s\nbackends:\n"
        for member in members {
            yaml += "  \(member.name):\n    adapter: \(member.vendor)\n"
            for (key, value) in settings(for: member).sorted(by: { $0.key < $1.key }) { yaml += "    \(key): \"\(value)\"\n" }
        }
        return yaml + "routes:\n" + routes
    }

    /// Starts a bridge in this process on the listener the sandboxes already post to.
    public func startBridge(listener: BridgeListener, routes: String, registry: ContentRegistry = ContentRegistry(),
                            mappings: String? = nil) async throws -> Bridge {
        let yaml = configYAML(store: "\(directory)/bridge.sqlite", listen: "127.0.0.1:\(listener.port ?? 0)", routes: routes,
                              mappings: mappings)
        let bridge = try await Bridge.open(config: try BridgeConfig.parse(yaml, file: "lab.yaml"), registry: registry, listener: listener)
        try await bridge.start()
        return bridge
    }

    /// `GET /_sandbox/messages` of one sandbox.
    public func messages(_ backend: BackendID) async throws -> [JSONValue] {
        let response = try await HTTPClientWrapper().send(OutboundRequest(method: "GET", url: url(of: backend) + "/_sandbox/messages"))
        return try JSONValue.parse(Data(response.body))["messages"]?.arrayValue ?? []
    }

    /// A backend that acts for ordinary users on one sandbox (not the bridge's own instance).
    public func userBackend(_ name: BackendID, registry: ContentRegistry) async throws -> any IMBackend {
        guard let member = members.first(where: { $0.name == name }) else { throw IMError(.notFound, "no sandbox \(name)") }
        let store = try BridgeStore(path: "\(directory)/users-\(name).sqlite")
        return try await BackendFactories.make(BackendConfig(name: name, adapter: member.vendor, settings: settings(for: member)),
                                               context: BackendContext(store: store, registry: registry))
    }

    /// A readable table of a sandbox's stored messages.
    public func table(_ name: BackendID, title: String) async throws -> String {
        var lines = ["\(title):"]
        for message in try await messages(name) {
            let expansion = message["expansion"]?.objectValue.map { $0.isEmpty ? "" : " " + JSONValue.object($0).jsonString() } ?? ""
            let flags = (message["recalled"] == true ? " [recalled]" : "") + (message["edited"] == true ? " [edited]" : "")
            let from = message["from"]?.stringValue ?? "?"
            let kind = message["kind"]?.stringValue ?? "?"
            let text = message["text"]?.stringValue ?? ""
            lines.append("  \(from.padding(toLength: 10, withPad: " ", startingAt: 0)) \(kind.padding(toLength: 8, withPad: " ", startingAt: 0)) \(text)\(expansion)\(flags)")
        }
        return lines.joined(separator: "\n")
    }

    public func stop() async {
        for server in sandboxes.values { await server.stop() }
        try? FileManager.default.removeItem(atPath: directory)
    }
}
