import Foundation
import IMBridgeApp
import IMCore
import IMRelay
import IMStore
import Testing
import WuKong

/// A map setting through the whole configuration path (docs/configuration.md, "Backend settings per
/// adapter"): written as a YAML mapping in `bridge.yaml`, checked by `ConfigCheck`, handed to the adapter
/// by `BackendFactories`, decoded into its settings type; the old string form still works, with a
/// warning that names the key and its line.
@Suite struct AdapterMapSettingsTests {
    static let yaml = """
        store: STORE
        backends:
          wk:
            adapter: wukong
            im_url: http://127.0.0.1:1
            webhook_secret: s
            custom_types:
              150: gift
              151: invoice
            session_tokens: "ops=tsdd-token"
          rc:
            adapter: rongcloud
            app_key: k
            app_secret: s
            api_url: http://127.0.0.1:1
        routes:
          - from: "wk:group:*"
            to: "rc:group:*"
        """

    @Test func aMapReachesTheAdapterAndTheOldStringIsWarnedAbout() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("imbridge-maps-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = "\(directory)/bridge.yaml"
        try Self.yaml.replacingOccurrences(of: "STORE", with: "\(directory)/bridge.sqlite").write(toFile: path, atomically: true, encoding: .utf8)
        let (config, mappings) = try await ConfigCheck.load(path: path, environment: [:])
        #expect(config.warnings.contains { $0.hasPrefix("\(path):10: backends.wk.session_tokens as a \"key=value,…\" string is deprecated") },
                "\(config.warnings)")
        #expect(!config.warnings.contains { $0.contains("custom_types") } && !config.warnings.joined().contains("tsdd-token"))
        let wk = try #require(config.backends.first { $0.name == "wk" })
        let store = try BridgeStore(path: "\(directory)/users.sqlite")
        let backend = try #require(try await BackendFactories.make(wk, context: BackendContext(store: store, registry: ContentRegistry(),
                                                                                                validateOnly: true, mappings: mappings))
                                   as? WuKongBackend)
        #expect(backend.settings.customTypes == [150: "gift", 151: "invoice"] && backend.settings.sessionTokens == ["ops": "tsdd-token"])
    }

    /// A mapping where a single value belongs is refused by the adapter's schema, at the key's line, with
    /// the configuration's other problems.
    @Test func aMappingForASingleValueIsRefusedAtItsLine() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("imbridge-maps-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = "\(directory)/bridge.yaml"
        let yaml = Self.yaml.replacingOccurrences(of: "STORE", with: "\(directory)/bridge.sqlite")
            .replacingOccurrences(of: "    webhook_secret: s\n", with: "    webhook_secret: s\n    service_uid:\n      name: ops\n")
            .replacingOccurrences(of: "    app_key: k\n", with: "    app_key: k\n    timeout: 7\n")
        try yaml.write(toFile: path, atomically: true, encoding: .utf8)
        do {
            _ = try await ConfigCheck.load(path: path, environment: [:])
            Issue.record("accepted a mapping for service_uid")
        } catch let error as IMError {
            #expect(error.message.contains("\(path):7: backends.wk.service_uid: expected a single value, got a mapping"), "\(error.message)")
            #expect(error.message.contains("backends.rc.timeout: expected a duration"), "\(error.message)")
        }
    }
}
