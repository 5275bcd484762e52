import IMBridgeApp
import IMCore
import IMConfig
import IMRelay
import Testing

/// One duration syntax for every time setting (docs/configuration.md, "Durations"): `250ms`, `10s`, `5m`,
/// `24h`, `7d`; the keys of earlier versions that named their unit still read the same values, each
/// with one deprecation warning; both forms of a key at once is an error; every problem has its line.
@Suite struct ConfigDurationTests {
    static let base = """
        store: /tmp/x.sqlite
        backends:
          a: {adapter: nim}
          b: {adapter: jmessage}
        routes:
          - {from: 'a:group:*', to: 'b:group:*'}

        """

    static func parse(_ extra: String) throws -> BridgeConfig {
        try BridgeConfig.parse(base + extra, file: "b.yaml", environment: ["RET": "24"])
    }

    static func problems(_ extra: String) -> [String] {
        do {
            _ = try parse(extra)
            return []
        } catch let error as IMError {
            return error.message.split(separator: "\n").map(String.init)
        } catch {
            return ["\(error)"]
        }
    }

    @Test func theSyntax() {
        #expect(ConfigDuration("250ms") == .milliseconds(250) && ConfigDuration("10s") == .seconds(10))
        #expect(ConfigDuration("5m") == .minutes(5) && ConfigDuration("24h") == .hours(24) && ConfigDuration("7d") == .days(7))
        #expect(ConfigDuration("0s") == .zero)
        for bad in ["10", "5 minutes", "-1s", "+1s", "1.5h", "10 s", " 10s", "", "s", "ms", "10S", "10sec", "1h30m", "99999999999999999d"] {
            #expect(ConfigDuration(bad) == nil, "\(bad) was accepted")
        }
        #expect(ConfigDuration.days(7).description == "7d" && ConfigDuration.hours(36).description == "36h")
        #expect(ConfigDuration.milliseconds(1500).description == "1500ms" && ConfigDuration.zero.description == "0s")
    }

