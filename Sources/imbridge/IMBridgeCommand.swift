import ArgumentParser
import IMMapping

@main
struct IMBridgeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "imbridge",
        abstract: "One neutral API over WuKongIM, RongCloud, NetEase NIM and JMessage; bridges and sandboxes for them.",
        version: "imbridge \(MappingSet.buildVersion.version) (commit \(MappingSet.buildVersion.commit))",
        subcommands: [DemoCommand.self, RunCommand.self, MigrateCommand.self, CheckCommand.self, DeadLettersCommand.self, SandboxCommand.self, MappingsCommand.self])
}
