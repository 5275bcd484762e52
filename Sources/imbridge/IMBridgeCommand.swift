import ArgumentParser
import IMBridgeApp
import IMMapping
import IMRelay
import IMServer

@main
struct IMBridgeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "imbridge",
        abstract: "One neutral API over WuKongIM, RongCloud, NetEase NIM and JMessage; bridges and sandboxes for them.",
        version: "imbridge \(MappingSet.buildVersion.version) (commit \(MappingSet.buildVersion.commit))",
        subcommands: [DemoCommand.self, RunCommand.self, MigrateCommand.self, VerifyCommand.self, CheckCommand.self, DeadLettersCommand.self, TraceCommand.self, PortalsCommand.self, SandboxCommand.self, MappingsCommand.self])

    /// ArgumentParser's own entry, with logging bootstrapped once: `run` does it itself from its
    /// configuration (level, format, secrets); every other command (`demo`, `sandbox`, `check` …) keeps
    /// its printed output readable, with only warnings and errors of the components as text lines on
    /// standard error.
    static func main() async {
        ProcessTuning.limitMallocArenas()
        do {
            var command = try parseAsRoot()
            if !(command is RunCommand) { BridgeLogHandler.bootstrap(level: .warning, format: .text, secrets: [String]()) }
            if var command = command as? any AsyncParsableCommand {
                try await command.run()
            } else {
                try command.run()
            }
        } catch {
            exit(withError: error)
        }
    }
}
