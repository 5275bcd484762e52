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
    /// Expansion keys the type uses and their initial values (the RongCloud expansion guide's order status).
    public let expansionDefaults: [String: String]
    public let vendors: [String]
    public let source: MappingSource
}

/// Every loaded mapping: one compiled `VendorTable` per vendor and the cross-vendor custom types.
///
/// Loading: the shipped files (Sources/IMMapping/mappings, compiled into the executable at build time:
/// `EmbeddedFiles`) first, then an override directory whose files replace shipped files of the same relative path (`wukong.yaml`, `custom/gif.yaml`) and
/// add new ones. Every problem of every file is reported (file, line, what is wrong); a set with
/// problems is never returned.
public struct MappingSet: Sendable {
    /// The vendors that have a table: the stems of the shipped top-level files (each adapter ships
    /// `<adapter name>.yaml`; the registry in `IMVendors` checks every adapter has one).
    public static let vendors: [String] = EmbeddedFiles.mappings.map(\.path).filter { !$0.contains("/") }
        .compactMap { $0.split(separator: ".").first.map(String.init) }.sorted()

    /// The version of this build (`VERSION`) and the commit it was built from (or `unknown`).
    public static let buildVersion = (version: EmbeddedFiles.version, commit: EmbeddedFiles.commit)

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

    /// The shipped tables, compiled once. They are part of the executable and the tests compile them
    /// (ShippedTablesTests), so a broken shipped file fails the build's tests, never a user's run.
    public static let shipped: MappingSet = {
        do { return try load(overrides: nil) } catch { preconditionFailure("the shipped mappings do not compile (a build defect): \(error)") }
    }()

    /// Loads the shipped files, then `overrides` (a directory laid out like `mappings/`).
    public static func load(overrides: URL?) throws -> MappingSet {
        var texts: [String: (name: String, text: String)] = [:]
        for file in EmbeddedFiles.mappings { texts[file.path] = (name: "shipped:\(file.path)", text: file.text) }
        if let overrides {
            for (relative, url) in try MappingLoader.files(in: overrides) {
                do {
                    texts[relative] = (name: url.path, text: try String(contentsOf: url, encoding: .utf8))
                } catch {
                    throw MappingProblems(problems: ["\(url.path): cannot be read (\(error.localizedDescription))"])
                }
            }
        }
        let inputs = texts.keys.sorted(by: MappingLoader.loadOrder).map { relative in
            (name: texts[relative]!.name, relative: relative, text: texts[relative]!.text)
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
