import Foundation
import IMAdapterKit
import IMConfig
import IMCore
import IMRelay
import IMVendors

/// A configured backend: its adapter name and the adapter's own settings (base URLs, credentials …).
public struct BackendConfig: Sendable {
    public var name: BackendID
    public var adapter: String
    public var settings: [String: String]
    /// The settings written as YAML mappings (`custom_types:` with `150: gift` under it), by key.
    public var maps: [String: [String: String]] = [:]
    public var file: String
    /// Line of each setting, for errors.
    public var lines: [String: Int]
    /// Line of `<name>:` under `backends`: where a missing setting is reported.
    public var line: Int?
    /// The settings whose values came from the environment, as written (`${WK_URL}`): errors name the
    /// variable instead of quoting the value (`ConfigNode.quoted`).
    public var substituted: [String: String] = [:]

    public init(name: BackendID, adapter: String, settings: [String: String], file: String = "(code)", lines: [String: Int] = [:],
                line: Int? = nil) {
        self.name = name
        self.adapter = adapter
        self.settings = settings
        self.file = file
        self.lines = lines
        self.line = line
    }

    /// Where the settings were written, for errors (`SettingsSource`).
    public var source: SettingsSource { SettingsSource(file: file, lines: lines, line: line, substituted: substituted) }

    /// An error about one of this backend's settings, naming `backends.<name>.<key>` and its line (for a
    /// setting that is missing, the line of the backend's own entry): `SettingsSource.error`.
    public func error(_ key: String, _ message: String) -> IMError { source.error(backend: name, key: key, message) }

    /// A required setting.
    public func require(_ key: String) throws -> String {
        guard let value = settings[key], !value.isEmpty else { throw error(key, "is required") }
        return value
    }
}

extension BridgeConfig {
    static func parseBackends(_ node: ConfigNode, adapters: Set<String>?, problems: inout ConfigProblems) -> [BackendConfig] {
        guard let names = problems.attempt({ try node.keys() }) else { return [] }
        if names.isEmpty { problems.add(node.error("at least one backend is needed")) }
        return names.compactMap { name -> BackendConfig? in
            let entry = node[name]
            var ok = true
            if name.contains(":") || name.contains("/") {
                problems.add(entry.error("backend names may not contain ':' or '/'"))
                ok = false
            }
            guard problems.attempt({ try entry.expectMapping() }) != nil, entry.isMapping else {
                if !entry.isPresent { problems.add(entry.error("expected a mapping with at least adapter: NAME")) }
                return nil
            }
            let adapter = problems.attempt { () throws -> String in
                let adapter = try entry["adapter"].string()
                if let adapters, !adapters.contains(adapter) {
                    throw entry["adapter"].error("unknown adapter \(entry["adapter"].quoted(adapter)) (known: \(adapters.sorted().joined(separator: ", ")))")
                }
                return adapter
            }
            var settings: [String: String] = [:]
            var maps: [String: [String: String]] = [:]
            var lines: [String: Int] = [:]
            var substituted: [String: String] = [:]
            for key in (try? entry.keys()) ?? [] where key != "adapter" {
                let value = entry[key]
                if value.isMapping {
                    // Only a map setting (`custom_types`) is written as `key: value` lines, each value a single
                    // one; any other setting of a known adapter given as a mapping is this file's problem, told
                    // with the others at once.
                    if let spec = Vendors.all.first(where: { $0.name == adapter })?.adapter.settings.first(where: { $0.key == key }), !spec.isMap {
                        problems.add(value.errorAtKey("expected a single value, got a mapping"))
                        ok = false
                        continue
                    }
                    let items = problems.attempt { try value.entries().map { ($0.key, try $0.node.string()) } }
                    if let items { maps[key] = Dictionary(items, uniquingKeysWith: { _, last in last }) } else { ok = false }
                    lines[key] = value.keyLine ?? value.line
                    continue
                }
                if let text = problems.attempt({ try value.string() }) { settings[key] = text } else { ok = false }
                lines[key] = value.line
                substituted[key] = value.substitution
            }
            guard ok, let adapter else { return nil }
            var backend = BackendConfig(name: BackendID(name), adapter: adapter, settings: settings, file: entry.file, lines: lines,
                                        line: entry.keyLine)
            backend.substituted = substituted
            backend.maps = maps
            return backend
        }
    }

}
