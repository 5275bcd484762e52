import Foundation
import IMAdapterKit
import IMCore
import JMessage
import NIM
import IMVendors
import RongCloud
import Testing
import WuKong

/// The adapter table of docs/configuration.md gives each adapter setting the default its adapter's
/// settings decoder yields when the key is absent from `backends.<name>` (with the bridge's default
/// `retention`, which bounds the callback windows).
@Suite struct DocumentedAdapterDefaultsTests {
    typealias Value = DocumentedDefaultsTests.Value
    typealias Kind = DocumentedDefaultsTests.Kind

    /// Each adapter's required settings, so that one absent key at a time can be tried.
    static let required: [String: [String: String]] = [
        "wukong": ["im_url": "http://wk.example:5001", "webhook_secret": "s"],
        "rongcloud": ["app_key": "k", "app_secret": "s"],
        "nim": ["app_key": "k", "app_secret": "s"],
        "jmessage": ["app_key": "k", "master_secret": "s", "admin": "bridge_admin"],
    ]

    /// Defaults the table states in words, each with what that means here.
    static let worded: [String: Value] = [
        "wukong.business_url": .text("im_url"),   // the value of `im_url`
        "rongcloud.api_url": .text(RongCloudClient.defaultBaseURLs.joined(separator: ", ")),
    ]

    static func settings(_ adapter: String, without key: String? = nil, extra: [String: String] = [:]) throws -> AdapterSettings {
        let schema = try #require(Vendors.named(adapter)).adapter.settings
        var values = required[adapter] ?? [:]
        if let key { values.removeValue(forKey: key) }
        return try AdapterSettings(backend: BackendID(adapter), values: values.merging(extra) { _, new in new }, schema: schema)
    }

    /// `.required` when building the adapter's configuration without `key` is refused naming it.
    static func omission(_ adapter: String, _ key: String, _ decode: (AdapterSettings) throws -> Void) -> Value {
        do {
            try decode(try settings(adapter, without: key))
            return .text("accepted")
        } catch {
            return "\(error)".contains(key) ? .required : .text("refused otherwise: \(error)")
        }
    }

    static func milliseconds(_ duration: Duration) -> Int64 {
        duration.components.seconds * 1000 + duration.components.attoseconds / 1_000_000_000_000_000
    }
    static func duration(_ duration: Duration) -> Value { .duration(milliseconds: milliseconds(duration)) }
    static func optional(_ text: String?) -> Value { text.map(Value.text) ?? .unset }
    static func list<T>(_ items: [T]) -> Value { items.isEmpty ? .unset : .text("\(items)") }

