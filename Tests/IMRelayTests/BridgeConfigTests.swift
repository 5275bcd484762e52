import IMBridgeApp
import IMCore
import IMRelay
import Testing

@Suite struct BridgeConfigTests {
    static let valid = """
        store: /tmp/imbridge.sqlite
        listen: 127.0.0.1:8090
        backends:
          wk:
            adapter: wukong
            api_url: http://127.0.0.1:5001
            token: ${WK_TOKEN}
          rc:
            adapter: rongcloud
            api_url: http://127.0.0.1:5002
            app_key: key
            app_secret: ${RC_SECRET}
        routes:
          - from: wk:group:*
            to: rc:group:*
            users: puppet
            puppet_prefix: "wk-"
            fallbacks:
              edit: drop
              reactions: notice
          - from: wk:group:ops
            to: rc:group:ops-room
            direction: forward
            users: relay
            relay_account: bridge_bot
            name_format: "{name}: "
        retry:
          base_ms: 100
          max_ms: 5000
        """

    let env = ["WK_TOKEN": "t0k", "RC_SECRET": "s3cret"]

    @Test func parsesEveryKey() throws {
        let config = try BridgeConfig.parse(Self.valid, environment: env)
        #expect(config.store == "/tmp/imbridge.sqlite" && config.listenHost == "127.0.0.1" && config.listenPort == 8090)
        #expect(config.backends.map(\.name) == ["wk", "rc"])
        #expect(config.backends[0].settings == ["api_url": "http://127.0.0.1:5001", "token": "t0k"])
        #expect(config.backends[1].settings["app_secret"] == "s3cret")
        #expect(config.routes.count == 2)
        #expect(config.routes[0].usersOnTarget == .puppet(prefix: "wk-") && config.routes[0].usersOnSource == .puppet(prefix: "rc_"))
        #expect(config.routes[0].fallback(for: .edit) == .drop && config.routes[0].fallback(for: .reactions) == .notice)
        #expect(config.routes[0].fallback(for: .readReceipts) == .drop)
        #expect(config.routes[1].direction == .forward && config.routes[1].usersOnTarget == .relay(account: "bridge_bot", nameFormat: "{name}: "))
        #expect(config.retry.baseMs == 100 && config.retry.maxMs == 5000)
    }

    /// A map setting is a YAML mapping, kept apart from the single values with its key's line; each of its
    /// values must be a single one (its path and line named otherwise).
    @Test func mapSettingsAreMappings() throws {
        let yaml = Self.valid.replacingOccurrences(of: "    token: ${WK_TOKEN}\n",
                                                   with: "    token: ${WK_TOKEN}\n    custom_types:\n      150: gift\n      151: \"${WK_TOKEN}\"\n")
        let wk = try BridgeConfig.parse(yaml, file: "b.yaml", environment: env).backends[0]
        #expect(wk.maps == ["custom_types": ["150": "gift", "151": "t0k"]] && wk.settings["custom_types"] == nil)
        #expect(wk.lines["custom_types"] == 8 && wk.settings["token"] == "t0k")
        let nested = Self.valid.replacingOccurrences(of: "    token: ${WK_TOKEN}\n", with: "    custom_types:\n      150: [gift]\n")
        #expect(failure(nested).hasPrefix("b.yaml:8: backends.wk.custom_types.150: expected a single value"), "\(failure(nested))")
    }

    func failure(_ yaml: String) -> String {
        do {
            _ = try BridgeConfig.parse(yaml, file: "b.yaml", environment: env, adapters: ["wukong", "rongcloud", "nim", "jmessage"])
            return "parsed"
        } catch {
            return (error as? IMError)?.message ?? "\(error)"
        }
    }

    @Test(arguments: [
        ("adapter: wukong", "adapter: wukongg", "b.yaml:5: backends.wk.adapter: unknown adapter 'wukongg'"),
        ("to: rc:group:*", "to: xx:group:*", "routes[0].to: backend 'xx' is not configured"),
        ("from: wk:group:*", "from: wk-group", "routes[0].from: route endpoint 'wk-group' is not BACKEND:KIND:ID"),
        ("users: puppet", "users: ghost", "routes[0].users: expected puppet or relay"),
        ("edit: drop", "edit: maybe", "routes[0].fallbacks.edit: expected notice or drop"),
        ("reactions: notice", "reaktions: notice", "routes[0].fallbacks.reaktions: unknown feature"),
        ("direction: forward", "direciton: forward", "routes[1].direciton: unknown key"),
        ("listen: 127.0.0.1:8090", "listen: localhost", "listen: expected HOST:PORT"),
        ("token: ${WK_TOKEN}", "token: ${NOPE}", "backends.wk.token: environment variable NOPE is not set"),
        ("relay_account: bridge_bot", "relay_acount: bridge_bot", "routes[1].relay_acount: unknown key"),
        ("store: /tmp/imbridge.sqlite", "stor: /tmp/x", "stor: unknown key"),
    ])
    func errorsNameTheKey(original: String, broken: String, expected: String) {
        let message = failure(Self.valid.replacingOccurrences(of: original, with: broken))
        #expect(message.contains(expected), "got: \(message)")
    }

