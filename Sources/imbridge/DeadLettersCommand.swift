import ArgumentParser
import Foundation
import IMRelay
import IMStore

/// `imbridge deadletters list|retry --config FILE`: what could not be relayed, and putting it back.
struct DeadLettersCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "deadletters", abstract: "List or retry dead letters.",
                                                    subcommands: [List.self, Retry.self])

    struct List: AsyncParsableCommand {
        @Option(name: .long, help: "The bridge configuration (YAML).") var config: String
        func run() async throws {
            let store = try BridgeStore(path: try BridgeConfig.load(path: config).store)
            let letters = try store.read { try $0.deadLetters() }
            var out = "\(letters.count) dead letter(s)\n"
            for letter in letters {
                out += "  #\(letter.id) \(letter.lane) \(letter.kind) from \(letter.sourceBackend)/\(letter.sourceEventID) attempts=\(letter.attempts): \(letter.lastError ?? "")\n"
            }
            FileHandle.standardOutput.write(Data(out.utf8))
        }
    }

    struct Retry: AsyncParsableCommand {
        @Option(name: .long, help: "The bridge configuration (YAML).") var config: String
        @Option(name: .long, help: "Only these dead letters (repeatable); all when omitted.") var id: [Int64] = []
        func run() async throws {
            let store = try BridgeStore(path: try BridgeConfig.load(path: config).store)
            let count = try store.transaction { try $0.retryDeadLetters(ids: id.isEmpty ? nil : id) }
            FileHandle.standardOutput.write(Data("\(count) dead letter(s) back in their lanes; a running bridge picks them up within a second\n".utf8))
        }
    }
}
