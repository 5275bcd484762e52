import IMAdapterKit
import IMCore
import IMConfig
import IMVendors
import Testing

/// Every adapter's time settings, through the one shared reader (`AdapterSettings`, docs/configuration.md,
/// "Durations"): the new keys take `10s`-style durations only, each deprecated key reads the same value
/// in its old unit with a warning, both at once is an error, and every error is
/// `FILE:LINE: backends.<name>.<key>: reason`, made in one place (`SettingsSource.error`).
@Suite struct AdapterDurationSettingsTests {
    static let source = SettingsSource(file: "b.yaml", lines: ["timeout": 7, "timeout_seconds": 8], line: 5)

    /// Each duration setting of each adapter, with its deprecated name.
    static var durations: [(vendor: String, spec: SettingSpec, legacy: ConfigSection.Legacy)] {
        Vendors.all.flatMap { vendor in
            vendor.adapter.settings.compactMap { spec in spec.legacy.map { (vendor.name, spec, $0) } }
        }
    }

    @Test func everyAdapterTimeSettingIsADurationWithItsOldName() {
        let byVendor = Dictionary(grouping: Self.durations, by: \.vendor).mapValues { $0.map { "\($0.spec.key)<-\($0.legacy.key)" }.sorted() }
        #expect(byVendor["wukong"] == ["timeout<-timeout_seconds"])
        #expect(byVendor["rongcloud"] == ["callback_max_skew<-callback_max_skew_ms", "timeout<-timeout_seconds"])
        #expect(byVendor["nim"] == ["callback_max_skew<-callback_max_skew_ms", "recall_window<-recall_window_ms", "timeout<-timeout_seconds"])
        #expect(byVendor["jmessage"] == ["poll_interval<-poll_interval_ms", "poll_overlap<-poll_overlap_ms", "timeout<-timeout_seconds"])
        for vendor in Vendors.all {
            for spec in vendor.adapter.settings {
                #expect(!spec.key.hasSuffix("_ms") && !spec.key.hasSuffix("_seconds"), "\(vendor.name).\(spec.key) names a unit")
            }
        }
    }

    /// The old key in its old unit and the new key with the same duration read the same value.
    @Test func oldAndNewKeysReadTheSameValue() throws {
        for (vendor, spec, legacy) in Self.durations {
            let schema = try #require(Vendors.named(vendor)).adapter.settings
            let number: Int64 = legacy.unit == .seconds ? 3 : 60_000
            let old = try AdapterSettings(backend: "x", values: [legacy.key: "\(number)"], schema: schema.filter { !$0.required })
            let new = try AdapterSettings(backend: "x", values: [spec.key: "\(ConfigDuration(number, legacy.unit))"], schema: schema.filter { !$0.required })
            #expect(old.duration(spec.key) == ConfigDuration(number, legacy.unit) && new.duration(spec.key) == old.duration(spec.key),
                    "\(vendor).\(spec.key)")
            #expect(old.writtenKey(spec.key) == legacy.key && new.writtenKey(spec.key) == spec.key)
        }
    }

    @Test func aDeprecatedKeyIsNamedInOneWarning() throws {
        let schema = try #require(Vendors.named("rongcloud")).adapter.settings
        let warnings = AdapterSettings.warnings(["app_key": "k", "app_secret": "s", "timeout_seconds": "10", "callback_max_skew_ms": "600000"],
                                                schema: schema, backend: "rc",
                                                source: SettingsSource(file: "b.yaml", lines: ["timeout_seconds": 9, "callback_max_skew_ms": 10]))
        #expect(warnings.sorted() == ["b.yaml:10: backends.rc.callback_max_skew_ms is deprecated: write `callback_max_skew: 600000ms`",
                                      "b.yaml:9: backends.rc.timeout_seconds is deprecated: write `timeout: 10s`"])
        #expect(AdapterSettings.warnings(["timeout": "10s"], schema: schema, backend: "rc", source: SettingsSource()).isEmpty)
        // From the environment: the warning does not show the value.
        let hidden = AdapterSettings.warnings(["timeout_seconds": "10"], schema: schema, backend: "rc",
                                              source: SettingsSource(substituted: ["timeout_seconds": "${RC_TIMEOUT}"]))
        #expect(hidden == ["(code): backends.rc.timeout_seconds is deprecated: write `timeout: ${RC_TIMEOUT}s`"])
    }

    @Test(arguments: [
        (["timeout": "10"], "b.yaml:7: backends.wk.timeout: expected a duration such as 250ms, 10s, 5m, 24h or 7d (a number needs its unit, e.g. 10s), got '10'"),
        (["timeout": "5 minutes"], "b.yaml:7: backends.wk.timeout: expected a duration such as 250ms, 10s, 5m, 24h or 7d, got '5 minutes'"),
        (["timeout": "-1s"], "b.yaml:7: backends.wk.timeout: expected a duration such as 250ms, 10s, 5m, 24h or 7d, got '-1s'"),
        (["timeout": "0s"], "b.yaml:7: backends.wk.timeout: expected a duration of at least 1s, got 0s"),
        (["timeout_seconds": "0"], "b.yaml:8: backends.wk.timeout_seconds: expected a duration of at least 1s, got 0 seconds (0s)"),
        (["timeout_seconds": "ten"], "b.yaml:8: backends.wk.timeout_seconds: expected a whole number of seconds, got 'ten'"),
        (["timeout": "3s", "timeout_seconds": "3"],
         "b.yaml:8: backends.wk.timeout_seconds: both timeout_seconds and timeout are given: keep only timeout (timeout_seconds is its deprecated form)"),
        ([:], "b.yaml:5: backends.wk.im_url: is required: WuKongIM's HTTP API, e.g. http://wukongim:5001"),
    ])
    func badDurationsNameFileLineAndKey(_ values: [String: String], _ expected: String) throws {
        let schema = try #require(Vendors.named("wukong")).adapter.settings
        var all = ["im_url": "http://wk", "webhook_secret": "s"]
        if values.isEmpty { all.removeValue(forKey: "im_url") }
        all.merge(values) { $1 }
        let problems = AdapterSettings.problems(all, schema: schema, backend: "wk", source: Self.source)
        #expect(problems.map(\.message) == [expected])
        #expect(problems.first?.details["key"] == "backends.wk.\(expected.split(separator: ".")[3].split(separator: ":")[0])")
    }
}
