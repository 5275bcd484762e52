import IMAdapterKit
import IMCore
import IMSandbox
import IMMapping
import IMVendors
import Testing

/// The registry is the one list of vendors: every other list (mapping tables, sandboxes) must agree with it.
@Suite struct RegistryTests {
    @Test func everyVendorHasAdapterSandboxAndMappingTable() {
        let names = Vendors.names
        #expect(Set(names).count == names.count, "vendor names are unique")
        #expect(Set(names) == Set(MappingSet.vendors), "one shipped mapping table per registered adapter")
        for vendor in Vendors.all {
            #expect(vendor.sandbox.vendor == vendor.name, "\(vendor.name)'s sandbox stands for it")
            #expect(!MappingSet.shipped.table(vendor.name).entries.isEmpty, "\(vendor.name) has a table")
            let keys = vendor.adapter.settings.map(\.key)
            #expect(Set(keys).count == keys.count, "\(vendor.name) lists each setting once")
        }
    }

    /// What the lab gives each adapter to talk to its sandbox passes that adapter's own schema.
    @Test func labSettingsPassEachSchema() {
        for vendor in Vendors.all {
            let endpoint = SandboxDescriptor.Endpoint(baseURL: "http://127.0.0.1:1", appKey: "k", appSecret: "s", webhookSecret: "w")
            let problems = AdapterSettings.problems(vendor.sandbox.adapterSettings(endpoint), schema: vendor.adapter.settings)
            #expect(problems.isEmpty, "\(vendor.name): \(problems.map(\.message))")
        }
    }

    @Test func schemaRefusesUnknownMissingAndMalformedSettings() throws {
        let schema = [SettingSpec("api_url", .url(list: false), required: true, help: "base URL"),
                      SettingSpec("timeout_seconds", .integer(minimum: 1), help: "timeout"),
                      SettingSpec("flag", .flag, help: "a flag"), SettingSpec("map", .pairs, help: "pairs")]
        let problems = AdapterSettings.problems(["timeout_seconds": "0", "flag": "maybe", "map": "a=1,b", "colour": "red"], schema: schema)
        #expect(problems.map { $0.details["setting"] ?? "" } == ["colour", "api_url", "timeout_seconds", "flag", "map"])
        let settings = try AdapterSettings(backend: "x", values: ["api_url": "https://h", "timeout_seconds": "7", "flag": "yes", "map": "a=1, b=2"],
                                           schema: schema)
        #expect(settings.integer("timeout_seconds") == 7 && settings.flag("flag") == true)
        #expect(settings.pairs("map").map { "\($0.0)=\($0.1)" } == ["a=1", "b=2"])
    }
}
