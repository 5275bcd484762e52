import ArgumentParser
import Foundation
import IMCore
import IMHTTP
import IMRelay
import IMStore

/// `imbridge run --config FILE`: relays between the configured backends until SIGTERM/SIGINT.
struct RunCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "run", abstract: "Run the bridge.")

    @Option(name: .long, help: "The bridge configuration (YAML).") var config: String

    func run() async throws {
        let bridge = try await Bridge.open(configPath: config)
        try await bridge.start()
        log("imbridge: listening on \(bridge.listener.baseURL) (callbacks at /callbacks/<backend>, /healthz, /metrics)")
        await ShutdownSignal.wait()
        log("imbridge: stopping (finishing in-flight sends)")
        await bridge.stop()
        log("imbridge: stopped")
    }
}

/// A configured bridge: store, backends, engine and listener, started and stopped together.
struct Bridge {
    let config: BridgeConfig
    let store: BridgeStore
    let backends: [any IMBackend]
    let engine: RelayEngine
    let listener: BridgeListener

    static func open(configPath: String) async throws -> Bridge {
        let config = try BridgeConfig.load(path: configPath)
        return try await open(config: config)
    }

    static func open(config: BridgeConfig, registry: ContentRegistry = ContentRegistry()) async throws -> Bridge {
        let store = try BridgeStore(path: config.store)
        var backends: [any IMBackend] = []
        for backend in config.backends {
            backends.append(try await BackendFactories.make(backend, context: BackendContext(store: store, registry: registry)))
        }
        let engine = RelayEngine(store: store, backends: backends, routes: config.routes, retry: config.retry)
        let listener = BridgeListener(engine: engine, backends: backends, host: config.listenHost, port: config.listenPort)
        return Bridge(config: config, store: store, backends: backends, engine: engine, listener: listener)
    }

    func start() async throws {
        try await listener.start()
        await engine.start()
    }

    /// Stops intake first (the listener), then lets the lanes finish what they hold.
    func stop() async {
        await listener.stop()
        await engine.stop()
    }
}

func log(_ line: String) {
    FileHandle.standardError.write(Data((line + "\n").utf8))
}
