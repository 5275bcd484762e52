import IMCore
import IMMapping
import IMHTTP

/// The `bridge.yaml` settings of a NIM backend (`adapter: nim`), all strings:
///
/// | key | default | meaning |
/// |---|---|---|
/// | `api_url` | `https://api-cn.yunxinapi.com/nimserver` | v1 base URL (the sandbox: `http://127.0.0.1:PORT`) |
/// | `app_key`, `app_secret` | required | signing credentials (also verify the message copies) |
/// | `team_query_accid` | none | member accid team history is read as when no viewer is given |
/// | `recall_window_ms` | 120000 | the console's recall window, if raised (≤ 604800000) |
/// | `create_users` | true | create puppet accounts on first use |
/// | `custom_type_key`, `custom_data_key`, `custom_untyped_name` | `type`, `data`, `nim_custom` | the type-100 envelope (`NIMCustomFormat`) |
/// | `custom_aliases` | none | numeric app types → content type names: `1=order_card,2=photo_card` |
/// | `callback_max_skew_ms` | none | refuse message copies whose CurTime is further off than this |
/// | `timeout_seconds` | 15 | per-request timeout |
public enum NIMSettings {
    /// Builds the backend; a bad setting throws `invalid_argument` with `details["setting"]` naming it.
    public static func makeBackend(id: BackendID, settings: [String: String], registry: ContentRegistry,
                                   clock: any IMClock = SystemClock(),
                                   mapping: VendorTable = MappingSet.shipped.table("nim")) throws -> NIMBackend {
        func bad(_ key: String, _ message: String) -> IMError {
            IMError(.invalidArgument, message, details: ["setting": key])
        }
        func required(_ key: String) throws -> String {
            guard let value = settings[key], !value.isEmpty else { throw bad(key, "is required") }
            return value
        }
        func number(_ key: String) throws -> Int64? {
            guard let text = settings[key] else { return nil }
            guard let value = Lenient.int64(text), value >= 0 else { throw bad(key, "must be a non-negative number, got '\(text)'") }
            return value
        }
        var capabilities = NIMBackend.defaultCapabilities
        if let window = try number("recall_window_ms") {
            guard window <= 604_800_000 else { throw bad("recall_window_ms", "NIM allows at most 604800000 (7 days)") }
            capabilities.recallWindowMs = window
        }
        var aliases: [String: String] = [:]
        for pair in (settings["custom_aliases"] ?? "").split(separator: ",") where !pair.isEmpty {
            let parts = pair.split(separator: "=", maxSplits: 1).map { $0.trimmingCharacters(in: .whitespaces) }
            guard parts.count == 2, !parts[0].isEmpty, !parts[1].isEmpty else {
                throw bad("custom_aliases", "expected WIRE=NAME pairs separated by commas, got '\(pair)'")
            }
            aliases[parts[0]] = parts[1]
        }
        let createUsers: Bool
        if let text = settings["create_users"] {
            guard let flag = Lenient.bool(text) else { throw bad("create_users", "must be true or false, got '\(text)'") }
            createUsers = flag
        } else {
            createUsers = true
        }
        let format = NIMCustomFormat(typeKey: settings["custom_type_key"] ?? "type", dataKey: settings["custom_data_key"] ?? "data",
                                     untypedName: settings["custom_untyped_name"] ?? "nim_custom", aliases: aliases)
        let config = NIMConfig(baseURL: settings["api_url"] ?? "https://api-cn.yunxinapi.com/nimserver",
                               appKey: try required("app_key"), appSecret: try required("app_secret"),
                               timeoutSeconds: try number("timeout_seconds") ?? 15)
        return NIMBackend(id: id, config: config, registry: registry, customFormat: format, capabilities: capabilities,
                          teamQueryAccid: settings["team_query_accid"], createUsersOnDemand: createUsers,
                          callbackMaxSkewMs: try number("callback_max_skew_ms"), clock: clock, mapping: mapping)
    }
}
