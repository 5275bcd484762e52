import Foundation
import IMCore
import IMConfig

/// One setting an adapter takes under `backends.<name>` in `bridge.yaml`.
public struct SettingSpec: Sendable {
    public enum Kind: Sendable {
        /// Any text.
        case text
        /// A secret: never printed (`imbridge check` shows it as `***`).
        case secret
        /// One http(s) URL, or with `list` several separated by commas.
        case url(list: Bool)
        /// A whole number ≥ `minimum`.
        case integer(minimum: Int64)
        /// true/false (also yes/no, 1/0).
        case flag
        /// A map, written as a YAML mapping (`key: value` lines); the old `key=value,key=value` string is
        /// still read, with a warning.
        case pairs
        /// A duration (`250ms`, `10s`, `5m`, `24h`, `7d`) within the range.
        case duration(DurationRange)
    }

    public var key: String
    public var kind: Kind
    public var required: Bool
    /// What it is for, one line (`imbridge check --explain`, docs).
    public var help: String
    /// For a duration: the deprecated key that wrote it as a number of a unit (`timeout_seconds`),
    /// still read, with a warning (docs/configuration.md, "Durations").
    public var legacy: ConfigSection.Legacy?

    public init(_ key: String, _ kind: Kind = .text, required: Bool = false, legacy: ConfigSection.Legacy? = nil, help: String) {
        self.key = key
        self.kind = kind
        self.required = required
        self.legacy = legacy
        self.help = help
    }

    public var isSecret: Bool { if case .secret = kind { true } else { false } }

    /// `timeout`: the per-request timeout every adapter takes (at least 1s, used in whole seconds,
    /// rounded up), formerly `timeout_seconds`.
    public static func timeout(default fallback: Duration) -> SettingSpec {
        SettingSpec("timeout", .duration(DurationRange(minimum: .seconds(1))), legacy: .init("timeout_seconds", .seconds),
                    help: "per-request timeout (default \(ConfigDuration(fallback)))")
    }

    public var isMap: Bool { if case .pairs = kind { true } else { false } }
}

/// A backend's settings checked against its adapter's schema, with typed readers. Every problem is an
/// `invalid_argument` whose `details["setting"]` names the key, so the bridge can point at its line.
public struct AdapterSettings: Sendable {
    public let backend: BackendID
    public let values: [String: String]
    /// The settings written as YAML mappings (`custom_types:` with `150: gift` under it), by key.
    public let maps: [String: [String: String]]
    public let schema: [SettingSpec]
    /// How errors name the values they must not quote, by key: `the value of ${NAME}` for a value
    /// that came from the environment (docs/architecture.md, "Secrets in errors and logs").
    public let described: [String: String]
    /// Where the settings were written: every error names its file, line and key from it.
    public let source: SettingsSource

    /// Checks every key is known and every value has its kind; throws the first problem.
    public init(backend: BackendID, values: [String: String], maps: [String: [String: String]] = [:], schema: [SettingSpec],
                described: [String: String] = [:], source: SettingsSource = SettingsSource()) throws {
        self.backend = backend
        self.values = values
        self.maps = maps
        self.schema = schema
        self.described = described
        self.source = source
        if let problem = Self.problems(values, maps: maps, schema: schema, described: described, backend: backend, source: source).first {
            throw problem
        }
    }

    /// How an error may show `part` of the value of `key` (the value itself, an item of a list or of
    /// pairs): quoted, with a URL's credentials hidden (`Redaction.url`); `***` for a secret setting;
    /// `an item of the value of ${NAME}` (or `the value of ${NAME}`) for a value from the environment.
    public func quoted(_ key: String, _ part: String) -> String {
        Self.quoted(key, part, whole: part == values[key], schema: schema, described: described)
    }

    /// A value read from `key` (a number) unquoted as errors show it, or `the value of ${NAME}` as `quoted`.
    public func shown(_ key: String, _ value: some CustomStringConvertible) -> String {
        if schema.first(where: { $0.key == key })?.isSecret == true { return "***" }
        return described[key] ?? value.description
    }

    static func quoted(_ key: String, _ part: String, whole: Bool, schema: [SettingSpec], described: [String: String]) -> String {
        if schema.first(where: { $0.key == key })?.isSecret == true { return "***" }
        if let description = described[key] { return whole ? description : "an item of \(description)" }
        return part.contains("://") || part.contains("@") ? "'\(Redaction.url(part))'" : "'\(part)'"
    }