    /// Every time setting of the file in the new syntax, read into its section.
    @Test func newKeysParse() throws {
        let config = try Self.parse("""
            retention: 36h
            retry:
              base: 250ms
              max: 30s
              max_age: 2h
            readiness:
              backend_failing: 90s
            ha:
              lease: 3s
            shutdown:
              drain: 0s
            listener:
              header_timeout: 5s
              body_timeout: 1m
              idle_timeout: 2m
            catch_up:
              max_age: 12h
              interval: 30s
            profiles:
              refresh: 0s
            groups:
              refresh: 10m
            verify:
              interval: 6h
              window: 2d

            """)
        #expect(config.retention == .hours(36) && config.ledgerRetentionMs == 36 * 3_600_000)
        #expect(config.retry.baseMs == 250 && config.retry.maxMs == 30_000 && config.retry.maxAgeMs == 7_200_000)
        #expect(config.readiness.backendFailingMs == 90_000 && config.ha.lease == .seconds(3) && config.shutdown.drain == .zero)
        #expect(config.listenerLimits.headerTimeout == .seconds(5) && config.listenerLimits.bodyTimeout == .seconds(60)
                && config.listenerLimits.idleTimeout == .seconds(120))
        #expect(config.catchUp.maxAgeMs == 12 * 3_600_000 && config.catchUp.intervalMs == 30_000)
        #expect(config.profiles.refreshMs == nil && config.groups.refreshMs == 600_000)
        #expect(config.verify.intervalMs == 6 * 3_600_000 && config.verify.windowMs == 2 * 86_400_000)
        #expect(config.warnings.isEmpty, "\(config.warnings)")
    }

    /// The keys of earlier versions give the values they gave, and one warning each naming the new key
    /// and the same value.
    @Test func oldKeysReadTheSameValuesWithAWarning() throws {
        let old = try Self.parse("""
            retention_hours: 36
            retry:
              base_ms: 250
              max_ms: 30000
              max_age_minutes: 120
            readiness:
              backend_failing_seconds: 0
            ha:
              lease_ms: 3000
            shutdown:
              drain_seconds: 5
            listener:
              header_timeout_seconds: 5
              body_timeout_seconds: 60
              idle_timeout_seconds: 120
            profiles:
              refresh_minutes: 0.5
            groups:
              refresh_minutes: 10
            catch_up:
              interval: 30

            """)
        let new = try Self.parse("""
            retention: 36h
            retry:
              base: 250ms
              max: 30000ms
              max_age: 120m
            readiness:
              backend_failing: 0s
            ha:
              lease: 3000ms
            shutdown:
              drain: 5s
            listener:
              header_timeout: 5s
              body_timeout: 60s
              idle_timeout: 120s
            profiles:
              refresh: 30s
            groups:
              refresh: 10m
            catch_up:
              interval: 30s

            """)
        #expect(old.retention == new.retention && old.retry == new.retry && old.readiness == new.readiness && old.ha == new.ha)
        #expect(old.shutdown == new.shutdown && old.listenerLimits == new.listenerLimits && old.profiles == new.profiles)
        #expect(old.groups == new.groups && old.catchUp == new.catchUp)
        #expect(old.readiness.backendFailingMs == nil && old.profiles.refreshMs == 30_000)
        #expect(old.warnings.sorted() == [
            "b.yaml:7: retention_hours is deprecated: write `retention: 36h`",
            "b.yaml:27: catch_up.interval: a number without a unit is deprecated: write `interval: 30s`",
            "b.yaml:9: retry.base_ms is deprecated: write `base: 250ms`",
            "b.yaml:10: retry.max_ms is deprecated: write `max: 30000ms`",
            "b.yaml:11: retry.max_age_minutes is deprecated: write `max_age: 120m`",
            "b.yaml:13: readiness.backend_failing_seconds is deprecated: write `backend_failing: 0s`",
            "b.yaml:15: ha.lease_ms is deprecated: write `lease: 3000ms`",
            "b.yaml:17: shutdown.drain_seconds is deprecated: write `drain: 5s`",
            "b.yaml:19: listener.header_timeout_seconds is deprecated: write `header_timeout: 5s`",
            "b.yaml:20: listener.body_timeout_seconds is deprecated: write `body_timeout: 60s`",
            "b.yaml:21: listener.idle_timeout_seconds is deprecated: write `idle_timeout: 120s`",
            "b.yaml:23: profiles.refresh_minutes is deprecated: write `refresh: 30s`",
            "b.yaml:25: groups.refresh_minutes is deprecated: write `refresh: 10m`",
        ].sorted(), "\(old.warnings.joined(separator: "\n"))")
    }

    @Test func aValueFromTheEnvironmentIsNotShownInTheWarning() throws {
        let config = try Self.parse("retention_hours: ${RET}\n")
        #expect(config.retention == .hours(24))
        #expect(config.warnings == ["b.yaml:7: retention_hours is deprecated: write `retention: ${RET}h`"])
    }

    @Test func bothKeysAreAnError() {
        #expect(Self.problems("retention_hours: 24\nretention: 1d\n")
                == ["b.yaml:7: retention_hours: both retention_hours and retention are given: keep only retention (retention_hours is its deprecated form)"])
        #expect(Self.problems("ha:\n  lease: 3s\n  lease_ms: 3000\n")
                == ["b.yaml:9: ha.lease_ms: both lease_ms and lease are given: keep only lease (lease_ms is its deprecated form)"])
    }

    @Test(arguments: [
        ("retention: 10\n", "b.yaml:7: retention: expected a duration such as 250ms, 10s, 5m, 24h or 7d (a number needs its unit, e.g. 10s), got '10'"),
        ("retention: 5 minutes\n", "b.yaml:7: retention: expected a duration such as 250ms, 10s, 5m, 24h or 7d, got '5 minutes'"),
        ("retention: -1s\n", "b.yaml:7: retention: expected a duration such as 250ms, 10s, 5m, 24h or 7d, got '-1s'"),
        ("retention: 500ms\n", "b.yaml:7: retention: expected a duration of at least 1s, or 0s (keeps everything), got 500ms"),
        ("retry:\n  base: 0s\n", "b.yaml:8: retry.base: expected a duration of at least 1ms, got 0s"),
        ("retry:\n  base: 2s\n  max: 1s\n", "b.yaml:9: retry.max: expected at least base (2s), got 1s"),
        ("retry:\n  max_age: 10\n", "b.yaml:8: retry.max_age: expected a duration such as 250ms, 10s, 5m, 24h or 7d (a number needs its unit, e.g. 10s), got '10'"),
        ("ha:\n  lease: 0s\n", "b.yaml:8: ha.lease: expected a duration of at least 300ms, got 0s"),
        ("readiness:\n  backend_failing: 1.5s\n", "b.yaml:8: readiness.backend_failing: expected a duration such as 250ms, 10s, 5m, 24h or 7d, got '1.5s'"),
        ("profiles:\n  refresh: 8d\n", "b.yaml:8: profiles.refresh: expected a duration from 1s to 7d, or 0s (only at first sight), got 8d"),
        ("verify:\n  interval: 5s\n", "b.yaml:8: verify.interval: expected a duration of at least 10s, got 5s"),
        ("catch_up:\n  max_age: 0s\n", "b.yaml:8: catch_up.max_age: expected a duration of at least 1ms, got 0s"),
    ])
    func badDurationsNameTheirLine(_ extra: String, _ expected: String) {
        #expect(Self.problems(extra) == [expected])
    }

    /// Every problem at once, with its own line, as for any other key.
    @Test func severalBadDurationsAreReportedTogether() {
        let lines = Self.problems("retention: 10\nretry:\n  base: 5 minutes\n  max_ms: -1\nshutdown:\n  drain: 2h\n")
        #expect(lines.count == 4, "\(lines)")
        for prefix in ["b.yaml:7: retention:", "b.yaml:9: retry.base:", "b.yaml:10: retry.max_ms:", "b.yaml:12: shutdown.drain:"] {
            #expect(lines.contains { $0.hasPrefix(prefix) }, "no \(prefix) in \(lines)")
        }
    }

    /// The key lists are what each section's decoder reads: an unknown key names the current keys only.
    @Test func keyListsComeFromTheDecoders() {
        #expect(BridgeConfig.retryKeys == ["base", "max", "max_age"])
        #expect(BridgeConfig.listenerKeys == ["header_timeout", "body_timeout", "idle_timeout", "max_connections", "allow_from", "admin_allow_from"])
        #expect(BridgeConfig.topLevelKeys.contains("retention") && !BridgeConfig.topLevelKeys.contains("retention_hours"))
        #expect(BridgeConfig.deprecatedTopLevelKeys == ["retention_hours"])
        let retry = BridgeConfig.sectionKeys.first { $0.name == "retry" }
        #expect(retry?.deprecated == ["base_ms", "max_ms", "max_age_minutes"])
        #expect(Self.problems("retry:\n  base_seconds: 1\n")
                == ["b.yaml:8: retry.base_seconds: unknown key (expected one of: base, max, max_age)"])
    }
}
