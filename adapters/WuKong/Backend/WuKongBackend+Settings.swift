import IMCore

extension WuKongBackend.Configuration {
    /// The settings a `bridge.yaml` backend entry may carry (flat strings):
    /// `im_url` (required), `business_url`, `manager_token`, `webhook_secret`, `token_secret`,
    /// `service_uid`, `timeout_seconds`, `custom_types` (`"101=order_card,102=invoice"`),
    /// `session_tokens` (`"uid1=token1,uid2=token2"`). Unknown keys are refused; errors carry
    /// `details["setting"]` naming the key.
    public static let settingKeys: Set<String> = ["im_url", "business_url", "manager_token", "webhook_secret", "token_secret",
                                                  "service_uid", "timeout_seconds", "custom_types", "session_tokens"]

    public init(id: BackendID, settings: [String: String]) throws {
        func refuse(_ key: String, _ message: String) -> IMError {
            IMError(.invalidArgument, message, details: ["setting": key])
        }
        for key in settings.keys where key != "adapter" && !Self.settingKeys.contains(key) {
            throw refuse(key, "unknown WuKong setting (known: \(Self.settingKeys.sorted().joined(separator: ", ")))")
        }
        guard let imURL = settings["im_url"], imURL.hasPrefix("http://") || imURL.hasPrefix("https://") else {
            throw refuse("im_url", "is required: WuKongIM's HTTP API, e.g. http://wukongim:5001")
        }
        if let business = settings["business_url"], !(business.hasPrefix("http://") || business.hasPrefix("https://")) {
            throw refuse("business_url", "must be an http(s) URL")
        }
        func pairs(_ key: String) throws -> [(String, String)] {
            guard let text = settings[key], !text.isEmpty else { return [] }
            return try text.split(separator: ",").map { item in
                let parts = item.split(separator: "=", maxSplits: 1).map { $0.trimmingCharacters(in: .whitespaces) }
                guard parts.count == 2, !parts[0].isEmpty, !parts[1].isEmpty else { throw refuse(key, "expected k=v,k=v; got '\(item)'") }
                return (parts[0], parts[1])
            }
        }
        var customTypes: [Int: String] = [:]
        for (number, name) in try pairs("custom_types") {
            guard let type = Int(number), type > 0 else { throw refuse("custom_types", "'\(number)' is not a WuKong type number") }
            customTypes[type] = name
        }
        let timeout = try settings["timeout_seconds"].map { text -> Int64 in
            guard let value = Int64(text), value > 0 else { throw refuse("timeout_seconds", "must be a positive number of seconds") }
            return value
        }
        self.init(id: id, imURL: imURL, businessURL: settings["business_url"], managerToken: settings["manager_token"],
                  webhookSecret: settings["webhook_secret"], tokenSecret: settings["token_secret"] ?? "imbridge",
                  sessionTokens: Dictionary(try pairs("session_tokens"), uniquingKeysWith: { _, last in last }),
                  serviceUID: settings["service_uid"] ?? "imbridge", customTypes: customTypes, timeoutSeconds: timeout ?? 15)
    }
}