    /// Every problem of these values against `schema`, in key order. No message quotes the value of a
    /// secret setting or one named in `described`.
    public static func problems(_ values: [String: String], maps: [String: [String: String]] = [:], schema: [SettingSpec],
                                described: [String: String] = [:], backend: BackendID = BackendID("backend"),
                                source: SettingsSource = SettingsSource()) -> [IMError] {
        var problems: [IMError] = []
        func refusal(_ key: String, _ message: String) -> IMError { source.error(backend: backend, key: key, message) }
        var known = Set(schema.map(\.key))
        known.formUnion(schema.compactMap(\.legacy?.key))
        for key in Set(values.keys).union(maps.keys).sorted() where !known.contains(key) {
            problems.append(refusal(key, "unknown setting (known: \(schema.map(\.key).sorted().joined(separator: ", ")))"))
        }
        for spec in schema where maps[spec.key] != nil && !spec.isMap {
            problems.append(refusal(spec.key, "expected a single value, got a mapping"))
        }
        for spec in schema where maps[spec.key] == nil {
            if let legacy = spec.legacy, let old = values[legacy.key], !old.isEmpty, case .duration(let range) = spec.kind {
                if values[spec.key]?.isEmpty == false {
                    problems.append(refusal(legacy.key, "both \(legacy.key) and \(spec.key) are given: keep only \(spec.key) (\(legacy.key) is its deprecated form)"))
                    continue
                }
                let shown = quoted(legacy.key, old, whole: true, schema: schema, described: described)
                guard let value = ConfigDuration.legacy(old.trimmingCharacters(in: .whitespaces), legacy.unit, fractions: legacy.fractions) else {
                    problems.append(refusal(legacy.key, "expected a whole number of \(legacy.unit.name), got \(shown)"))
                    continue
                }
                if !range.contains(value) {
                    let equivalent = described[legacy.key] == nil && value.milliseconds >= 0 ? " (\(value))" : ""
                    problems.append(refusal(legacy.key, "expected \(range.expected), got \(described[legacy.key] ?? old) \(legacy.unit.name)\(equivalent)"))
                }
                continue
            }
            guard let value = values[spec.key], !value.isEmpty else {
                if spec.required { problems.append(refusal(spec.key, "is required: \(spec.help)")) }
                continue
            }
            switch spec.kind {
            case .text, .secret:
                break
            case .url(let list):
                let urls = list ? splitList(value) : [value]
                for url in urls where !(url.hasPrefix("http://") || url.hasPrefix("https://")) {
                    let shown = quoted(spec.key, url, whole: url == value, schema: schema, described: described)
                    problems.append(refusal(spec.key, "\(shown) is not an http(s) URL"))
                }
            case .integer(let minimum):
                if Int64(value.trimmingCharacters(in: .whitespaces)).map({ $0 < minimum }) ?? true {
                    problems.append(refusal(spec.key, "expected a whole number ≥ \(minimum), got \(quoted(spec.key, value, whole: true, schema: schema, described: described))"))
                }
            case .flag:
                if parseFlag(value) == nil {
                    problems.append(refusal(spec.key, "expected true or false, got \(quoted(spec.key, value, whole: true, schema: schema, described: described))"))
                }
            case .pairs:
                if case .failure(let problem) = parsePairs(value) { problems.append(refusal(spec.key, problem.reason)) }
            case .duration(let range):
                let shown = quoted(spec.key, value, whole: true, schema: schema, described: described)
                guard let duration = ConfigDuration(value.trimmingCharacters(in: .whitespaces)) else {
                    let hint = Int64(value) != nil && described[spec.key] == nil ? " (a number needs its unit, e.g. \(value)s)" : ""
                    problems.append(refusal(spec.key, "expected \(ConfigDuration.syntax)\(hint), got \(shown)"))
                    continue
                }
                if !range.contains(duration) {
                    problems.append(refusal(spec.key, "expected \(range.expected), got \(described[spec.key] ?? duration.description)"))
                }
            }
        }
        return problems
    }

    /// One line per deprecated key `values` use (`FILE:LINE: backends.rc.timeout_seconds is deprecated:
    /// write `timeout: 10s``), for values that `problems` accepts.
    /// A map written as a `key=value,…` string: `FILE:LINE: backends.wk.custom_types as a "key=value,…"
    /// string is deprecated: write a YAML mapping …` (never quoting the value: token lists hold tokens).
    public static func warnings(_ values: [String: String], schema: [SettingSpec], described: [String: String] = [:],
                                backend: BackendID, source: SettingsSource) -> [String] {
        schema.compactMap { spec -> String? in
            if spec.isMap, let text = values[spec.key], !text.isEmpty, case .success(let pairs) = parsePairs(text) {
                let example = pairs.first.map { "\($0.0): …" } ?? "key: value"
                return "\(source.location(of: spec.key)): backends.\(backend).\(spec.key) as a \"key=value,…\" string is deprecated: "
                    + "write a YAML mapping, one `key: value` line each under \(spec.key): (\(example))"
            }
            guard let legacy = spec.legacy, let old = values[legacy.key], !old.isEmpty,
                  let value = ConfigDuration.legacy(old.trimmingCharacters(in: .whitespaces), legacy.unit, fractions: legacy.fractions) else { return nil }
            let written = ConfigDuration.rewritten(old, unit: legacy.unit, value: value, raw: source.substituted[legacy.key])
            return "\(source.location(of: legacy.key)): backends.\(backend).\(legacy.key) is deprecated: write `\(spec.key): \(written)`"
        }
    }

