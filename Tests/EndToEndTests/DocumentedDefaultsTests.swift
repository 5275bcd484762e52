import Foundation
import IMBridgeApp
import IMCore
import IMRelay
import Testing
import IMOutbox

/// Every default the documentation gives a `bridge.yaml` key is what `BridgeConfig.parse` yields when the
/// key is absent: the reference table of docs/configuration.md, the comments of its annotated
/// configuration, and each "`key` (default X)" in the README and docs/. A default changed on one side
/// only, or written as something the parser would not take (`default 60` for a duration), fails here.
@Suite struct DocumentedDefaultsTests {
    /// A default, as the parser yields it or as a document states it.
    enum Value: Equatable, CustomStringConvertible {
        /// None: the setting is off, or unset until run time (`ha.instance`: the host name).
        case unset
        /// Omitting the key is refused, with the key named.
        case required
        case duration(milliseconds: Int64)
        case text(String)
        case number(Int)
        case flag(Bool)
        /// `routes[].fallbacks`: the features whose default is `drop` (the others: `notice`).
        case fallbacks(drop: Set<String>)

        var description: String {
            switch self {
            case .unset: "none"
            case .required: "required"
            case .duration(let ms): DocumentedDefaultsTests.shown(ms)
            case .text(let text): "\"\(text)\""
            case .number(let number): "\(number)"
            case .flag(let flag): "\(flag)"
            case .fallbacks(let drop): "notice, drop for \(drop.sorted())"
            }
        }
    }

    enum Kind { case duration, text, number, flag, fallbacks }

    // MARK: What the parser yields

    static let backends = """
        backends:
          aa:
            adapter: wukong
            im_url: http://127.0.0.1:1
            webhook_secret: s
          bb:
            adapter: wukong
            im_url: http://127.0.0.1:1
            webhook_secret: s

        """
    static let store = "store: /tmp/imbridge-defaults.sqlite\n"
    static let route = "routes:\n  - from: \"aa:group:*\"\n    to: \"bb:group:*\"\n"
    static let minimal = store + backends + route

    static func parse(_ yaml: String) throws -> BridgeConfig { try BridgeConfig.parse(yaml, file: "defaults.yaml", environment: [:]) }

    /// `.required` when leaving `key` out of `yaml` is refused naming it; else what the parser made of the rest.
    static func omission(_ key: String, _ yaml: String, read: (BridgeConfig) -> Value) -> Value {
        do { return read(try parse(yaml)) } catch {
            let message = "\(error)"
            return message.contains(" \(key): ") || message.contains(".\(key): ") ? .required : .text("refused otherwise: \(message)")
        }
    }

    static func milliseconds(_ ms: Int64?) -> Value { ms.map { .duration(milliseconds: $0) } ?? .unset }
    static func milliseconds(_ duration: Duration) -> Value {
        .duration(milliseconds: duration.components.seconds * 1000 + duration.components.attoseconds / 1_000_000_000_000_000)
    }

    static func prefix(_ mode: UserMode) -> Value {
        if case .puppet(let prefix) = mode { return .text(prefix) }
        return .text("not a puppet route")
    }

