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
    /// Where an absent node would be written: the line of the key that names it when that key is
    /// present, else the line of the enclosing mapping's key (so "is required" errors have a line too).
    let anchorLine: Int?

    init(node: Node?, path: String, file: String, environment: [String: String], anchorLine: Int? = nil) {
        self.node = node
        self.path = path
        self.file = file
        self.environment = environment
        self.anchorLine = anchorLine
    }

    /// Parses YAML text. A syntax error or a key written twice names the file, line and column and
    /// the parser's short reason, never the text around it: the document may hold secrets, and the
    /// YAML library's own error descriptions quote the offending line (or, for a duplicated key, the
    /// whole document).
    public static func parse(_ yaml: String, file: String, environment: [String: String] = ProcessInfo.processInfo.environment) throws -> ConfigNode {
        do {
            return ConfigNode(node: try Yams.compose(yaml: yaml), path: "", file: file, environment: environment, anchorLine: 1)
        } catch let error as YamlError {
            throw IMError(.invalidArgument, "\(file)\(Self.describe(error))", details: ["key": ""])
        } catch {
            throw IMError(.invalidArgument, "\(file): not valid YAML", details: ["key": ""])
        }
    }

    /// `:LINE:COLUMN: not valid YAML: REASON` from a Yams error, with nothing of the document in it.
    static func describe(_ error: YamlError) -> String {
        func at(_ mark: Mark) -> String { ":\(mark.line):\(mark.column)" }
        func reason(_ context: YamlError.Context?, _ problem: String) -> String {
            // libyaml's context and problem are fixed phrases ("while scanning a simple key", "mapping
            // values are not allowed in this context"); the context's own mark is dropped with the text.
            let prefix = context.map { $0.text.count <= 80 ? "\($0.text), " : "" } ?? ""
            return prefix + problem
        }
        switch error {
        case let .scanner(context, problem, mark, _), let .parser(context, problem, mark, _), let .composer(context, problem, mark, _):
            return "\(at(mark)): not valid YAML: \(reason(context, problem))"
        case let .reader(problem, offset, _, _):
            return ": not valid YAML: \(problem)\(offset.map { " (at byte \($0))" } ?? "")"
        case let .duplicatedKeysInMapping(duplicates, context):
            let keys = duplicates.sorted().map { "'\($0)'" }.joined(separator: ", ")
            return "\(at(context.mark)): not valid YAML: key \(keys) is written more than once in one mapping"
        case .dataCouldNotBeDecoded:
            return ": not valid YAML: the file is not UTF-8 text"
        default:
            return ": not valid YAML"
        }
    }

    public func error(_ message: String) -> IMError {
        let line = (node?.mark?.line ?? anchorLine).map { ":\($0)" } ?? ""
        return IMError(.invalidArgument, "\(file)\(line): \(path.isEmpty ? "(top level)" : path): \(message)", details: ["key": path])
    }

    /// The line of the key naming this node (or, when absent, of the enclosing mapping's key).
    public var keyLine: Int? { anchorLine }

    /// `error` at the line of the key naming this node (a mapping's first line is the line after its key).
    public func errorAtKey(_ message: String) -> IMError {
        let line = (anchorLine ?? node?.mark?.line).map { ":\($0)" } ?? ""
        return IMError(.invalidArgument, "\(file)\(line): \(path.isEmpty ? "(top level)" : path): \(message)", details: ["key": path])
    }

    /// What this node holds, for "expected …, got …" errors (never its text).
    var shape: String {
        guard let node, isPresent else { return "nothing" }
        if node.mapping != nil { return "a mapping" }
        if node.sequence != nil { return "a list" }
        return "a single value"
    }

    /// Refuses a node that is present but not a mapping (`retry: 5`).
    public func expectMapping() throws {
        guard isPresent, node?.mapping == nil else { return }
        throw error("expected a mapping (KEY: VALUE lines below it), got \(shape)")
    }

    public var isPresent: Bool {
        guard let node else { return false }
        return node.null == nil
    }

    func child(_ key: String, _ node: Node?, keyLine: Int? = nil) -> ConfigNode {
        ConfigNode(node: node, path: path.isEmpty ? key : "\(path).\(key)", file: file, environment: environment,
                   anchorLine: keyLine ?? anchorLine)
    }

    public subscript(key: String) -> ConfigNode {
        let pair = node?.mapping?.first { $0.key.string == key }
        return child(key, pair?.value, keyLine: pair?.key.mark?.line)
    }

    /// The keys of a mapping, in file order.
    public func keys() throws -> [String] {
        guard let mapping = node?.mapping else { throw error("expected a mapping, got \(shape)") }
        return mapping.keys.compactMap(\.string)
    }

    /// Refuses keys outside `allowed` (catches typos such as `direciton`); the error lists `listing`
    /// (default: every allowed key), so deprecated names can be accepted without being suggested.
    public func allowOnly(_ allowed: Set<String>, listing: [String]? = nil) throws {
        guard let mapping = node?.mapping else { return }
        for (keyNode, _) in mapping {
            guard let key = keyNode.string, !allowed.contains(key) else { continue }
            // Point at the key itself: its value may start lines later.
            throw ConfigNode(node: keyNode, path: child(key, nil).path, file: file, environment: environment, anchorLine: anchorLine)
                .error("unknown key (expected one of: \((listing ?? Array(allowed)).sorted().joined(separator: ", ")))")
        }
    }

    public func list() throws -> [ConfigNode] {
        guard let sequence = node?.sequence else { throw error(isPresent ? "expected a list, got \(shape)" : "expected a list") }
        return sequence.enumerated().map { index, item in
            ConfigNode(node: item, path: "\(path)[\(index)]", file: file, environment: environment, anchorLine: item.mark?.line ?? anchorLine)
        }
    }

    /// A string, with `${NAME}` replaced from the environment (an unset variable is an error).
    public func string() throws -> String {
        guard isPresent else { throw error("is required (a string)") }
        guard let raw = node?.scalar?.string else { throw error("expected a single value, got \(shape)") }
        return try expand(raw)
    }

    public func optionalString() throws -> String? { isPresent ? try string() : nil }

    /// The scalar as written when it takes (part of) its value from the environment (`${NAME}`), else nil.
    public var substitution: String? {
        guard let raw = node?.scalar?.string, raw.contains("${") else { return nil }
        return raw
    }

    /// How an error may show `value`, read from this node: quoted (`'value'`) when the file holds it,
    /// but `the value of ${NAME}` when it came from the environment — an environment variable may hold
    /// a secret, wherever it is put (docs/architecture.md, "Secrets in errors and logs").
    public func quoted(_ value: String) -> String {
        guard let raw = substitution else { return "'\(value)'" }
        return Self.describeSubstitution(raw)
    }

    /// `value` (a number, a duration …) unquoted, or `the value of ${NAME}` as `quoted`.
    public func shown(_ value: some CustomStringConvertible) -> String {
        substitution.map(Self.describeSubstitution) ?? value.description
    }

    /// `the value of ${NAME}` for a scalar that is exactly `${NAME}`, else `the value of '…${NAME}…'`.
    public static func describeSubstitution(_ raw: String) -> String {
        let whole = raw.hasPrefix("${") && raw.hasSuffix("}") && raw.dropFirst(2).firstIndex(of: "}") == raw.index(before: raw.endIndex)
        return whole ? "the value of \(raw)" : "the value of '\(raw)'"
    }

    /// `message` (built elsewhere, about `value` read from this node) with `value` replaced as
    /// `quoted` would show it when the value came from the environment.
    public func scrubbing(_ message: String, value: String) -> String {
        guard let raw = substitution, !value.isEmpty else { return message }
        return message.replacingOccurrences(of: "'\(value)'", with: Self.describeSubstitution(raw))
            .replacingOccurrences(of: value, with: Self.describeSubstitution(raw))
    }

    public func int() throws -> Int {
        guard let text = try optionalString(), let value = Int(text) else { throw error("expected a whole number") }
        return value
    }

    public func optionalInt() throws -> Int? { isPresent ? try int() : nil }

    /// A scalar exactly as written (no `${…}` expansion): mapping files use `{field}` templates.
    public func scalar() throws -> String {
        guard isPresent, let raw = node?.scalar?.string else { throw error("expected a single value, got \(shape)") }
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
            let child = child(name, value, keyLine: key.mark?.line)
            guard seen.insert(name).inserted else {
                throw ConfigNode(node: key, path: child.path, file: file, environment: environment, anchorLine: anchorLine).error("is written twice")
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
            // The value is not quoted back: it may be a secret.
            guard let end = rest[start.upperBound...].firstIndex(of: "}") else { throw error("unterminated ${ (expected ${NAME})") }
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
