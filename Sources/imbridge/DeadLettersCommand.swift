import ArgumentParser
import Foundation
import IMBridgeApp
import IMRelay
import IMStore

/// `imbridge deadletters list|retry --config FILE`: what could not be relayed (outbound) or converted
/// (inbound poison messages), and putting it back (`IMBridgeApp.DeadLetters`).
struct DeadLettersCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "deadletters", abstract: "List or retry dead letters (outbound and inbound).",
                                                    subcommands: [List.self, Retry.self])

    struct List: AsyncParsableCommand {
        @Option(name: .long, help: "The bridge configuration (YAML).") var config: String
        func run() async throws {
            let store = try BridgeStore(path: try BridgeConfig.load(path: config).store)
            FileHandle.standardOutput.write(Data(try DeadLetters.listing(store).utf8))
        }
    }

    struct Retry: AsyncParsableCommand {
        @Option(name: .long, help: "Only these outbound dead letters (#id; repeatable).") var id: [Int64] = []
        @Option(name: .long, help: "Only these inbound dead letters (in#id; repeatable).") var inbound: [Int64] = []
        @Option(name: .long, help: "The bridge configuration (YAML).") var config: String
        func run() async throws {
            let bridge = try await Bridge.open(configPath: config)
            let text = try await DeadLetters.retry(bridge, outbound: id, inbound: inbound)
            bridge.store.close()
            FileHandle.standardOutput.write(Data(text.utf8))
        }
    }
}
