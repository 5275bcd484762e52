import Foundation

/// `imbridge-bench <scenario>… [--json] [--messages N] …` — see docs/performance.md. Release builds only:
/// `swift run -c release imbridge-bench all`.
let usage = """
    usage: imbridge-bench <relay|relay-many|migrate|migrate-many|verify|codec|memory|all>… [--json]
           [--messages N] [--rate R] [--rate-messages N] [--concurrency C] [--conversations K]
           [--notify-interval-ms MS] [--no-echo] [--codec-seconds S] [--page-size P] [--parallel L] (migrate-many)
           [--store postgres://USER@HOST:PORT/DB] [--instances N]   (relay, relay-many)
    """

var arguments = Array(CommandLine.arguments.dropFirst())
if arguments.first == "_sandbox" {
    try await SandboxProcess.serve(Array(arguments.dropFirst()))
    exit(0)
}

var flags: [String: String] = [:]
var scenarios: [String] = []
var json = false
var index = 0
while index < arguments.count {
    let argument = arguments[index]
    if argument == "--json" {
        json = true
    } else if argument == "--no-echo" {
        flags["no-echo"] = "1"
    } else if argument.hasPrefix("--"), index + 1 < arguments.count {
        flags[String(argument.dropFirst(2))] = arguments[index + 1]
        index += 1
    } else if argument.hasPrefix("-") {
        FileHandle.standardError.write(Data((usage + "\n").utf8))
        exit(2)
    } else {
        scenarios.append(argument)
    }
    index += 1
}
if scenarios.isEmpty || scenarios == ["all"] { scenarios = ["codec", "relay", "relay-many", "migrate", "migrate-many", "memory"] }

let options = flags
@MainActor func int(_ name: String, _ fallback: Int) -> Int { options[name].flatMap { Int($0.replacingOccurrences(of: "_", with: "")) } ?? fallback }
@MainActor func double(_ name: String, _ fallback: Double) -> Double { options[name].flatMap(Double.init) ?? fallback }

let notify = int("notify-interval-ms", 0)
let concurrency = int("concurrency", 32)
#if DEBUG
FileHandle.standardError.write(Data("warning: a debug build; figures are meaningless (use -c release)\n".utf8))
#endif

for scenario in scenarios {
    let result: ScenarioResult
    do {
        switch scenario {
        case "codec":
            result = CodecBench(seconds: double("codec-seconds", 1)).run()
        case "relay":
            result = try await RelayBench(messages: int("messages", 20_000), conversations: int("conversations", 10), concurrency: concurrency,
                                          notifyIntervalMs: notify, rate: double("rate", 1000), rateMessages: int("rate-messages", 10_000), routeEchoes: options["no-echo"] == nil,
                                          store: options["store"], instances: int("instances", 1))
                .run(name: "relay")
        case "relay-many":
            result = try await RelayBench(messages: int("messages", 20_000), conversations: int("conversations", 1000), concurrency: concurrency,
                                          notifyIntervalMs: notify, rate: double("rate", 1000), rateMessages: int("rate-messages", 10_000), routeEchoes: options["no-echo"] == nil,
                                          store: options["store"], instances: int("instances", 1))
                .run(name: "relay-many")
        case "migrate":
            result = try await MigrateBench(messages: int("messages", 100_000), concurrency: concurrency, pageSize: int("page-size", 100)).run()
        case "migrate-many":
            result = try await MigrateBench(messages: int("messages", 100_000), concurrency: concurrency, pageSize: int("page-size", 100),
                                            conversations: int("conversations", 20), parallel: int("parallel", 8), name: "migrate-many").run()
        case "verify":
            result = try await VerifyBench(messages: int("messages", 100_000), concurrency: concurrency, conversations: int("conversations", 100)).run()
        case "memory":
            result = try await MemoryBench(messages: int("messages", 1_000_000), conversations: int("conversations", 100), concurrency: concurrency,
                                           notifyIntervalMs: notify).run()
        default:
            FileHandle.standardError.write(Data("unknown scenario '\(scenario)'\n\(usage)\n".utf8))
            exit(2)
        }
    } catch {
        FileHandle.standardError.write(Data("\(scenario) failed: \(error)\n".utf8))
        exit(1)
    }
    result.print(asJSON: json)
}
