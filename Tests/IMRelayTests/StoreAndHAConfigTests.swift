import IMBridgeApp
import IMCore
import IMMapping
import IMRelay
import IMStore
import Testing

/// `store:` (a path or a postgres:// URL) and `ha:` in bridge.yaml (README, docs/high-availability.md).
@Suite struct StoreAndHAConfigTests {
    static func yaml(store: String, ha: String = "") -> String {
        BridgeConfigTests.valid.replacingOccurrences(of: "store: /tmp/imbridge.sqlite", with: "store: \(store)") + ha
    }

    let env = ["WK_TOKEN": "t0k", "RC_SECRET": "s3cret"]

    @Test func haDefaultsAndSettings() throws {
        let plain = try BridgeConfig.parse(Self.yaml(store: "/tmp/x.sqlite"), environment: env)
        #expect(plain.ha.lease.milliseconds == LeaseSettings.defaultTTLMs && plain.ha.lease <= .seconds(9) && plain.ha.instance == nil)
        let set = try BridgeConfig.parse(Self.yaml(store: "\"postgres://imb@db:5432/imb\"", ha: "\nha:\n  lease: 3s\n  instance: east-1\n"),
                                         environment: env)
        #expect(set.ha.lease == .seconds(3) && set.ha.instance == "east-1" && set.store == "postgres://imb@db:5432/imb")
        let old = try BridgeConfig.parse(Self.yaml(store: "/tmp/x.sqlite", ha: "\nha:\n  lease_ms: 3000\n"), environment: env)
        #expect(old.ha.lease == .seconds(3) && old.warnings.contains { $0.hasSuffix("ha.lease_ms is deprecated: write `lease: 3000ms`") })
    }

    @Test func badStoreAndHAValuesNameTheirKeyAndHideThePassword() {
        let cases: [(String, String, String)] = [
            ("\"postgres://imb:hunter2@db/\"", "", "store:"),
            ("/tmp/x.sqlite", "\nha:\n  lease_ms: 10\n", "ha.lease_ms"),
            ("/tmp/x.sqlite", "\nha:\n  leases: 10\n", "ha.leases: unknown key"),
        ]
        for (store, ha, expected) in cases {
            #expect { try BridgeConfig.parse(Self.yaml(store: store, ha: ha), environment: env) } throws: { error in
                let text = "\(error)"
                return text.contains(expected) && !text.contains("hunter2")
            }
        }
    }

    @Test func thePasswordMayComeFromTheEnvironment() throws {
        let config = try BridgeConfig.parse(Self.yaml(store: "\"postgres://imb@db/imb\""), environment: env.merging(["IMBRIDGE_STORE_PASSWORD": "pw"]) { $1 })
        let location = try StoreLocation(parsing: config.store, environment: ["IMBRIDGE_STORE_PASSWORD": "pw"])
        #expect(location.password == "pw" && location.redacted == "postgres://imb:***@db:5432/imb")
    }
}
