import ArgumentParser
import Foundation
import IMBridgeApp
import IMCore
import IMStore

/// `imbridge portals list|link|unlink --config FILE`: the conversation map (`IMBridgeApp.PortalsAdmin`).
struct PortalsCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "portals", abstract: "List, link or unlink the groups the bridge keeps for each other (the conversation map).",
        subcommands: [List.self, Link.self, Unlink.self])

    struct List: AsyncParsableCommand {
        @Option(name: .long, help: "The bridge configuration (YAML).") var config: String
        @Flag(name: .long, help: "JSON instead of lines.") var json = false
        func run() async throws {
            let store = try BridgeStore(path: try BridgeConfig.load(path: config).store)
            FileHandle.standardOutput.write(Data(try PortalsAdmin.listing(store, json: json).utf8))
        }
    }

    struct Link: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Map an existing target group to a source group (e.g. wk:group:g1 yx:group:2740111).")
        @Option(name: .long, help: "The bridge configuration (YAML).") var config: String
        @Argument(help: "The source group, BACKEND:group:ID.") var source: String
        @Argument(help: "The target group, BACKEND:group:ID.") var target: String
        func run() async throws {
            let store = try BridgeStore(path: try BridgeConfig.load(path: config).store)
            let now = Int64(Date().timeIntervalSince1970 * 1000)
            FileHandle.standardOutput.write(Data(try PortalsAdmin.link(store, source: source, target: target, at: now).utf8))
        }
    }

    struct Unlink: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Forget a source group's portal on a target (the target group is left as it is).")
        @Option(name: .long, help: "The bridge configuration (YAML).") var config: String
        @Option(name: .long, help: "The target backend.") var target: String
        @Argument(help: "The source group, BACKEND:group:ID.") var source: String
        func run() async throws {
            let store = try BridgeStore(path: try BridgeConfig.load(path: config).store)
            let now = Int64(Date().timeIntervalSince1970 * 1000)
            FileHandle.standardOutput.write(Data(try PortalsAdmin.unlink(store, source: source, target: BackendID(target), at: now).utf8))
        }
    }
}
