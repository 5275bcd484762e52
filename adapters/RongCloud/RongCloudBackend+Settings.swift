import Foundation
import IMCore
import IMMapping

extension RongCloudBackend.Configuration {
    /// The settings keys a bridge configuration may give a `rongcloud` backend.
    public static let settingKeys: Set<String> = ["app_key", "app_secret", "api_url", "timeout_seconds", "history_viewer",
                                                  "object_names", "callback_max_skew_ms"]

    /// Reads a bridge configuration's flat settings (`backends.<name>.*` in `bridge.yaml`):
    ///
    /// - `app_key`, `app_secret` (required);
    /// - `api_url`: one URL, or several comma-separated tried in order (default: the China primary and backup hosts);
    /// - `timeout_seconds` (default 10); `history_viewer`: whose view group history reads;
    /// - `object_names`: comma-separated `contentType=objectName` pairs for custom types;
    /// - `callback_max_skew_ms`: routing-callback freshness window, `0` disables (default 3600000).
    ///
    /// An unknown key or a bad value throws `invalid_argument` with `details["setting"]` naming it.
    public init(id: BackendID, settings: [String: String], registry: ContentRegistry, clock: any IMClock = SystemClock(),
                mapping: VendorTable = MappingSet.shipped.table("rongcloud")) throws {
        func refuse(_ key: String, _ message: String) -> IMError {
            IMError(.invalidArgument, message, details: ["setting": key])
        }
        if let unknown = settings.keys.sorted().first(where: { !Self.settingKeys.contains($0) }) {
            throw refuse(unknown, "unknown rongcloud setting (known: \(Self.settingKeys.sorted().joined(separator: ", ")))")
        }
        func required(_ key: String) throws -> String {
            guard let value = settings[key], !value.isEmpty else { throw refuse(key, "is required") }
            return value
        }
        func number(_ key: String) throws -> Int64? {
            guard let text = settings[key] else { return nil }
            guard let value = Int64(text), value >= 0 else { throw refuse(key, "expected a whole number ≥ 0, got '\(text)'") }
            return value
        }
        func list(_ key: String) -> [String] {
            (settings[key] ?? "").split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
        }
        let urls = list("api_url")
        for url in urls where !(url.hasPrefix("http://") || url.hasPrefix("https://")) {
            throw refuse("api_url", "'\(url)' is not an http(s) URL")
        }
        var objectNames: [String: String] = [:]
        for pair in list("object_names") {
            let parts = pair.split(separator: "=", maxSplits: 1).map(String.init)
            guard parts.count == 2, !parts[0].isEmpty else { throw refuse("object_names", "expected contentType=objectName, got '\(pair)'") }
            do { try RongCloudContentCodec.checkCustomName(parts[1]) } catch let error as IMError { throw refuse("object_names", error.message) }
            objectNames[parts[0]] = parts[1]
        }
        let timeout = try number("timeout_seconds") ?? 10
        guard timeout > 0 else { throw refuse("timeout_seconds", "must be positive") }
        let skew = try number("callback_max_skew_ms") ?? 3_600_000
        self.init(id: id, appKey: try required("app_key"), appSecret: try required("app_secret"),
                  baseURLs: urls.isEmpty ? RongCloudClient.defaultBaseURLs : urls, timeoutSeconds: timeout, registry: registry,
                  objectNames: objectNames, historyViewer: settings["history_viewer"].map(UserID.init),
                  callbackMaxSkewMs: skew == 0 ? nil : skew, clock: clock)
        self.mapping = mapping
    }
}
