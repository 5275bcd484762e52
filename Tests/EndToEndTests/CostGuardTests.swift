import Foundation
import IMCore
import PostgresTestSupport
import Testing

/// Counted costs per relayed message — heap allocations, store statements, write transactions — must
/// stay under the limits committed in Benchmarks/cost-limits.json (docs/performance.md, "Counted
/// costs"). Counts, not times: they do not depend on how busy the machine is. `imbridge-bench costs`
/// (the debug build `swift test` builds) runs in a child process with ordo-one's malloc interposer
/// preloaded, relaying WuKong → RongCloud through the real sandboxes on loopback.
@Suite(.serialized)
struct CostGuardTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    static func built(_ name: String) throws -> String {
        let candidates = [URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent(name).path,
                          root.appendingPathComponent(".build/debug/\(name)").path]
        return try #require(candidates.first { FileManager.default.fileExists(atPath: $0) }, "\(name) is not built (swift build --build-tests)")
    }

    static func limits(_ store: String) throws -> [String: Double] {
        let data = try Data(contentsOf: root.appendingPathComponent("Benchmarks/cost-limits.json"))
        let json = try JSONValue.parse(data)
        guard case .object(let section)? = json[store] else { throw IMError(.invalidArgument, "cost-limits.json has no \(store) section") }
        return section.compactMapValues(\.doubleValue)
    }

    /// Runs `imbridge-bench costs` and returns its JSON figures.
    static func measure(store: String?) async throws -> [String: JSONValue] {
        let run = try await Subprocess.runApart(try built("imbridge-bench"), ["costs", "--json", "--messages", "600"] + (store.map { ["--store", $0] } ?? []),
                                                timeoutSeconds: 600, environment: ["LD_PRELOAD": try built("libMallocInterposerSwift.so")])
        try #require(run.status == 0, "imbridge-bench costs failed: \(run.errors)")
        let line = try #require(run.output.split(separator: "\n").last { $0.hasPrefix("{") })
        guard case .object(let figures) = try JSONValue.parse(Data(line.utf8)) else { throw IMError(.invalidArgument, "not an object: \(line)") }
        return figures
    }

    static func check(_ figures: [String: JSONValue], against limits: [String: Double], _ store: String) throws {
        #expect(figures["allocations_counted"] == .bool(true), "the interposer did not count: allocations would pass unchecked")
        for key in ["allocations_per_message", "statements_per_message", "transactions_per_message"] {
            let limit = try #require(limits[key], "cost-limits.json \(store).\(key)")
            let measured = try #require(figures[key]?.doubleValue, "imbridge-bench costs reported no \(key)")
            #expect(measured > 0, "\(store) \(key): nothing counted")
            #expect(measured <= limit, "\(store) \(key): \(measured) per relayed message, over the limit \(limit) (Benchmarks/cost-limits.json)")
        }
    }

    @Test func sqliteRelayStaysUnderItsCountedLimits() async throws {
        try Self.check(try await Self.measure(store: nil), against: try Self.limits("sqlite"), "sqlite")
    }

    @Test func postgresRelayStaysUnderItsCountedLimits() async throws {
        try Self.check(try await Self.measure(store: try TestPostgres.freshURL("costs")), against: try Self.limits("postgres"), "postgres")
    }
}
