import IMAdapterKit
import IMCore

/// The `wukong` adapter as the registry lists it. `settings` is the one list of the keys a
/// `bridge.yaml` entry may carry (decoded into `WuKongSettings`).
public enum WuKongAdapter {
    public static let descriptor = AdapterDescriptor(
        name: "wukong", displayName: "WuKongIM", capabilities: .wukong,
        settings: [
            SettingSpec("im_url", .url(list: false), required: true, help: "WuKongIM's HTTP API, e.g. http://wukongim:5001"),
            SettingSpec("business_url", .url(list: false), help: "the app's business server (extras, reactions), when separate"),
            SettingSpec("manager_token", .secret, help: "WuKongIM's manager token, when its API requires one"),
            SettingSpec("webhook_secret", .secret, help: "shared secret the webhook must carry (query `secret` or X-IMBridge-Secret)"),
            SettingSpec("allow_unsigned_callbacks", .flag,
                        help: "true accepts a webhook without webhook_secret (anyone reaching the bridge can inject messages)"),
            SettingSpec("token_secret", .secret, help: "secret puppet session tokens are derived from"),
            SettingSpec("service_uid", help: "the bridge's own user (reads group extras)"),
            .timeout(default: WuKongSettings(imURL: "").timeout),
            SettingSpec("custom_types", .pairs, help: "opaque app types, a map of type number to name (101: order_card)"),
            SettingSpec("session_tokens", .pairs, help: "known user sessions, a map of uid to token"),
        ],
        contentCodec: { WuKongContentCodec(registry: $0, mapping: $1) },
        errors: WuKongErrors.table,
        make: { settings, context in
            WuKongBackend(id: settings.backend, settings: try WuKongSettings(settings, receivesCallbacks: context.receivesCallbacks),
                          registry: context.registry, mapping: context.mapping, secrets: context.secrets)
        })
}
