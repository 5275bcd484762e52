import IMCore

/// One mapping of `bridge.yaml` (the top level, `retry:`, `listener:` …) as its decoder reads it. Every
/// read names its key, so the keys a section accepts are exactly the keys its decoder reads: `finish`
/// refuses any other, and `ConfigSection.reading(_:)` lists them without a file (for docs and tests).
/// Problems are collected, never thrown: one `FILE:LINE: key: reason` each (`ConfigProblems`).
///
/// A duration (`ConfigDuration`) may have a deprecated predecessor whose name carries the unit
/// (`retention_hours`): it is read as before and a warning names the new key and the same value;
/// both given is an error (docs/configuration.md, "Durations").
public final class ConfigSection {
    public let node: ConfigNode
    /// The keys read, in reading order (deprecated names not included).
    public private(set) var keys: [String] = []
    /// The deprecated names still accepted, in reading order.
    public private(set) var deprecatedKeys: [String] = []
    public var problems = ConfigProblems()

    public init(_ node: ConfigNode) {
        self.node = node
        problems.attempt { try node.expectMapping() }
    }

    /// The section `decode` reads from nothing: its `keys` and `deprecatedKeys` are the section's.
    public static func reading(_ decode: (ConfigSection) -> Void) -> ConfigSection {
        let section = ConfigSection(ConfigNode(node: nil, path: "", file: "", environment: [:]))
        decode(section)
        return section
    }

    /// The child `key`, recorded as a key of this section.
    public subscript(key: String) -> ConfigNode {
        if !keys.contains(key) { keys.append(key) }
        return node[key]
    }

    /// `body` on the child `key`; a thrown error is recorded and nil returned (as is nil from `body`).
    public func read<T>(_ key: String, _ body: (ConfigNode) throws -> T?) -> T? {
        let child = self[key]
        return problems.attempt { try body(child) } ?? nil
    }

    /// Runs `body`; a thrown error is recorded and nil returned.
    @discardableResult
    public func attempt<T>(_ body: () throws -> T) -> T? { problems.attempt(body) }

    public func add(_ error: any Error) { problems.add(error) }

    /// The sub-section `key`, decoded by `decode`, its problems and warnings added to this one's.
    public func section<T>(_ key: String, _ decode: (ConfigSection) -> T) -> T {
        let child = ConfigSection(self[key])
        let value = decode(child)
        child.finish(into: &problems)
        return value
    }

    /// Refuses every key this section's decoder did not read, then adds this section's problems and
    /// warnings to `problems`.
    public func finish(into problems: inout ConfigProblems) {
        if node.isMapping {
            self.problems.attempt { try node.allowOnly(Set(keys + deprecatedKeys), listing: keys) }
        }
        problems.merge(self.problems)
    }

    /// How an old key wrote a duration: a number (`fractions`: with a decimal part) in `unit`.
    public struct Legacy: Sendable {
        public var key: String
        public var unit: ConfigDuration.Unit
        public var fractions: Bool

        public init(_ key: String, _ unit: ConfigDuration.Unit, fractions: Bool = false) {
            self.key = key
            self.unit = unit
            self.fractions = fractions
        }
    }

    /// A duration read, with the node it came from (for errors that compare it with another setting).
    public struct Reading {
        public var value: ConfigDuration
        public var node: ConfigNode
    }

    /// The duration under `key` (`10s`), or under the deprecated `legacy` key (`timeout_seconds: 10`)
    /// with a warning; nil when neither is given or the value is refused (the problem is recorded).
    /// `bare`: a number without a unit under `key` itself is still read in that unit, with a warning
    /// (keys that took bare numbers before durations had one syntax).
    public func duration(_ key: String, range: DurationRange, legacy: Legacy? = nil, bare: ConfigDuration.Unit? = nil) -> Reading? {
        let new = self[key]
        let old = legacy.map { legacy -> ConfigNode in
            if !deprecatedKeys.contains(legacy.key) { deprecatedKeys.append(legacy.key) }
            return node[legacy.key]
        }
        if let old, let legacy, old.isPresent {
            if new.isPresent {
                add(old.error("both \(legacy.key) and \(key) are given: keep only \(key) (\(legacy.key) is its deprecated form)"))
                return nil
            }
            do {
                return try Self.legacyDuration(old, newKey: key, unit: legacy.unit, fractions: legacy.fractions, range: range, problems: &problems)
            } catch {
                add(error)
                return nil
            }
        }
        guard new.isPresent else { return nil }
        do {
            let text = try new.string()
            if let bare, Int64(text) != nil {
                return try Self.legacyDuration(new, newKey: key, unit: bare, fractions: false, range: range, problems: &problems)
            }
            guard let value = ConfigDuration(text) else {
                let hint = Int64(text) != nil ? " (a number needs its unit, e.g. \(text)s)" : ""
                throw new.error("expected \(ConfigDuration.syntax)\(new.substitution == nil ? hint : ""), got \(new.quoted(text))")
            }
            guard range.contains(value) else { throw new.error("expected \(range.expected), got \(new.shown(value))") }
            return Reading(value: value, node: new)
        } catch {
            add(error)
            return nil
        }
    }

    /// A number in `unit` under a deprecated key (or a bare number under a key that once took one):
    /// checked against `range` as its duration, and a warning naming the key and value to write.
    static func legacyDuration(_ node: ConfigNode, newKey: String, unit: ConfigDuration.Unit, fractions: Bool, range: DurationRange,
                               problems: inout ConfigProblems) throws -> Reading {
        let text = try node.string()
        guard let value = ConfigDuration.legacy(text, unit, fractions: fractions) else {
            throw node.error("expected \(fractions ? "a number" : "a whole number") of \(unit.name), got \(node.quoted(text))")
        }
        guard range.contains(value) else {
            let equivalent = node.substitution == nil && value.milliseconds >= 0 ? " (\(value))" : ""
            throw node.error("expected \(range.expected), got \(node.shown(text)) \(unit.name)\(equivalent)")
        }
        let written = ConfigDuration.rewritten(text, unit: unit, value: value, raw: node.substitution)
        let what = node.path.split(separator: ".").last.map(String.init) == newKey ? "\(node.path): a number without a unit" : node.path
        let line = node.keyLine.map { ":\($0)" } ?? ""
        problems.warn("\(node.file)\(line): \(what) is deprecated: write `\(newKey): \(written)`")
        return Reading(value: value, node: node)
    }
}

extension ConfigDuration.Unit {
    /// `milliseconds`, `seconds` … for messages.
    public var name: String {
        switch self {
        case .milliseconds: "milliseconds"
        case .seconds: "seconds"
        case .minutes: "minutes"
        case .hours: "hours"
        case .days: "days"
        }
    }
}
