import Foundation
import Testing

/// What the repository says about itself stays checkable: the architecture document names only types that
/// exist, and code comments cite only what the repository contains.
@Suite struct RepositoryHygieneTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    /// Swift files under the repository's code folders, as (relative path, text).
    static func sources(_ folders: [String], extensions: Set<String> = ["swift"]) throws -> [(path: String, text: String)] {
        var found: [(String, String)] = []
        for folder in folders {
            let base = root.appendingPathComponent(folder)
            guard let walker = FileManager.default.enumerator(at: base, includingPropertiesForKeys: nil) else { continue }
            for case let url as URL in walker where extensions.contains(url.pathExtension) {
                let relative = String(url.path.dropFirst(root.path.count + 1))
                found.append((relative, try String(contentsOf: url, encoding: .utf8)))
            }
        }
        return found
    }

    static func matches(_ pattern: String, in text: String) throws -> [[String]] {
        let regex = try NSRegularExpression(pattern: pattern)
        let range = NSRange(text.startIndex..., in: text)
        return regex.matches(in: text, range: range).map { match in
            (0..<match.numberOfRanges).map { index in
                Range(match.range(at: index), in: text).map { String(text[$0]) } ?? ""
            }
        }
    }

    /// Types of the libraries the bridge builds on that docs/architecture.md names (by library).
    static let libraryTypes: [String: String] = [
        "Logger": "swift-log", "StreamLogHandler": "swift-log", "MetricsSystem": "swift-metrics",
        "PrometheusCollectorRegistry": "swift-prometheus", "Service": "swift-service-lifecycle",
        "ServiceGroup": "swift-service-lifecycle", "UnixSignalsSequence": "swift-service-lifecycle",
        "HTTP1Channel": "Hummingbird", "IdleStateHandler": "swift-nio", "MaximumAvailableConnections": "Hummingbird",
    ]

    /// Vendor terms the document writes in code style (not types).
    static let vendorTerms: Set<String> = ["CheckSum", "MD5"]

    @Test func theArchitectureDocumentNamesOnlyTypesThatExist() throws {
        let document = try String(contentsOf: Self.root.appendingPathComponent("docs/architecture.md"), encoding: .utf8)
        var named = Set<String>(), files = Set<String>()
        for match in try Self.matches("`([A-Z][A-Za-z0-9]+)(?:[.(<][^`\\n]*)?`", in: document) {
            // `Package.swift`, `BridgeServices.swift`: a file, which must exist.
            if match[0].hasSuffix(".swift`") { files.insert(String(match[0].dropFirst().dropLast())) } else { named.insert(match[1]) }
        }
        #expect(named.count > 50, "the document's code names were found: \(named.count)")

        var declared = Set<String>()
        let code = try Self.sources(["Sources", "adapters", "Tests", "Benchmarks", "Plugins"])
        for (path, text) in code {
            declared.insert(URL(fileURLWithPath: path).deletingPathExtension().lastPathComponent.components(separatedBy: "+")[0])
            for match in try Self.matches("\\b(?:struct|class|enum|protocol|actor|typealias|extension|case)\\s+([A-Z][A-Za-z0-9]+)", in: text) {
                declared.insert(match[1])
            }
        }
        let package = try String(contentsOf: Self.root.appendingPathComponent("Package.swift"), encoding: .utf8)
        for match in try Self.matches("name: \"([A-Za-z0-9-]+)\"", in: package) { declared.insert(match[1]) }

        let fileNames = Set(code.map { URL(fileURLWithPath: $0.path).lastPathComponent } + ["Package.swift"])
        #expect(files.subtracting(fileNames).isEmpty, "docs/architecture.md names files that do not exist: \(files.subtracting(fileNames).sorted())")
        let unknown = named.subtracting(declared).subtracting(Self.libraryTypes.keys).subtracting(Self.vendorTerms).sorted()
        #expect(unknown.isEmpty, "docs/architecture.md names what the code does not declare: \(unknown)")
    }

    @Test func codeCommentsCiteOnlyWhatTheRepositoryContains() throws {
        // Written in pieces so that this file does not match itself.
        let patterns = [
            "\\bseeds? 0[0-9][0-9]\\b", "\\b[Ii]ssue #?[0-9]+", "\\b[Tt]he " + "issue('s)?\\b", "shared/" + "vendors", "shared/" + "seeds",
            "\\.\\./" + "shared",
        ]
        var found: [String] = []
        for (path, text) in try Self.sources(["Sources", "adapters", "Tests", "Benchmarks"], extensions: ["swift", "yaml"]) {
            for (number, line) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
                let comment = line.range(of: "//").map { String(line[$0.lowerBound...]) } ?? (line.trimmingCharacters(in: .whitespaces).hasPrefix("#") ? String(line) : nil)
                guard let comment else { continue }
                for pattern in patterns where try !Self.matches(pattern, in: comment).isEmpty {
                    found.append("\(path):\(number + 1): \(comment.prefix(120))")
                }
            }
        }
        #expect(found.isEmpty, "comments citing what the repository does not contain:\n\(found.joined(separator: "\n"))")
    }

    /// Every relative link in the README and the documents leads somewhere: a file or folder of the
    /// repository, and for `#anchor` a heading of that document (as GitHub spells heading anchors:
    /// lower case, punctuation dropped, spaces as dashes). Links inside code blocks are not links.
    @Test func everyRelativeLinkInTheDocumentsLeadsToAFileAndHeading() throws {
        let documents = try Self.sources(["docs", "examples"], extensions: ["md"]) + [("README.md", try String(contentsOf: Self.root.appendingPathComponent("README.md"), encoding: .utf8))]
        func anchors(_ text: String) -> Set<String> {
            var found = Set<String>(), inCode = false
            for line in text.split(separator: "\n", omittingEmptySubsequences: false) {
                if line.hasPrefix("```") { inCode.toggle(); continue }
                guard !inCode, line.hasPrefix("#") else { continue }
                let title = line.drop { $0 == "#" }.trimmingCharacters(in: .whitespaces).lowercased()
                found.insert(String(title.unicodeScalars.filter { CharacterSet.alphanumerics.contains($0) || $0 == "-" || $0 == " " || $0 == "_" }
                    .map(Character.init)).replacingOccurrences(of: " ", with: "-"))
            }
            return found
        }
        var checked = 0, broken: [String] = []
        for (path, text) in documents {
            var inCode = false
            for (number, line) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
                if line.hasPrefix("```") { inCode.toggle(); continue }
                if inCode { continue }
                for match in try Self.matches("\\]\\(([^)\\s]+)\\)", in: String(line)) where match[1].range(of: "^[a-z]+:", options: .regularExpression) == nil {
                    let parts = match[1].split(separator: "#", maxSplits: 1, omittingEmptySubsequences: false).map(String.init)
                    let here = Self.root.appendingPathComponent(path)
                    let target = parts[0].isEmpty ? here : here.deletingLastPathComponent().appendingPathComponent(parts[0]).standardizedFileURL
                    checked += 1
                    guard FileManager.default.fileExists(atPath: target.path) else {
                        broken.append("\(path):\(number + 1): \(match[1]) (no such file)")
                        continue
                    }
                    if parts.count == 2, target.pathExtension == "md", !anchors(try String(contentsOf: target, encoding: .utf8)).contains(parts[1].lowercased()) {
                        broken.append("\(path):\(number + 1): \(match[1]) (no such heading)")
                    }
                }
            }
        }
        #expect(checked > 40, "the documents' links were found: \(checked)")
        #expect(broken.isEmpty, "links that lead nowhere:\n\(broken.joined(separator: "\n"))")
    }
}