    /// Each documented key: how a documented default of it is read, and what the parser yields without it.
    static func parsed() throws -> [String: (kind: Kind, value: Value)] {
        let config = try parse(minimal)
        let route = try #require(config.routes.first)
        let relay = try parse(store + backends + Self.route + "    users: relay\n    relay_account: bot\n").routes.first
        let nameFormat: Value = if case .relay(_, let format) = relay?.usersOnTarget { .text(format) } else { .text("not a relay route") }
        let drops = Set(Feature.allCases.filter { route.fallback(for: $0) == .drop }.map(\.rawValue))
        let usersText: Value = if case .puppet = route.usersOnTarget { .text("puppet") } else { .text("relay") }
        return [
            "store": (.text, omission("store", backends + Self.route) { .text($0.store) }),
            "listen": (.text, .text("\(config.listenHost):\(config.listenPort)")),
            "admin_listen": (.text, config.adminListen.map { .text("\($0.host):\($0.port)") } ?? .unset),
            "mappings": (.text, config.mappings.map(Value.text) ?? .unset),
            "backends": (.text, omission("backends", store) { _ in .text("accepted") }),
            "routes": (.text, omission("routes", store + backends) { _ in .text("accepted") }),
            "retention": (.duration, milliseconds(config.ledgerRetentionMs)),
            "retry.base": (.duration, .duration(milliseconds: config.retry.baseMs)),
            "retry.max": (.duration, .duration(milliseconds: config.retry.maxMs)),
            "retry.max_age": (.duration, milliseconds(config.retry.maxAgeMs)),
            "readiness.backend_failing": (.duration, milliseconds(config.readiness.backendFailingMs)),
            "ha.lease": (.duration, .duration(milliseconds: config.ha.lease.milliseconds)),
            "ha.instance": (.text, config.ha.instance.map(Value.text) ?? .unset),
            "log.level": (.text, .text(config.log.level.rawValue)),
            "log.format": (.text, .text(config.log.format.rawValue)),
            "shutdown.drain": (.duration, .duration(milliseconds: config.shutdown.drain.milliseconds)),
            "listener.header_timeout": (.duration, milliseconds(config.listenerLimits.headerTimeout)),
            "listener.body_timeout": (.duration, milliseconds(config.listenerLimits.bodyTimeout)),
            "listener.idle_timeout": (.duration, milliseconds(config.listenerLimits.idleTimeout)),
            "listener.max_connections": (.number, .number(config.listenerLimits.maxConnections)),
            "listener.allow_from": (.text, config.listenerLimits.allowedSources.isEmpty ? .unset : .text("\(config.listenerLimits.allowedSources)")),
            "listener.admin_allow_from": (.text, config.listenerLimits.adminAllowedSources.isEmpty ? .unset
                                          : .text("\(config.listenerLimits.adminAllowedSources)")),
            "tracing.otlp_endpoint": (.text, config.tracing.otlpEndpoint.map(Value.text) ?? .unset),
            "tracing.service_name": (.text, .text(config.tracing.serviceName)),
            "tracing.protocol": (.text, .text(config.tracing.otlpProtocol)),
            "catch_up.enabled": (.flag, .flag(config.catchUp.enabled)),
            "catch_up.max_age": (.duration, .duration(milliseconds: config.catchUp.maxAgeMs)),
            "catch_up.max_messages_per_conversation": (.number, .number(config.catchUp.maxMessagesPerConversation)),
            "catch_up.interval": (.duration, .duration(milliseconds: config.catchUp.intervalMs)),
            "catch_up.change_window": (.duration, .duration(milliseconds: config.catchUp.changeWindowMs)),
            "profiles.refresh": (.duration, milliseconds(config.profiles.refreshMs)),
            "groups.refresh": (.duration, milliseconds(config.groups.refreshMs)),
            "verify.interval": (.duration, milliseconds(config.verify.intervalMs)),
            "verify.window": (.duration, .duration(milliseconds: config.verify.windowMs)),
            "routes[].from": (.text, omission("from", store + backends + "routes:\n  - to: \"bb:group:*\"\n") { _ in .text("accepted") }),
            "routes[].to": (.text, omission("to", store + backends + "routes:\n  - from: \"aa:group:*\"\n") { _ in .text("accepted") }),
            "routes[].direction": (.text, .text(route.direction.rawValue)),
            "routes[].users": (.text, usersText),
            "routes[].puppet_prefix": (.text, prefix(route.usersOnTarget)),
            "routes[].reverse_prefix": (.text, prefix(route.usersOnSource)),
            "routes[].relay_account": (.text, omission("relay_account", store + backends + Self.route + "    users: relay\n") { _ in .text("accepted") }),
            "routes[].name_format": (.text, nameFormat),
            "routes[].media": (.text, .text(route.media.rawValue)),
            "routes[].group_ids": (.text, .text((route.groupIDs ?? .map).rawValue)),
            "routes[].on_dissolve": (.text, .text((route.onDissolve ?? .dissolve).rawValue)),
            "routes[].fallbacks": (.fallbacks, .fallbacks(drop: drops)),
        ]
    }

    // MARK: What the documents state

