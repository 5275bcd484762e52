import Foundation
import Testing

/// The module graph drawn in docs/architecture.md ("Which module may import which") is the one the code
/// has: every module of the package has a row, and no source file imports a module of the package its
/// row does not name. An import that turns an arrow around (the engine importing the server, an adapter
/// importing its sandbox, catch-up importing migration) fails here, not in a review.
@Suite struct ModuleGraphTests {
    static let root = RepositoryHygieneTests.root

    /// The table between the markers: module → the package's modules it may import. `<Vendor>` rows stand
    /// for every folder under adapters/.
    static func allowed() throws -> [String: Set<String>] {
        let doc = try String(contentsOf: root.appendingPathComponent("docs/architecture.md"), encoding: .utf8)
        guard let begin = doc.range(of: "<!-- module-imports:begin -->"), let end = doc.range(of: "<!-- module-imports:end -->") else {
            Issue.record("docs/architecture.md has no module-imports markers")
            return [:]
        }
        var table: [String: Set<String>] = [:]
        for line in doc[begin.upperBound..<end.lowerBound].split(separator: "\n") where line.hasPrefix("| `") {
            let cells = line.split(separator: "|").map { $0.trimmingCharacters(in: .whitespaces) }
            guard cells.count >= 2 else { continue }
            let names = { (cell: String) in
                cell.split(separator: ",").map { $0.trimmingCharacters(in: CharacterSet(charactersIn: " `")) }.filter { !$0.isEmpty && $0 != "—" }
            }
            for vendor in try vendors() {
                let expand = { (name: String) in name.replacingOccurrences(of: "<Vendor>", with: vendor) }
                table[expand(names(cells[0])[0])] = Set(names(cells[1]).map(expand))
            }
        }
        return table
    }

    static func vendors() throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: root.appendingPathComponent("adapters").path).filter { !$0.hasPrefix(".") }.sorted()
    }

    /// Every module of the package with the folder its sources are in, and the folders left out of it.
    static func modules() throws -> [(name: String, folder: String, excluding: [String])] {
        var found: [(String, String, [String])] = []
        for name in try FileManager.default.contentsOfDirectory(atPath: root.appendingPathComponent("Sources").path) where !name.hasPrefix(".") {
            found.append((name, "Sources/\(name)", []))
        }
        for vendor in try vendors() {
            found.append((vendor, "adapters/\(vendor)", ["adapters/\(vendor)/Sandbox", "adapters/\(vendor)/Facts"]))
            found.append(("\(vendor)Sandbox", "adapters/\(vendor)/Sandbox", []))
            found.append(("\(vendor)Facts", "adapters/\(vendor)/Facts", []))
        }
        return found
    }

    @Test func everyImportIsAnArrowOfTheDocumentedGraph() throws {
        let table = try Self.allowed()
        let modules = try Self.modules()
        let names = Set(modules.map(\.name))
        #expect(Set(table.keys) == names, "rows without a module: \(Set(table.keys).subtracting(names).sorted()); modules without a row: \(names.subtracting(table.keys).sorted())")
        var wrong: [String] = []
        for module in modules {
            let files = try RepositoryHygieneTests.sources([module.folder])
                .filter { file in !module.excluding.contains { file.path.hasPrefix($0 + "/") } }
            for file in files {
                for match in try RepositoryHygieneTests.matches(#"(?m)^(?:@[\w()]+ )*import ([A-Za-z_]+)$"#, in: file.text) {
                    let imported = match[1]
                    guard names.contains(imported), imported != module.name else { continue }
                    if !(table[module.name] ?? []).contains(imported) { wrong.append("\(file.path) imports \(imported)") }
                }
            }
        }
        #expect(wrong.isEmpty, "imports the graph in docs/architecture.md does not allow:\n\(wrong.joined(separator: "\n"))")
    }

    /// The check can fail: a made-up import outside the table is reported.
    @Test func anImportAgainstAnArrowIsFound() throws {
        let table = try Self.allowed()
        #expect(table["IMRelay"]?.contains("IMServer") == false)
        #expect(table["IMCatchUp"]?.contains("IMMigration") == false)
        #expect(table["WuKong"]?.contains("WuKongSandbox") == false)
        #expect(table["IMCore"] == [])
    }
}
