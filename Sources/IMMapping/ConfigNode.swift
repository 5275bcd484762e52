import Foundation
import IMCore
import Yams

/// A YAML node with its key path, so every configuration error names the key (and the line) it is about:
/// `bridge.yaml:12: routes[0].from: …`.
public struct ConfigNode {
    let node: Node?
    public let path: String
    public let file: String
    let environment: [String: String]

    init(node: Node?, path: String, file: String, environment: [String: String]) {
        self.node = node
        self.path = path
        self.file = file
        self.environment = environment
    }

    /// Parses YAML text; a syntax error names the file and line.
    public static func parse(_ yaml: String, file: String, environment: [String: String] = ProcessInfo.processInfo.environment) throws -> ConfigNode {
        do {
            return ConfigNode(node: try Yams.compose(yaml: yaml), path: "", file: file, environment: environment)
        } catch {
            throw IMError(.invalidArgument, "\(file): not valid YAML: \(error)")
        }
    }

    public func error(_ message: String) -> IMError {
        let line = node?.mark.map { ":\($0.line)" } ?? ""
        return IMError(.invalidArgument, "\(file)\(line): \(path.isEmpty ? "(top level)" : path): \(message)", details: ["key": path])
    }

    public var isPresent: Bool {
        guard let node else { return false }
        return node.null == nil
    }

    func child(_ key: String, _ node: Node?) -> ConfigNode {
        ConfigNode(node: node, path: path.isEmpty ? key : "\(path).\(key)", file: file, environment: environment)
    }

    public subscript(key: String) -> ConfigNode {
        child(key, node?.mapping?[key])
    }

    /// The keys of a mapping, in file order.
    public func keys() throws -> [String] {
        guard let mapping = node?.mapping else { throw error("expected a mapping") }
        return mapping.keys.compactMap(\.string)
    }

    /// Refuses keys outside `allowed` (catches typos such as `direciton`).
    public func allowOnly(_ allowed: Set<String>) throws {
        guard let mapping = node?.mapping else { return }
        for (keyNode, _) in mapping {
            guard let key = keyNode.string, !allowed.contains(key) else { continue }
            // Point at the key itself: its value may start lines later.
            throw ConfigNode(node: keyNode, path: child(key, nil).path, file: file, environment: environment)
                .error("unknown key (expected one of: \(allowed.sorted().joined(separator: ", ")))")
        }
    }

    public func list() throws -> [ConfigNode] {
        guard let sequence = node?.sequence else { throw error("expected a list") }
        return sequence.enumerated().map { index, item in
            ConfigNode(node: item, path: "\(path)[\(index)]", file: file, environment: environment)
        }
    }

    /// A string, with `${NAME}` replaced from the environment (an unset variable is an error).
    public func string() throws -> String {
        guard isPresent, let raw = node?.string ?? node?.scalar?.string else { throw error("is required (a string)") }
        return try expand(raw)
    }

    public func optionalString() throws -> String? { isPresent ? try string() : nil }

    public func int() throws -> Int {
        guard let text = try optionalString(), let value = Int(text) else { throw error("expected an integer") }
        return value
    }

    public func optionalInt() throws -> Int? { isPresent ? try int() : nil }

    /// A scalar exactly as written (no `${…}` expansion): mapping files use `{field}` templates.
    public func scalar() throws -> String {
        guard isPresent, let raw = node?.scalar?.string else { throw error("expected a single value") }
        return raw
    }

    public func optionalScalar() throws -> String? { isPresent ? try scalar() : nil }

    public func bool() throws -> Bool {
        switch try scalar().lowercased() {
        case "true", "yes", "on": return true
        case "false", "no", "off": return false
        default: throw error("expected true or false")
        }
    }

    /// A scalar written without quotes (so `1` is a number and `"1"` text).
    public var isPlainScalar: Bool { node?.scalar?.style == .plain }

    public var isMapping: Bool { node?.mapping != nil }
    public var isSequence: Bool { node?.sequence != nil }
    public var isScalar: Bool { node?.scalar != nil && isPresent }

    /// The children of a mapping in file order, refusing a key written twice.
    public func entries() throws -> [(key: String, node: ConfigNode)] {
        guard let mapping = node?.mapping else { throw error("expected a mapping") }
        var seen: Set<String> = []
        var result: [(key: String, node: ConfigNode)] = []
        for (key, value) in mapping {
            guard let name = key.string else { throw error("keys must be text") }
            let child = child(name, value)
            guard seen.insert(name).inserted else {
                throw ConfigNode(node: key, path: child.path, file: file, environment: environment).error("is written twice")
            }
            result.append((name, child))
        }
        return result
    }

    func expand(_ text: String) throws -> String {
        var result = ""
        var rest = Substring(text)
        while let start = rest.range(of: "${") {
            result += rest[..<start.lowerBound]
            guard let end = rest[start.upperBound...].firstIndex(of: "}") else { throw error("unterminated ${ in '\(text)'") }
            let name = String(rest[start.upperBound..<end])
            guard let value = environment[name] else { throw error("environment variable \(name) is not set") }
            result += value
            rest = rest[rest.index(after: end)...]
        }
        return result + rest
    }

    /// Every scalar under this mapping as strings (adapter settings), `${…}` expanded.
    public var line: Int? { node?.mark?.line }

    public func stringMap() throws -> [String: String] {
        var map: [String: String] = [:]
        for key in try keys() where key != "adapter" { map[key] = try self[key].string() }
        return map
    }
}
