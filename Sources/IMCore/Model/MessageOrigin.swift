extension OutgoingMessage {
    /// `vendorExtras` key of a copied message's origin, a JSON object
    /// `{"backend", "id", "sender", "sent_at" (ms), "expansion" (optional key/values)}` set by migration.
    /// Adapters with an extension field write it there unchanged (WuKong payload, RongCloud content JSON,
    /// NIM `ext`, JMessage `extras`, each under this key), so the original time, sender and id stay with a
    /// copy on a target that cannot set them.
    public static let originKey = "imbridge_origin"
}