    /// A documented default read as `kind`; nil when it cannot be read as one (a bare `60` for a duration).
    static func documented(_ raw: String, kind: Kind) -> Value? {
        var text = raw.replacingOccurrences(of: "**", with: "").trimmingCharacters(in: .whitespaces)
        if text.hasPrefix("required") { return .required }
        if text.hasPrefix("none") || text == "the host name" { return .unset }
        if kind == .fallbacks {
            // "notice (drop for read_receipts, commands)"
            guard text.hasPrefix("notice (drop for "), text.hasSuffix(")") else { return nil }
            let list = text.dropFirst("notice (drop for ".count).dropLast()
            return .fallbacks(drop: Set(list.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }))
        }
        if let code = text.split(separator: "`", omittingEmptySubsequences: false).dropFirst().first { text = String(code) }
        if text.count >= 2, text.hasPrefix("\""), text.hasSuffix("\"") { text = String(text.dropFirst().dropLast()) }
        text = text.replacingOccurrences(of: "<from>", with: "aa").replacingOccurrences(of: "<to>", with: "bb")
        switch kind {
        case .duration: return duration(text).map { .duration(milliseconds: $0) }
        case .text: return .text(text)
        case .number: return Int(text).map(Value.number)
        case .flag: return Bool(text).map(Value.flag)
        case .fallbacks: return nil
        }
    }

    /// The units of a duration in `bridge.yaml` (docs/configuration.md, "Durations"), largest first.
    static let units: [(String, Int64)] = [("d", 86_400_000), ("h", 3_600_000), ("m", 60_000), ("s", 1000), ("ms", 1)]

    /// `7d` (the configuration's syntax: a whole number and its unit), or prose: `7 days`, `5 min`, `24 h`.
    static func duration(_ text: String) -> Int64? {
        if let match = text.wholeMatch(of: /([0-9]+)(ms|s|m|h|d)/), let number = Int64(match.1),
           let unit = units.first(where: { $0.0 == String(match.2) }) {
            return number * unit.1
        }
        let words = text.split(separator: " ")
        let prose: [String: Int64] = ["ms": 1, "s": 1000, "second": 1000, "seconds": 1000, "min": 60_000, "minute": 60_000, "minutes": 60_000,
                                      "h": 3_600_000, "hour": 3_600_000, "hours": 3_600_000, "d": 86_400_000, "day": 86_400_000, "days": 86_400_000]
        guard words.count == 2, let number = Int64(words[0]), let unit = prose[String(words[1])] else { return nil }
        return number * unit
    }

    /// `ms` milliseconds in the largest unit that divides them (`86400000` → `1d`).
    static func shown(_ ms: Int64) -> String {
        guard ms > 0, let unit = units.first(where: { ms % $0.1 == 0 }) else { return "0s" }
        return "\(ms / unit.1)\(unit.0)"
    }

    static func read(_ path: String) throws -> String {
        try String(contentsOf: DeploymentFilesTests.root.appendingPathComponent(path), encoding: .utf8)
    }

    /// The reference table: (key, default cell).
    static func referenceRows() throws -> [(key: String, value: String)] {
        try ConfigReferenceTests.rows(between: "<!-- reference:begin -->", and: "<!-- reference:end -->").flatMap { row in
            ConfigReferenceTests.names(row[0]).map { (key: $0, value: row[1]) }
        }
    }

    /// The annotated configuration of docs/configuration.md: each top-level or section key whose comment
    /// (its line and the comment lines under it) says `default X`.
    static func annotatedDefaults() throws -> [(key: String, value: String)] {
        let text = try read("docs/configuration.md")
        let block = try #require(text.components(separatedBy: "```yaml\nstore:").dropFirst().first?.components(separatedBy: "```").first)
        var found: [(key: String, value: String)] = []
        var section: String?, current: String?, comment = ""
        func flush() {
            defer { current = nil; comment = "" }
            guard let current, let match = comment.firstMatch(of: /\bdefault:?\s+([^;,)]+?)(?=[;,)]|:\s|$)/) else { return }
            found.append((current, String(match.1)))
        }
        for line in ("store:" + block).split(separator: "\n", omittingEmptySubsequences: false) {
            let code = line.split(separator: "#", maxSplits: 1, omittingEmptySubsequences: false)
            let body = code[0], note = code.count > 1 ? String(code[1]).trimmingCharacters(in: .whitespaces) : ""
            if body.trimmingCharacters(in: .whitespaces).isEmpty {
                if current != nil { comment += " " + note }
                continue
            }
            flush()
            let indent = body.prefix { $0 == " " }.count
            guard let name = body.trimmingCharacters(in: .whitespaces).split(separator: ":").first.map(String.init) else { continue }
            if indent == 0 {
                section = name
                current = name
            } else if indent == 2, let section, !["backends", "routes"].contains(section) {
                current = "\(section).\(name)"
            }
            comment = note
        }
        flush()
        return found
    }

    /// "`key` (default X" in the README and docs/, for the keys of the reference table.
    static func proseDefaults(keys: Set<String>) throws -> [(file: String, key: String, value: String)] {
        let files = ["README.md"] + (try FileManager.default.contentsOfDirectory(atPath: DeploymentFilesTests.root.appendingPathComponent("docs").path))
            .filter { $0.hasSuffix(".md") }.sorted().map { "docs/" + $0 }
        var found: [(file: String, key: String, value: String)] = []
        for file in files {
            for match in try read(file).matches(of: /`([a-z_]+(?:\.[a-z_]+)?)`[^`.;()]{0,30}?\(default:?\s+([^;,)]+)/) where keys.contains(String(match.1)) {
                found.append((file, String(match.1), String(match.2).trimmingCharacters(in: .whitespacesAndNewlines)))
            }
        }
        return found
    }

    // MARK: The checks

    @Test func theReferenceTableGivesEachKeyTheParsersDefault() throws {
        let parsed = try Self.parsed()
        let rows = try Self.referenceRows()
        #expect(rows.count >= 35, "the reference table was not found whole: \(rows.count) keys")
        for (key, cell) in rows {
            guard let (kind, value) = parsed[key] else {
                Issue.record("\(key): documented, but this test does not read its default yet (add it to `parsed()`)")
                continue
            }
            let stated = Self.documented(cell, kind: kind)
            #expect(stated == value, "\(key): docs/configuration.md says \(stated.map(\.description) ?? "'\(cell)', which is not a \(kind)"), the parser yields \(value)")
        }
        #expect(Set(parsed.keys).subtracting(rows.map(\.key)).isEmpty, "read here but not in the table: \(Set(parsed.keys).subtracting(rows.map(\.key)).sorted())")
    }

    @Test func theAnnotatedConfigurationStatesTheParsersDefaults() throws {
        let parsed = try Self.parsed()
        let annotated = try Self.annotatedDefaults()
        #expect(annotated.count >= 12, "the comments' defaults were not found: \(annotated.map(\.key))")
        for (key, text) in annotated {
            let (kind, value) = try #require(parsed[key], "docs/configuration.md comments on \(key), which this test does not read")
            let stated = Self.documented(text, kind: kind)
            #expect(stated == value, "\(key): a comment in docs/configuration.md says default \(stated.map(\.description) ?? "'\(text)', not a \(kind)"), the parser yields \(value)")
        }
    }

    @Test func theReadmeAndTheDocsStateTheParsersDefaults() throws {
        let parsed = try Self.parsed()
        let prose = try Self.proseDefaults(keys: Set(parsed.keys))
        #expect(prose.count >= 6, "no \"`key` (default X)\" found: \(prose.map(\.key))")
        for (file, key, text) in prose {
            let (kind, value) = try #require(parsed[key])
            let stated = Self.documented(text, kind: kind)
            #expect(stated == value, "\(file): `\(key)` (default \(text)): \(stated.map { "\($0)" } ?? "not a \(kind)"); the parser yields \(value)")
        }
    }

    /// The checks can fail: a stated default that differs, and one the parser would not take.
    @Test func aWrongOrUnreadableDefaultIsCaught() throws {
        let parsed = try Self.parsed()
        #expect(Self.documented("`6d`", kind: .duration) != parsed["retention"]?.value)
        #expect(Self.documented("60", kind: .duration) == nil, "a bare number is not a duration")
        #expect(Self.documented("7 days", kind: .duration) == parsed["retention"]?.value)
        #expect(Self.documented("`<from>_`", kind: .text) == parsed["routes[].puppet_prefix"]?.value)
        #expect(Self.documented("required", kind: .text) != parsed["listen"]?.value)
        #expect(Self.documented("notice (drop for commands)", kind: .fallbacks) != parsed["routes[].fallbacks"]?.value)
    }
}
