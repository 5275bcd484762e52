import Foundation
import IMBridgeApp
import IMLab
import IMVendors
import IMCore
import IMRelay
import IMStore
import Testing

/// The bridge configurations of the README (its short tour) and of docs/configuration.md (the full
/// reference and every adapter's example) are valid as printed: they parse, and every backend builds
/// through the same factories `imbridge run` uses (contacting no vendor), so a renamed setting breaks this test.
@Suite struct ReadmeConfigTests {
    static func text(_ path: String) throws -> String {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        return try String(contentsOf: root.appendingPathComponent(path), encoding: .utf8)
    }

    static func yamlBlocks(_ text: String) -> [String] {
        text.components(separatedBy: "```yaml\n").dropFirst().compactMap { $0.components(separatedBy: "```").first }
    }

    @Test func theBridgeExampleAndEveryAdapterExampleBuild() async throws {
        let tour = try #require(Self.yamlBlocks(try Self.text("README.md")).first { $0.hasPrefix("store:") })
        let blocks = Self.yamlBlocks(try Self.text("docs/configuration.md"))
        let bridge = try #require(blocks.first { $0.hasPrefix("store:") })
        let adapters = try #require(blocks.first { $0.hasPrefix("backends:") && $0.contains("adapter: jmessage") })
        let environment = Dictionary(uniqueKeysWithValues: ["WK_WEBHOOK_SECRET", "RC_APP_KEY", "RC_APP_SECRET", "WK_MANAGERTOKEN",
            "NIM_APP_KEY", "NIM_APP_SECRET", "JM_APP_KEY", "JM_MASTER_SECRET"].map { ($0, "x-\($0.lowercased())") })
        let combined = "store: /tmp/x.sqlite\n" + adapters + "routes:\n  - from: \"wk:group:*\"\n    to: \"rc:group:*\"\n"
        let scratch = FileManager.default.temporaryDirectory.appendingPathComponent("readme-\(UUID().uuidString).sqlite").path
        let context = BackendContext(store: try BridgeStore(path: scratch), registry: ContentRegistry(), validateOnly: true)
        for yaml in [tour, bridge, combined] {
            let config = try BridgeConfig.parse(yaml, file: "README.md", environment: environment)
            for backend in config.backends {
                _ = try await BackendFactories.make(backend, context: context)
            }
        }
    }
}
