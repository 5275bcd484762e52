import IMAdapterKit
import IMCore

/// A `wukong` backend's settings (`backends.<name>` in `bridge.yaml`; the keys, their kinds and which
/// are required are `WuKongAdapter.descriptor.settings`, checked before this is decoded). Each default
/// is written once, on its field (docs/adapters/wukong.md, "Configuration").
public struct WuKongSettings: Decodable, Sendable, Equatable {
    /// WuKongIM's HTTP API (`httpAddr`, default port 5001).
    public var imURL: String
    /// The business server (TangSengDaoDao-style `/v1/…`), when it is not `imURL` (`businessBaseURL`).
    public var businessURL: String?
    /// WuKongIM's `token` header, when its API requires one.
    public var managerToken: String?
    /// The shared webhook secret (query `secret` or header `X-IMBridge-Secret`); nil accepts all, which
    /// only `allowUnsignedCallbacks` allows.
    public var webhookSecret: String?
    public var allowUnsignedCallbacks = false
    /// Seeds derived session tokens.
    public var tokenSecret = "imbridge"
    /// The uid whose session reads group extras and reactions.
    public var serviceUID = "imbridge"
    /// The per-request timeout (used in whole seconds, rounded up).
    public var timeout: Duration = .seconds(15)
    /// WuKong type number → custom content-type name (added to 11/12/13).
    public var customTypes: [Int: String] = [:]
    /// Explicit business-server session tokens per uid (win over derived ones).
    public var sessionTokens: [String: String] = [:]

    /// The business server's base URL.
    public var businessBaseURL: String { businessURL ?? imURL }

    enum CodingKeys: String, CodingKey {
        case imURL = "im_url", businessURL = "business_url", managerToken = "manager_token", webhookSecret = "webhook_secret"
        case allowUnsignedCallbacks = "allow_unsigned_callbacks", tokenSecret = "token_secret", serviceUID = "service_uid"
        case timeout, customTypes = "custom_types", sessionTokens = "session_tokens"
    }

    public init(imURL: String) { self.imURL = imURL }

    public init(from decoder: any Decoder) throws {
        let settings = try decoder.container(keyedBy: CodingKeys.self)
        imURL = try settings.decode(String.self, forKey: .imURL)
        try settings.read(&businessURL, .businessURL)
        try settings.read(&managerToken, .managerToken)
        try settings.read(&webhookSecret, .webhookSecret)
        try settings.read(&allowUnsignedCallbacks, .allowUnsignedCallbacks)
        try settings.read(&tokenSecret, .tokenSecret)
        try settings.read(&serviceUID, .serviceUID)
        try settings.read(&timeout, .timeout)
        try settings.read(&sessionTokens, .sessionTokens)
        var types: [String: String] = [:]
        try settings.read(&types, .customTypes)
        for (number, name) in types {
            guard let type = Int(number), type > 0 else {
                throw SettingRefusal(CodingKeys.customTypes.rawValue, "is not a WuKong type number", quoting: number)
            }
            customTypes[type] = name
        }
    }

    /// The settings of a `bridge.yaml` backend entry, with what the schema cannot judge alone refused.
    /// `receivesCallbacks: false` (`imbridge migrate`): no webhook listens, so no secret is asked for.
    public init(_ settings: AdapterSettings, receivesCallbacks: Bool = true) throws {
        self = try settings.decode(Self.self)
        // WuKongIM signs nothing: without the shared secret the webhook accepts anyone's requests. That
        // is refused unless the operator says so in so many words (docs/adapters/wukong.md).
        if receivesCallbacks && webhookSecret == nil && !allowUnsignedCallbacks {
            throw settings.refuse(CodingKeys.webhookSecret.rawValue, "is required: without it the webhook accepts anyone's requests "
                                  + "(set allow_unsigned_callbacks: true to accept that, e.g. on a private network)")
        }
    }
}
