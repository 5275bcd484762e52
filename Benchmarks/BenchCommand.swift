import ArgumentParser
import Foundation
import IMServer
import NIOCore
import NIOPosix
import IMBridgeApp
import IMRelay

/// `imbridge-bench <scenario>… [--json] [--messages N] …` — see docs/performance.md. Release builds only:
/// `swift run -c release imbridge-bench all`. `imbridge-bench _sandbox …` is the child process a
/// scenario starts for each sandbox (`SandboxProcess`).
@main
struct BenchCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "imbridge-bench",
        abstract: "Benchmarks of the bridge (release builds; figures in docs/performance.md).",
        subcommands: [Run.self, SandboxChild.self],
        defaultSubcommand: Run.self)

    static let scenarios = ["codec", "relay", "relay-many", "migrate", "migrate-many", "memory"]
    /// Run only when named (not part of `all`).
    static let namedOnly = ["verify", "costs"]

    struct Run: AsyncParsableCommand {
        static let configuration = CommandConfiguration(commandName: "run", abstract: "Runs scenarios (the default).")

        @Argument(help: "Scenarios: relay, relay-many, migrate, migrate-many, codec, memory, or all (the default); verify and costs when named.")
        var scenarios: [String] = []
        @Flag(help: "One JSON object per scenario.") var json = false
        @Option(help: "Messages (default: 20000 relay, 100000 migrate, 1000000 memory, 1000 costs).") var messages: Int?
        @Option(help: "Offered rate of the latency phase, msg/s (relay, relay-many).") var rate: Double = 1000
        @Option(name: .customLong("rate-messages"), help: "Messages of the latency phase (relay, relay-many).") var rateMessages = 10_000
        @Option(help: "Client requests in flight.") var concurrency = 32
        @Option(help: "Conversations (default: 10 relay, 1000 relay-many, 20 migrate-many, 100 memory, 100 verify).") var conversations: Int?
        @Option(name: .customLong("notify-interval-ms"), help: "WuKong webhook batching interval.") var notifyIntervalMs = 0
        @Flag(name: .customLong("no-echo"), help: "No echo route (relay, relay-many).") var noEcho = false
        @Option(name: .customLong("codec-seconds"), help: "Seconds per codec measurement.") var codecSeconds: Double = 1
        @Option(name: .customLong("page-size"), help: "History page size (migrate).") var pageSize = 100
        @Option(help: "Conversations migrated at once (migrate-many).") var parallel = 8
        @Option(help: "postgres://USER@HOST:PORT/DB (relay, relay-many, costs); default a temporary SQLite file.") var store: String?
        @Option(help: "Bridge instances on the store (relay, relay-many).") var instances = 1
        @Option(help: "Messages per second offered (costs); default as fast as the client can.") var paced: Double?
        @Flag(name: .customLong("nio-executor"),
              help: "Experiment: Swift concurrency's jobs run on NIO's event loops (NIO's executor takeover); `imbridge` does not do this (docs/performance.md, \"The eighth sitting\").")
        var nioExecutor = false
        @Option(help: "relay, relay-many: run one phase alone (bridge, floor or baseline), for whole-process instruction counts (docs/performance.md, \"Current figures\").")
        var only: String?

        func validate() throws {
            for scenario in scenarios where scenario != "all" && !(BenchCommand.scenarios + BenchCommand.namedOnly).contains(scenario) {
                throw ValidationError("unknown scenario '\(scenario)' (known: \((BenchCommand.scenarios + BenchCommand.namedOnly).joined(separator: ", ")), all)")
            }
            if let only, !RelayBench.phases.contains(only) {
                throw ValidationError("unknown phase '\(only)' (known: \(RelayBench.phases.joined(separator: ", ")))")
            }
        }

        func run() async throws {
            #if DEBUG
            FileHandle.standardError.write(Data("warning: a debug build; figures are meaningless (use -c release)\n".utf8))
            #endif
            ProcessTuning.limitMallocArenas()   // as `imbridge` does
            if nioExecutor {
                let installed = NIOSingletons.unsafeTryInstallSingletonPosixEventLoopGroupAsConcurrencyGlobalExecutor()
                FileHandle.standardError.write(Data("experiment: NIO's event loops as the global executor: \(installed)\n".utf8))
            }
            // The log handler `imbridge run` bootstraps, at its default level: swift-log's default
            // (`StreamLogHandler`) formats a logger's metadata on every change, which Hummingbird makes
            // per request, a cost the bridge does not have in production.
            BridgeLogHandler.bootstrap(level: LogSettings().level, format: .text, secrets: [String]())
            let chosen = scenarios.isEmpty || scenarios == ["all"] ? BenchCommand.scenarios : scenarios
            for scenario in chosen {
                let result: ScenarioResult
                do {
                    result = try await run(scenario)
                } catch {
                    FileHandle.standardError.write(Data("\(scenario) failed: \(error)\n".utf8))
                    throw ExitCode(1)
                }
                result.print(asJSON: json)
            }
        }

        private func run(_ scenario: String) async throws -> ScenarioResult {
            switch scenario {
            case "codec":
                return CodecBench(seconds: codecSeconds).run()
            case "relay", "relay-many":
                let bench = RelayBench(messages: messages ?? 20_000, conversations: conversations ?? (scenario == "relay" ? 10 : 1000),
                                       concurrency: concurrency, notifyIntervalMs: notifyIntervalMs, rate: rate, rateMessages: rateMessages,
                                       routeEchoes: !noEcho, store: store, instances: instances)
                if let only { return try await bench.runAlone(only, name: scenario) }
                return try await bench.run(name: scenario)
            case "migrate":
                return try await MigrateBench(messages: messages ?? 100_000, concurrency: concurrency, pageSize: pageSize).run()
            case "migrate-many":
                return try await MigrateBench(messages: messages ?? 100_000, concurrency: concurrency, pageSize: pageSize,
                                              conversations: conversations ?? 20, parallel: parallel, name: "migrate-many").run()
            case "costs":
                return try await CostBench(messages: messages ?? 1000, conversations: conversations ?? 10, concurrency: concurrency, store: store, paced: paced).run()
            case "verify":
                return try await VerifyBench(messages: messages ?? 100_000, concurrency: concurrency, conversations: conversations ?? 100).run()
            default:
                return try await MemoryBench(messages: messages ?? 1_000_000, conversations: conversations ?? 100, concurrency: concurrency,
                                             notifyIntervalMs: notifyIntervalMs).run()
            }
        }
    }

    /// The sandbox child process (`SandboxProcess`): `_sandbox <vendor> <callback-url|-> [key=value…]`.
    struct SandboxChild: AsyncParsableCommand {
        static let configuration = CommandConfiguration(commandName: "_sandbox", shouldDisplay: false)
        @Argument(parsing: .allUnrecognized) var arguments: [String] = []
        func run() async throws { try await SandboxProcess.serve(arguments) }
    }
}
