import Foundation

/// The "endpoint → served / not served" table of `docs/adapters/<vendor>.md`: every row
/// `| `ENDPOINT` | served |` or `| `ENDPOINT` | not served |` (ENDPOINT a path, or `METHOD /path`), in
/// document order. Each vendor's sandbox tests compare it with the sandbox's own route list.
public enum EndpointTable {
    public struct Row: Sendable, Equatable {
        public var endpoint: String
        public var served: Bool
    }

    public static func rows(vendor: String, file: String = #filePath) throws -> [Row] {
        var root = URL(fileURLWithPath: file)
        while root.path != "/" && !FileManager.default.fileExists(atPath: root.appendingPathComponent("Package.swift").path) {
            root.deleteLastPathComponent()
        }
        let text = try String(contentsOf: root.appendingPathComponent("docs/adapters/\(vendor).md"), encoding: .utf8)
        return text.split(separator: "\n").compactMap { line in
            guard let match = line.wholeMatch(of: /\|\s*`((?:(?:GET|POST|PUT|DELETE) )?\/[^`]*)`\s*\|\s*(served|not served)\s*\|.*/) else { return nil }
            return Row(endpoint: String(match.1), served: match.2 == "served")
        }
    }
}
