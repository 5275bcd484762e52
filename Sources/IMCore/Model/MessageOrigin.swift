extension OutgoingMessage {
    /// `vendorExtras` key of a copied message's origin, a JSON object
    /// `{"backend", "id", "sender", "sent_at" (ms), "expansion" (optional key/values)}` set by migration.
    /// Adapters with an extension field write it there unchanged (WuKong payload, RongCloud content JSON,
    /// NIM `ext`, JMessage `extras`, each under this key), so the original time, sender and id stay with a
    /// copy on a target that cannot set them.
    public static let originKey = "imbridge_origin"

    /// `vendorExtras` key of content fields that a vendor's own message type has and the neutral model
    /// does not (the type number itself, a field no other vendor has): a JSON object
    /// `{"<adapter name>": {"type": …, "body": {…}}}`. The source vendor's codec sets it; every other
    /// adapter writes it unchanged into its message (RongCloud content JSON, NIM body, JMessage
    /// `extras`, each under this key) and reads it back into `vendorExtras` under the same key, so a copy
    /// that returns to the source vendor (relayed back, migrated back) is written as the original type
    /// with every field. Used for the WuKongIM custom-message guide's app types (docs/mappings.md, "Carried fields").
    public static let carriedKey = "imbridge_carried"
}
