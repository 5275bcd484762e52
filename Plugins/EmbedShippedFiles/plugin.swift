import Foundation
import PackagePlugin

/// Compiles the shipped mapping files (`Sources/IMMapping/mappings/**.yaml`), the `VERSION` file and the
/// checkout's commit into the IMMapping module (`EmbeddedFiles`), so that `imbridge` is one self-contained
/// executable: no resource bundle beside it, no path into the source tree. SwiftPM has no resource mode
/// that puts files inside an executable on Linux, hence this plugin and its tool (`imbridge-embed`).
@main
struct EmbedShippedFiles: BuildToolPlugin {
    func createBuildCommands(context: PluginContext, target: Target) async throws -> [Command] {
        let manager = FileManager.default
        let package = context.package.directoryURL
        let mappings = package.appendingPathComponent("Sources/\(target.name)/mappings")
        var files: [URL] = []
        for directory in [mappings, mappings.appendingPathComponent("custom")] {
            for name in (try? manager.contentsOfDirectory(atPath: directory.path)) ?? [] where name.hasSuffix(".yaml") || name.hasSuffix(".yml") {
                files.append(directory.appendingPathComponent(name))
            }
        }
        // The commit: HEAD and the ref it names are inputs, so a new commit re-runs the tool.
        var gitDir = package.appendingPathComponent(".git")
        if let text = try? String(contentsOf: gitDir, encoding: .utf8), text.hasPrefix("gitdir: ") {
            let path = text.dropFirst(8).trimmingCharacters(in: .whitespacesAndNewlines)
            gitDir = path.hasPrefix("/") ? URL(fileURLWithPath: path) : package.appendingPathComponent(path)
        }
        var gitInputs: [URL] = []
        let head = gitDir.appendingPathComponent("HEAD")
        if manager.fileExists(atPath: head.path) {
            gitInputs.append(head)
            if let text = try? String(contentsOf: head, encoding: .utf8), text.hasPrefix("ref: ") {
                let ref = text.dropFirst(5).trimmingCharacters(in: .whitespacesAndNewlines)
                var common = gitDir
                if let relative = try? String(contentsOf: gitDir.appendingPathComponent("commondir"), encoding: .utf8) {
                    let path = relative.trimmingCharacters(in: .whitespacesAndNewlines)
                    common = path.hasPrefix("/") ? URL(fileURLWithPath: path) : gitDir.appendingPathComponent(path)
                }
                for candidate in [gitDir.appendingPathComponent(ref), common.appendingPathComponent(ref), common.appendingPathComponent("packed-refs")]
                where manager.fileExists(atPath: candidate.path) {
                    gitInputs.append(candidate)
                }
            }
        }
        let version = package.appendingPathComponent("VERSION")
        let output = context.pluginWorkDirectoryURL.appendingPathComponent("EmbeddedFiles.swift")
        return [.buildCommand(
            displayName: "Embedding \(files.count) shipped mapping files and the build's version",
            executable: try context.tool(named: "imbridge-embed").url,
            arguments: [output.path, version.path, manager.fileExists(atPath: head.path) ? gitDir.path : "", mappings.path] + files.map(\.path),
            inputFiles: files + [version] + gitInputs,
            outputFiles: [output])]
    }
}
