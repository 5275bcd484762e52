import IMAdapterKit
import IMCore

extension WuKongBackend.Configuration {
    /// The configuration of a `bridge.yaml` backend entry. The keys, their kinds and which are
    /// required are `WuKongAdapter.descriptor.settings` (checked before this runs); this reads them
    /// and refuses what the schema cannot judge alone (a `custom_types` key that is not a WuKong type
    /// number, a missing `webhook_secret`). Defaults: `business_url` = `im_url`, `token_secret` and `service_uid` `imbridge`,
    /// `timeout` 15s.
    /// `receivesCallbacks: false` (`imbridge migrate`): no webhook listens, so no secret is asked for.
    public init(_ settings: AdapterSettings, receivesCallbacks: Bool = true) throws {
        var customTypes: [Int: String] = [:]
        for (number, name) in settings.pairs("custom_types") {
            guard let type = Int(number), type > 0 else {
                throw settings.refuse("custom_types", "\(settings.quoted("custom_types", number)) is not a WuKong type number")
            }
            customTypes[type] = name
        }
        // WuKongIM signs nothing: without the shared secret the webhook accepts anyone's requests. That
        // is refused unless the operator says so in so many words (docs/adapters/wukong.md).
        if receivesCallbacks && settings["webhook_secret"] == nil && !settings.flag("allow_unsigned_callbacks", default: false) {
            throw settings.refuse("webhook_secret", "is required: without it the webhook accepts anyone's requests "
                                  + "(set allow_unsigned_callbacks: true to accept that, e.g. on a private network)")
        }
        self.init(id: settings.backend, imURL: try settings.required("im_url"), businessURL: settings["business_url"],
                  managerToken: settings["manager_token"], webhookSecret: settings["webhook_secret"],
                  tokenSecret: settings.string("token_secret", default: "imbridge"),
                  sessionTokens: Dictionary(settings.pairs("session_tokens"), uniquingKeysWith: { _, last in last }),
                  serviceUID: settings.string("service_uid", default: "imbridge"), customTypes: customTypes,
                  timeoutSeconds: settings.seconds("timeout", default: 15))
    }
}
