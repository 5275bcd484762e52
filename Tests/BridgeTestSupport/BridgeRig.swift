import Foundation
import IMLab
import SandboxTestSupport

/// Sandboxes (a `BridgeLab`) and the configuration of the `imbridge run` processes relaying between
/// them, each instance on a port of its own: how every test that starts a bridge process sets one up.
/// One instance takes the sandboxes' callbacks itself; several stand behind a `RoundRobinForwarder`
/// (the load balancer), as does one instance when `forwarded` is asked for.
public struct BridgeRig: Sendable {
    public let lab: BridgeLab
    /// Each instance's listen port and configuration file.
    public let ports: [Int]
    public let configs: [String]
    public let forwarder: RoundRobinForwarder?

    /// The first (or only) instance's port and configuration.
    public var port: Int { ports[0] }
    public var config: String { configs[0] }
    /// `http://127.0.0.1:PORT` of an instance (its callbacks, `/healthz`, `/metrics` …).
    public func baseURL(_ instance: Int = 0) -> String { "http://127.0.0.1:\(ports[instance])" }
    /// The SQLite store the configuration names unless told otherwise.
    public var sqlitePath: String { "\(lab.directory)/bridge.sqlite" }

    /// Starts the sandboxes of `members` and writes each instance's configuration: the lab's YAML for
    /// `routes` on `store` (the value of `store:`; nil: `bridge.sqlite` in the lab's directory), then
    /// `extra` and the instance's own `instanceYAML` appended, then `edit` (a test that leaves settings out
    /// or points a backend elsewhere) applied. A single instance's file is `bridge.yaml`, several are
    /// `bridge-0.yaml`, `bridge-1.yaml` …
    public static func make(_ members: [BridgeLab.Member], routes: String, store: String? = nil, extra: String = "",
                            instances: Int = 1, forwarded: Bool = false, instanceYAML: (Int) -> String = { _ in "" },
                            edit: (String, BridgeLab) async throws -> String = { yaml, _ in yaml }) async throws -> BridgeRig {
        var ports: [Int] = []
        for _ in 0..<instances { ports.append(try await freePort()) }
        let forwarder = instances > 1 || forwarded ? RoundRobinForwarder(targets: ports.map { "http://127.0.0.1:\($0)" }) : nil
        try await forwarder?.start()
        let lab = try await BridgeLab(members: members, callbackBase: forwarder?.baseURL ?? "http://127.0.0.1:\(ports[0])")
        var configs: [String] = []
        for (index, port) in ports.enumerated() {
            let path = instances == 1 ? "\(lab.directory)/bridge.yaml" : "\(lab.directory)/bridge-\(index).yaml"
            let yaml = lab.configYAML(store: store ?? "\(lab.directory)/bridge.sqlite", listen: "127.0.0.1:\(port)", routes: routes)
                + extra + instanceYAML(index)
            try await edit(yaml, lab).write(toFile: path, atomically: true, encoding: .utf8)
            configs.append(path)
        }
        return BridgeRig(lab: lab, ports: ports, configs: configs, forwarder: forwarder)
    }

    /// `imbridge run` of `instance`, logging to `log` (a file in the lab's directory), returned once its
    /// `/healthz` (on its port, or at `healthBase`) answers 200; throws with its log when it does not.
    public func start(_ instance: Int = 0, log: String = "bridge.log", healthBase: String? = nil, arguments: [String] = [],
                      seconds: Double = 30) async throws -> BridgeProcess {
        try await BridgeProcess.start(config: configs[instance], logPath: "\(lab.directory)/\(log)", port: ports[instance],
                                      healthBase: healthBase, arguments: arguments, seconds: seconds)
    }

    /// The same, returned at once: the test waits (`BridgeProcess.waitUntilUp`) or not itself.
    public func launch(_ instance: Int = 0, log: String = "bridge.log", healthBase: String? = nil, arguments: [String] = []) throws -> BridgeProcess {
        try BridgeProcess(config: configs[instance], logPath: "\(lab.directory)/\(log)", port: ports[instance], healthBase: healthBase,
                          arguments: arguments)
    }

    /// Stops the sandboxes and the forwarder, and removes the lab's directory.
    public func stop() async {
        await lab.stop()
        await forwarder?.stop()
    }
}
