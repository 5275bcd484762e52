import Foundation
import IMCore

/// A cross-vendor custom type from `mappings/custom/<name>.yaml`.
public struct CustomTypeMapping: Sendable {
    public let name: String
    /// `.custom(name)`, or a built-in kind for types the neutral model already has (GIF, card).
    public let target: NeutralTarget
    /// Declared neutral fields (custom kind only).
    public let fields: [String: NeutralType]
    public let digest: Template?
    /// Text sent to a backend that cannot carry the type, plus the value of `fallbackLink` on its own line.
    public let fallbackText: Template?
    public let fallbackLink: String?
    /// Expansion keys the type uses and their initial values (seed 004's order status).
    public let expansionDefaults: [String: String]
    public let vendors: [String]
    public let source: MappingSource
}

/// Every loaded mapping: one compiled `VendorTable` per vendor and the cross-vendor custom types.
///
/// Loading: the shipped directory (package resource `mappings/`) first, then an override directory
/// whose files replace shipped files of the same relative path (`wukong.yaml`, `custom/gif.yaml`) and
/// add new ones. Every problem of every file is reported (file, line, what is wrong); a set with
/// problems is never returned.
public struct MappingSet: Sendable {
    /// The vendors that have a table: the stems of the shipped directory's top-level files (each
    /// adapter ships `<adapter name>.yaml`; the registry in `IMVendors` checks every adapter has one).
    public static let vendors: [String] = {
        guard let directory = shippedDirectory, let files = try? MappingLoader.files(in: directory) else { return [] }
        return files.map(\.0).filter { !$0.contains("/") }.compactMap { $0.split(separator: ".").first.map(String.init) }.sorted()
    }()

    public let tables: [String: VendorTable]
    public let customTypes: [String: CustomTypeMapping]
    /// The files loaded, in load order, with where each came from.
    public let files: [String]

    public init(tables: [String: VendorTable], customTypes: [String: CustomTypeMapping], files: [String]) {
        self.tables = tables
        self.customTypes = customTypes
        self.files = files
    }

    public func table(_ vendor: String) -> VendorTable { tables[vendor] ?? VendorTable(vendor: vendor, entries: []) }

    /// The shipped tables (package resources), compiled once. A broken shipped file is a build defect:
    /// the tests load them, so this never fails in a released binary.
    public static let shipped: MappingSet = {
        do { return try load(overrides: nil) } catch { fatalError("shipped mappings do not load: \(error)") }
    }()

    /// The directory holding the shipped files: `IMBRIDGE_SHIPPED_MAPPINGS` when set; else the package
    /// resource bundle installed next to the executable (`IMBridge_IMMapping.resources/mappings`); else,
    /// for builds and tests run from a checkout, the source directory. Nil when none exists (an
    /// `imbridge` copied without its resource bundle).
    public static var shippedDirectory: URL? {
        let manager = FileManager.default
        if let path = ProcessInfo.processInfo.environment["IMBRIDGE_SHIPPED_MAPPINGS"], !path.isEmpty {
            return URL(fileURLWithPath: path)
        }
        let bundles = ["IMBridge_IMMapping.resources", "IMBridge_IMMapping.bundle"].map { Bundle.main.bundleURL.appendingPathComponent($0) }
        if bundles.contains(where: { manager.fileExists(atPath: $0.path) }) {
            // Only touched when the bundle is there: SwiftPM's accessor stops the process when it is not.
            return Bundle.module.url(forResource: "mappings", withExtension: nil)
        }
        let source = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("mappings")
        return manager.fileExists(atPath: source.path) ? source : nil
    }

    /// Loads the shipped files, then `overrides` (a directory laid out like `mappings/`).
    public static func load(overrides: URL?) throws -> MappingSet {
        var sources: [String: URL] = [:]
        var order: [String] = []
        guard let shipped = shippedDirectory else {
            throw MappingProblems(problems: ["the shipped mappings are missing: install IMBridge_IMMapping.resources next to the "
                                             + "imbridge executable (it is built beside it), or set IMBRIDGE_SHIPPED_MAPPINGS to a copy of mappings/"])
        }
        for directory in [shipped, overrides].compactMap({ $0 }) {
            for (relative, url) in try MappingLoader.files(in: directory) {
                if sources[relative] == nil { order.append(relative) }
                sources[relative] = url
            }
        }
        let inputs = try order.sorted(by: MappingLoader.loadOrder).map { relative in
            let url = sources[relative]!
            return (name: url.path, relative: relative, text: try String(contentsOf: url, encoding: .utf8))
        }
        return try MappingLoader.compile(inputs)
    }

    /// The custom type mapping for a content, if one is declared (by name, or for a built-in kind).
    public func customType(named name: String) -> CustomTypeMapping? { customTypes[name] }

    /// The text a backend that cannot carry a custom type receives instead (nil: no fallback declared).
    public func fallbackText(for content: MessageContent, expansion: [String: String] = [:]) -> String? {
        guard case .custom(let custom) = content, let type = customTypes[custom.typeName] else { return nil }
        let fields = custom.json?.objectValue ?? [:]
        let values = type.expansionDefaults.merging(expansion) { _, new in new }
        var text = type.fallbackText?.render(fields, expansion: values) ?? type.digest?.render(fields, expansion: values) ?? custom.digest
        if let link = type.fallbackLink, let url = fields[link]?.stringValue, !url.isEmpty { text += "\n" + url }
        return text
    }

    /// The digest a vendor's table gives a content (its entry's `digest:`), or the content's own.
    public func digest(of content: MessageContent, vendor: String) -> String {
        let target = NeutralForm.target(of: content)
        let template = table(vendor).entries(for: target).first(where: { $0.digest != nil })?.digest
            ?? { if case .custom(let name) = target { return customTypes[name]?.digest } else { return nil } }()
        guard let template, let fields = NeutralForm.fields(of: content) else { return content.digest }
        return template.render(fields)
    }
}

/// A load failure: every problem found, each with file and line.
public struct MappingProblems: Error, CustomStringConvertible, Sendable {
    public let problems: [String]
    public var description: String { problems.joined(separator: "\n") }
}