    /// What each adapter's decoder yields for each of its settings left out.
    static func parsed() throws -> [String: (kind: Kind, value: Value)] {
        let freshness = try #require(DocumentedDefaultsTests.parse(DocumentedDefaultsTests.minimal).ledgerRetentionMs) / 2
        var found: [String: (kind: Kind, value: Value)] = [:]

        let wk = try WuKongSettings(settings("wukong"))
        let wkDecode = { @Sendable (settings: AdapterSettings) in _ = try WuKongSettings(settings) }
        let unsigned = (try? WuKongSettings(settings("wukong", without: "webhook_secret"))) != nil
        found["wukong.im_url"] = (.text, omission("wukong", "im_url", wkDecode))
        found["wukong.business_url"] = (.text, .text(wk.businessURL ?? "im_url"))
        found["wukong.manager_token"] = (.text, optional(wk.managerToken))
        found["wukong.webhook_secret"] = (.text, omission("wukong", "webhook_secret", wkDecode))
        found["wukong.allow_unsigned_callbacks"] = (.flag, .flag(unsigned))
        found["wukong.token_secret"] = (.text, .text(wk.tokenSecret))
        found["wukong.service_uid"] = (.text, .text(wk.serviceUID))
        found["wukong.timeout"] = (.duration, duration(wk.timeout))
        found["wukong.custom_types"] = (.text, list(Array(wk.customTypes.keys)))
        found["wukong.session_tokens"] = (.text, list(Array(wk.sessionTokens.keys)))

        let rcDecode = { @Sendable (settings: AdapterSettings) in _ = try RongCloudSettings(settings, freshnessLimitMs: freshness) }
        let rc = try RongCloudSettings(settings("rongcloud"), freshnessLimitMs: freshness)
        for key in ["app_key", "app_secret"] { found["rongcloud.\(key)"] = (.text, omission("rongcloud", key, rcDecode)) }
        found["rongcloud.api_url"] = (.text, .text(rc.apiURLs.joined(separator: ", ")))
        found["rongcloud.timeout"] = (.duration, duration(rc.timeout))
        found["rongcloud.history_viewer"] = (.text, optional(rc.historyViewer))
        found["rongcloud.object_names"] = (.text, list(Array(rc.objectNames.keys)))
        found["rongcloud.callback_max_skew"] = (.duration, DocumentedDefaultsTests.milliseconds(rc.callbackMaxSkewMs))

        let nimDecode = { @Sendable (settings: AdapterSettings) in _ = try NIMSettings(settings, freshnessLimitMs: freshness) }
        let nim = try NIMSettings(settings("nim"), freshnessLimitMs: freshness)
        for key in ["app_key", "app_secret"] { found["nim.\(key)"] = (.text, omission("nim", key, nimDecode)) }
        found["nim.api_url"] = (.text, .text(nim.baseURL))
        found["nim.team_query_accid"] = (.text, optional(nim.teamQueryAccid))
        found["nim.recall_window"] = (.duration, DocumentedDefaultsTests.milliseconds(nim.recallWindow.map { milliseconds($0) }
                                                                                          ?? NIMBackend.defaultCapabilities.recallWindowMs))
        found["nim.recall_ignore_time"] = (.flag, .flag(nim.recallIgnoreTime))
        found["nim.create_users"] = (.flag, .flag(nim.createUsers))
        found["nim.custom_type_key"] = (.text, .text(nim.customFormat.typeKey))
        found["nim.custom_data_key"] = (.text, .text(nim.customFormat.dataKey))
        found["nim.custom_untyped_name"] = (.text, .text(nim.customFormat.untypedName))
        found["nim.custom_aliases"] = (.text, list(Array(nim.customFormat.aliases.keys)))
        // "half of `retention`": the window is the freshness limit itself.
        let skew = nim.callbackMaxSkew.map { milliseconds($0) }
        found["nim.callback_max_skew"] = (.duration, .text(skew == freshness ? "half of retention" : "\(String(describing: skew)) ms"))
        found["nim.timeout"] = (.duration, duration(nim.timeout))

        let jmDecode = { @Sendable (settings: AdapterSettings) in _ = try JMessageSettings(settings, freshnessLimitMs: freshness) }
        let jm = try JMessageSettings(settings("jmessage"), freshnessLimitMs: freshness)
        for key in ["app_key", "master_secret", "admin"] { found["jmessage.\(key)"] = (.text, omission("jmessage", key, jmDecode)) }
        found["jmessage.admin_password"] = (.text, optional(jm.adminPassword))
        found["jmessage.api_url"] = (.text, .text(jm.apiURL))
        found["jmessage.report_url"] = (.text, .text(jm.reportURL))
        found["jmessage.poll_interval"] = (.duration, DocumentedDefaultsTests.milliseconds(jm.pollIntervalMs))
        found["jmessage.poll_overlap"] = (.duration, duration(jm.pollOverlap))
        // With `poll_interval` left at its default, polling stops only for `routing_push: true`.
        found["jmessage.routing_push"] = (.flag, .flag(jm.pollIntervalMs == nil))
        found["jmessage.timeout"] = (.duration, duration(jm.timeout))
        return found
    }

    /// A cell of the table as a value: the worded defaults above, "half of `retention`", else as for the
    /// keys of `bridge.yaml`.
    static func documented(_ key: String, _ cell: String, kind: Kind) -> Value? {
        if cell.hasPrefix("half of `retention`") { return .text("half of retention") }
        if let worded = worded[key] {
            let stated = cell.replacingOccurrences(of: "`", with: "")
            if key == "wukong.business_url" { return stated == "im_url" ? worded : .text(stated) }
            return stated == "the China primary and backup hosts" ? worded : .text(stated)
        }
        return DocumentedDefaultsTests.documented(cell, kind: kind)
    }

    @Test func theAdapterTableGivesEachSettingTheDecodersDefault() throws {
        let parsed = try Self.parsed()
        let rows = try ConfigReferenceTests.rows(between: "<!-- adapters:begin -->", and: "<!-- adapters:end -->")
        #expect(rows.count >= 35, "the adapter table was not found whole: \(rows.count) rows")
        var seen = Set<String>()
        for row in rows {
            for name in ConfigReferenceTests.names(row[1]) {
                let key = "\(row[0]).\(name)"
                seen.insert(key)
                guard let (kind, value) = parsed[key] else {
                    Issue.record("\(key): documented, but this test does not read its default yet (add it to `parsed()`)")
                    continue
                }
                let stated = Self.documented(key, row[2], kind: kind)
                #expect(stated == value, "\(key): docs/configuration.md says \(stated.map(\.description) ?? "'\(row[2])', which is not a \(kind)"), the adapter yields \(value)")
            }
        }
        #expect(Set(parsed.keys).subtracting(seen).isEmpty, "read here but not in the table: \(Set(parsed.keys).subtracting(seen).sorted())")
    }
}
