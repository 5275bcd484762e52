import ArgumentParser
import Foundation
import IMMapping
import IMVendors

/// `imbridge mappings check [DIR]`: loads the shipped content tables plus DIR (laid out like
/// `mappings/`: `<vendor>.yaml`, `custom/*.yaml`), prints what each vendor ends up with and every
/// problem (file, line, what is wrong); exits non-zero on any problem.
struct MappingsCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "mappings", abstract: "Inspect content mappings.",
                                                    subcommands: [Check.self])

    struct Check: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Load the shipped mappings plus DIR and report what was loaded and every problem.")

        @Argument(help: "A directory of overrides and additions (same layout as mappings/). Omit to check the shipped tables.")
        var directory: String?

        func run() async throws {
            let set: MappingSet
            do {
                set = try MappingSet.load(overrides: directory.map { URL(fileURLWithPath: $0) })
            } catch let problems as MappingProblems {
                let lines = problems.problems.map { "error: \($0)" } + ["\(problems.problems.count) problem(s); nothing loaded"]
                FileHandle.standardError.write(Data((lines.joined(separator: "\n") + "\n").utf8))
                throw ExitCode(1)
            }
            FileHandle.standardOutput.write(Data(Self.report(set, directory: directory).utf8))
        }

        /// `duration_ms=timeTrad(seconds_ceil)`, `width=width(default 100)`.
        static func describe(_ rule: FieldRule) -> String {
            var notes: [String] = []
            if rule.transform != .none { notes.append(rule.transform.name) }
            if let value = rule.decodeDefault { notes.append("default \(value.stringValue ?? value.jsonString())") }
            if rule.required { notes.append("required") }
            return "\(rule.neutral)=\(rule.wireName)" + (notes.isEmpty ? "" : "(" + notes.joined(separator: ", ") + ")")
        }

        static func report(_ set: MappingSet, directory: String?) -> String {
            var out = "mappings: shipped\(directory.map { " + \($0)" } ?? "")\n  files:\n"
            for file in set.files { out += "    \(file)\n" }
            for vendor in Vendors.names {
                let table = set.table(vendor)
                out += "  \(vendor): \(table.entries.count) wire types\n"
                for entry in table.entries {
                    let origin = entry.customFile.map { " [custom/\($0)]" } ?? ""
                    let flags = entry.decodeOnly ? " (decode only)" : ""
                    out += "    \(entry.label)\(flags)\(origin)  fields: \(entry.fields.map(Self.describe).joined(separator: ", "))\n"
                }
            }
            out += "  custom types:\n"
            for name in set.customTypes.keys.sorted() {
                let type = set.customTypes[name]!
                let missing = Vendors.names.filter { !type.vendors.contains($0) }
                let fallback = missing.isEmpty ? "" : "; fallback text on \(missing.joined(separator: ", "))"
                out += "    \(name) (\(type.target)) on \(type.vendors.joined(separator: ", "))\(fallback)\n"
            }
            return out + "ok\n"
        }
    }
}