    @Test func missingPiecesAreNamed() {
        #expect(failure(Self.valid.replacingOccurrences(of: "store: /tmp/imbridge.sqlite\n", with: "")).contains("store: is required"))
        #expect(failure("store: x\nbackends: {}\nroutes: []").contains("backends: at least one backend"))
        #expect(failure("store: x\nbackends:\n  a: {adapter: nim}\n  b: {adapter: jmessage}\nroutes: []").contains("routes: at least one route"))
        #expect(failure("store: x\nbackends:\n  a: {adapter: nim}\nroutes:\n  - {from: 'a:group:*', to: 'a:group:*'}").contains("two different backends"))
        #expect(failure("store: [unclosed").contains("not valid YAML"))
    }
}

/// `listener:` (docs/configuration.md): the listener's timeouts and connection cap.
@Suite struct ListenerConfigTests {
    static let environment = ["WK_TOKEN": "t", "RC_SECRET": "s"]

    @Test func listenerKeysParseAndDefault() throws {
        let yaml = BridgeConfigTests.valid + """

            listener:
              header_timeout: 3s
              body_timeout: 7000ms
              idle_timeout: 20s
              max_connections: 300
              allow_from: [10.0.0.0/8, "192.0.2.7", "2001:db8::/32"]
              admin_allow_from: [127.0.0.1]

            """
        let limits = try BridgeConfig.parse(yaml, environment: Self.environment).listenerLimits
        #expect(limits.headerTimeout == .seconds(3) && limits.bodyTimeout == .seconds(7) && limits.idleTimeout == .seconds(20))
        #expect(limits.maxConnections == 300)
        #expect(limits.allowedSources.map(\.description) == ["10.0.0.0/8", "192.0.2.7", "2001:db8::/32"])
        #expect(limits.forAdmin.allowedSources.map(\.description) == ["127.0.0.1"])
        #expect(throws: (any Error).self) {
            try BridgeConfig.parse(BridgeConfigTests.valid + "\nlistener:\n  allow_from: [10.0.0.0/33]\n", environment: Self.environment)
        }
        let defaults = try BridgeConfig.parse(BridgeConfigTests.valid, environment: Self.environment).listenerLimits
        #expect(defaults.headerTimeout == .seconds(10) && defaults.bodyTimeout == .seconds(30) && defaults.idleTimeout == .seconds(60))
        #expect(defaults.maxConnections == 1024 && defaults.allowedSources.isEmpty && defaults.adminAllowedSources.isEmpty)
    }

    @Test(arguments: [
        ("listener:\n  header_timeout_seconds: 0\n", "listener.header_timeout_seconds: expected a duration from 1s to 1h, got 0 seconds (0s)"),
        ("listener:\n  body_timeout_seconds: 7200\n", "listener.body_timeout_seconds: expected a duration from 1s to 1h, got 7200 seconds (2h)"),
        ("listener:\n  idle_timeout_seconds: -5\n", "listener.idle_timeout_seconds: expected a duration from 1s to 1h, got -5 seconds"),
        ("listener:\n  header_timeout: 0s\n", "listener.header_timeout: expected a duration from 1s to 1h, got 0s"),
        ("listener:\n  idle_timeout: 2h\n", "listener.idle_timeout: expected a duration from 1s to 1h, got 2h"),
        ("listener:\n  max_connections: 0\n", "listener.max_connections: expected connections from 1 to 60000, got 0"),
        ("listener:\n  read_timeout: 5\n", "listener.read_timeout: unknown key"),
        ("listener: 5\n", "listener: expected a mapping"),
    ])
    func badListenerKeysAreNamed(_ extra: String, _ expected: String) {
        let message: String
        do {
            _ = try BridgeConfig.parse(BridgeConfigTests.valid + "\n" + extra, file: "b.yaml", environment: Self.environment)
            message = "parsed"
        } catch {
            message = (error as? IMError)?.message ?? "\(error)"
        }
        #expect(message.contains(expected), "\(message)")
    }
}
