import Foundation
import IMCore
@testable import IMMapping
import Testing

/// `VendorTable.decode(entry:…)` reads a `flat` entry's values in place (`decodeFlat`) instead of taking
/// them out of a copy of the body (`decodeTaking`, the general path). Both are run here on every flat
/// entry of the shipped tables, over bodies built to differ: all keys, extra keys, `null` values (taken
/// but absent, so an alias is tried), aliases, missing fields, values of the wrong type, tricky strings.
/// They must give the same content and remaining keys, or the same error.
@Suite struct FlatDecodingTests {
    static let samples: [JSONValue] = [
        // Numbers stay below what a seconds transform can scale to Int64 milliseconds: it traps above
        // (`Transform.decode`, unchanged here), in either path.
        "", "你好 \"q\" \\ \u{0}\u{1F} 😀 e\u{301}", "https://cdn.example.com/a.jpg", .int(0), .int(-1), .int(1_500),
        .int(9_007_199_254_740_993), .double(1.5e-3), .double(426.5), .double(1e12), .bool(true), .null, ["nested": [1, "x"]], [1, 2], "12.50", "2778919613",
        "5L2g5aW9", #"{"a":1}"#,
    ]

    struct Outcome: Equatable {
        var content: MessageContent?
        var remaining: [String: JSONValue]?
        var error: String?
    }

    static func outcome(_ run: () throws -> MappedContent) -> Outcome {
        do {
            let mapped = try run()
            return Outcome(content: mapped.content, remaining: mapped.remaining)
        } catch {
            return Outcome(error: "\(error)")
        }
    }

    /// Bodies for an entry: each combination drawn from its keys (primary and alias), `samples` and an extra key.
    static func bodies(for entry: MappingEntry, seed: Int) -> [[String: JSONValue]] {
        let keys = entry.fields.flatMap { [$0.wire[0]] + $0.aliases.map { $0[0] } }
        var bodies: [[String: JSONValue]] = [[:]]
        for (offset, sample) in samples.enumerated() {
            var all: [String: JSONValue] = [:]
            var some: [String: JSONValue] = [:]
            for (index, key) in keys.enumerated() {
                let value = samples[(offset + index * 7 + seed) % samples.count]
                all[key] = value
                if (index + offset) % 2 == 0 { some[key] = value }
            }
            bodies.append(all)
            bodies.append(some)
            var extra = all
            extra["zz_extra"] = sample
            bodies.append(extra)
            var nulled = all
            if let first = keys.first { nulled[first] = .null }
            bodies.append(nulled)
        }
        return bodies
    }

    @Test func flatDecodingMatchesTheGeneralPath() throws {
        let registry = ContentRegistry()
        var flatEntries = 0
        var compared = 0
        for vendor in MappingSet.vendors {
            let table = MappingSet.shipped.table(vendor)
            for (index, entry) in table.entries.enumerated() where entry.flat {
                flatEntries += 1
                let wire: String
                switch entry.wire {
                case .exact(let value): wire = value
                case .range(let range): wire = String(range.lowerBound)
                }
                for body in Self.bodies(for: entry, seed: index) {
                    let flat = Self.outcome { try table.decodeFlat(entry: entry, wire: wire, body: body, registry: registry) }
                    let general = Self.outcome { try table.decodeTaking(entry: entry, wire: wire, body: body, registry: registry) }
                    #expect(flat == general, "\(vendor) \(entry.label) \(body)")
                    compared += 1
                }
            }
        }
        #expect(flatEntries > 10, "the shipped tables have flat entries (text, media …)")
        #expect(compared > 500)
    }

    @Test func entriesWithDiscriminatorsOrNestedKeysAreNotFlat() {
        for vendor in MappingSet.vendors {
            for entry in MappingSet.shipped.table(vendor).entries where entry.flat {
                #expect(entry.when.isEmpty && entry.dataKey == nil, "\(entry.label)")
                let keys = entry.fields.flatMap { [$0.wire] + $0.aliases }
                #expect(keys.allSatisfy { $0.count == 1 } && Set(keys.map { $0[0] }).count == keys.count, "\(entry.label)")
            }
        }
    }
}