    // MARK: readers (values were checked at init); an adapter reads its settings type (`decode`), whose
    // fields hold the defaults, so no reader takes one

    public subscript(key: String) -> String? {
        guard let value = values[key], !value.isEmpty else { return nil }
        return value
    }

    /// A duration setting, from its key or its deprecated one (`timeout_seconds: 10` reads as `10s`).
    public func duration(_ key: String) -> ConfigDuration? {
        if let value = self[key] { return ConfigDuration(value.trimmingCharacters(in: .whitespaces)) }
        guard let legacy = schema.first(where: { $0.key == key })?.legacy, let old = self[legacy.key] else { return nil }
        return ConfigDuration.legacy(old.trimmingCharacters(in: .whitespaces), legacy.unit, fractions: legacy.fractions)
    }

    /// The key a duration was written under (its deprecated name when that was used), for errors.
    public func writtenKey(_ key: String) -> String {
        guard self[key] == nil, let legacy = schema.first(where: { $0.key == key })?.legacy, self[legacy.key] != nil else { return key }
        return legacy.key
    }

    public func integer(_ key: String) -> Int64? { self[key].flatMap { Int64($0.trimmingCharacters(in: .whitespaces)) } }

    public func flag(_ key: String) -> Bool? { self[key].flatMap(Self.parseFlag) }

    public func list(_ key: String) -> [String] { self[key].map(Self.splitList) ?? [] }

    /// A map setting: its YAML mapping, or its deprecated `k=v,k=v` string (a later duplicate wins).
    public func map(_ key: String) -> [String: String] {
        if let map = maps[key] { return map }
        guard let value = self[key], case .success(let pairs) = Self.parsePairs(value) else { return [:] }
        return Dictionary(pairs, uniquingKeysWith: { _, last in last })
    }

    /// A map setting's entries: the mapping's in key order, or the string's as written.
    public func pairs(_ key: String) -> [(String, String)] {
        if let map = maps[key] { return map.sorted { $0.key < $1.key }.map { ($0.key, $0.value) } }
        guard let value = self[key], case .success(let pairs) = Self.parsePairs(value) else { return [] }
        return pairs
    }

    /// A value that the schema's kinds do not cover was wrong: the same error shape as the schema's
    /// (`SettingsSource.error`).
    public func refuse(_ key: String, _ message: String) -> IMError { source.error(backend: backend, key: key, message) }

    static func splitList(_ value: String) -> [String] {
        value.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
    }

    static func parseFlag(_ value: String) -> Bool? {
        switch value.lowercased().trimmingCharacters(in: .whitespaces) {
        case "true", "yes", "1", "on": true
        case "false", "no", "0", "off": false
        default: nil
        }
    }

    static func parsePairs(_ value: String) -> Result<[(String, String)], PairsProblem> {
        var pairs: [(String, String)] = []
        let items = value.split(separator: ",").filter { !$0.trimmingCharacters(in: .whitespaces).isEmpty }
        for (index, item) in items.enumerated() {
            let parts = item.split(separator: "=", maxSplits: 1).map { $0.trimmingCharacters(in: .whitespaces) }
            guard parts.count == 2, !parts[0].isEmpty, !parts[1].isEmpty else {
                // The item is not quoted back: `session_tokens` pairs hold tokens.
                return .failure(PairsProblem(reason: "expected key=value pairs separated by commas; item \(index + 1) is not one"))
            }
            pairs.append((parts[0], parts[1]))
        }
        return .success(pairs)
    }
}

struct PairsProblem: Error, CustomStringConvertible {
    var reason: String
    var description: String { reason }
}

/// Where a backend's settings were written (`backends.<name>` of a file), so that every error about
/// one names `FILE:LINE: backends.<name>.<key>: reason`: the one place that format is made.
public struct SettingsSource: Sendable {
    public var file: String
    /// The line of each setting.
    public var lines: [String: Int]
    /// The line of `<name>:` under `backends`: where a missing setting is reported.
    public var line: Int?
    /// The settings whose values came from the environment, as written (`${WK_URL}`).
    public var substituted: [String: String]

    public init(file: String = "(code)", lines: [String: Int] = [:], line: Int? = nil, substituted: [String: String] = [:]) {
        self.file = file
        self.lines = lines
        self.line = line
        self.substituted = substituted
    }

    /// `FILE:LINE` of `key` (the backend's own line for a key not written).
    public func location(of key: String) -> String {
        file + ((lines[key] ?? line).map { ":\($0)" } ?? "")
    }

    /// An `invalid_argument` about `key` of `backend`: `FILE:LINE: backends.<name>.<key>: message`, with
    /// `details["key"]` the key's path and `details["setting"]` the key.
    public func error(backend: BackendID, key: String, _ message: String) -> IMError {
        IMError(.invalidArgument, "\(location(of: key)): backends.\(backend).\(key): \(message)",
                details: ["key": "backends.\(backend).\(key)", "setting": key])
    }
}
