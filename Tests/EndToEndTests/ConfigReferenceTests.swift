import Foundation
import IMAdapterKit
import IMRelay
import IMVendors
import Testing

/// docs/configuration.md's reference tables name exactly the keys the parser reads — every key of the
/// top level, of each section, of a route and of each adapter — and each key they name is one the
/// parser accepts: a key added, renamed or dropped on one side fails here.
@Suite struct ConfigReferenceTests {
    static func rows(between begin: String, and end: String) throws -> [[String]] {
        let text = try String(contentsOf: DeploymentFilesTests.root.appendingPathComponent("docs/configuration.md"), encoding: .utf8)
        let start = try #require(text.range(of: begin)), stop = try #require(text.range(of: end))
        return text[start.upperBound..<stop.lowerBound].split(separator: "\n")
            .filter { $0.hasPrefix("| ") && !$0.hasPrefix("| key") && !$0.hasPrefix("| adapter |") }
            .map { $0.split(separator: "|").map { $0.trimmingCharacters(in: .whitespaces) } }
    }

    /// `` `a`, `b` `` → ["a", "b"].
    static func names(_ cell: String) -> [String] {
        cell.split(separator: "`", omittingEmptySubsequences: false).enumerated().filter { $0.offset % 2 == 1 }.map { String($0.element) }
    }

    @Test func theReferenceNamesEveryKeyTheParserReadsAndNoOther() throws {
        var documented = Set<String>()
        for row in try Self.rows(between: "<!-- reference:begin -->", and: "<!-- reference:end -->") {
            documented.formUnion(Self.names(row[0]))
        }
        var parsed = Set(BridgeConfig.topLevelKeys)
        for section in BridgeConfig.sectionKeys {
            parsed.remove(section.name)
            parsed.formUnion(section.keys.map { "\(section.name).\($0)" })
        }
        parsed.formUnion(BridgeConfig.routeKeys.map { "routes[].\($0)" })
        #expect(documented.subtracting(parsed).isEmpty, "documented but not read: \(documented.subtracting(parsed).sorted())")
        #expect(parsed.subtracting(documented).isEmpty, "read but not documented: \(parsed.subtracting(documented).sorted())")
    }

    @Test func theAdapterTableNamesEverySettingOfEveryAdapter() throws {
        var documented = Set<String>()
        for row in try Self.rows(between: "<!-- adapters:begin -->", and: "<!-- adapters:end -->") {
            documented.formUnion(Self.names(row[1]).map { "\(row[0]).\($0)" })
        }
        let schema = Set(Vendors.all.flatMap { vendor in vendor.adapter.settings.map { "\(vendor.name).\($0.key)" } })
        #expect(documented.subtracting(schema).isEmpty, "documented but not read: \(documented.subtracting(schema).sorted())")
        #expect(schema.subtracting(documented).isEmpty, "read but not documented: \(schema.subtracting(documented).sorted())")
    }

    /// Each deprecated key in the "Durations" table is one the parser still reads, and each it reads is there.
    @Test func theDeprecatedKeysAreListed() throws {
        let text = try String(contentsOf: DeploymentFilesTests.root.appendingPathComponent("docs/configuration.md"), encoding: .utf8)
        var deprecated = Set(BridgeConfig.deprecatedTopLevelKeys)
        for section in BridgeConfig.sectionKeys { deprecated.formUnion(section.deprecated) }
        for vendor in Vendors.all { deprecated.formUnion(vendor.adapter.settings.compactMap(\.legacy?.key)) }
        for key in deprecated {
            // `body_…` / `idle_…` abbreviate the listener's keys after the first.
            let short = key.replacingOccurrences(of: "_timeout_seconds", with: "_…")
            #expect(text.contains(key) || text.contains(short), "\(key) is not in docs/configuration.md")
        }
    }
}
