import Foundation
import IMAdapterKit
import IMBridgeApp
import IMLab
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

/// The lab's sandbox settings and a member's own: a member writing a deprecated name
/// (`poll_interval_ms`) replaces the sandbox's setting of the new name, so the pair still checks.
@Suite struct LabDeprecatedSettingsTests {
    @Test func aMemberSettingUnderItsDeprecatedNameReplacesTheSandboxOne() async throws {
        let old = BridgeLab.Member("jm", "jmessage", settings: ["poll_interval_ms": "0"])
        let new = BridgeLab.Member("jm2", "jmessage", settings: ["poll_interval": "0s"])
        let lab = try await BridgeLab(members: [old, new], callbackBase: "http://127.0.0.1:1")
        let oldSettings = lab.settings(for: old), newSettings = lab.settings(for: new)
        await lab.stop()
        #expect(oldSettings["poll_interval_ms"] == "0" && oldSettings["poll_interval"] == nil)
        #expect(newSettings["poll_interval"] == "0s" && newSettings["poll_interval_ms"] == nil)
        let schema = try #require(Vendors.named("jmessage")).adapter.settings
        #expect(AdapterSettings.problems(oldSettings, schema: schema).isEmpty)
        #expect(AdapterSettings.problems(newSettings, schema: schema).isEmpty)
    }
}
