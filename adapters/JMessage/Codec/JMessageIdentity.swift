import IMCore

/// How JMessage's names become neutral ids.
///
/// - A user of the configured app is its bare `username`.
/// - A user of another app (cross-app, `from_appkey`/`target_appkey` ≠ ours) is `username#appKey`.
///   `#` is not allowed in JMessage usernames (letters, digits, `_ . - @` only), so the form is
///   unambiguous; `@` would not be, since usernames may contain it. appKeys compare case-insensitively
///   (appKeys are case-insensitive), and an empty appKey means "ours".
/// - A group is its `gid` as a decimal string; a chatroom its room id.
public struct JMessageIdentity: Sendable, Hashable {
    public static let appKeySeparator: Character = "#"

    public var appKey: String
    /// The admin account REST sends as (`from_type: "admin"`).
    public var admin: String

    public init(appKey: String, admin: String) {
        self.appKey = appKey
        self.admin = admin
    }

    public var adminUser: UserID { UserID(admin) }

    /// Whether `appKey` names our own app (nil and "" do).
    public func isOwnApp(_ appKey: String?) -> Bool {
        guard let appKey, !appKey.isEmpty else { return true }
        return appKey.caseInsensitiveCompare(self.appKey) == .orderedSame
    }

    public func userID(username: String, appKey: String?) -> UserID {
        isOwnApp(appKey) ? UserID(username) : UserID("\(username)\(Self.appKeySeparator)\(appKey!)")
    }

    /// The vendor's (username, appKey) for a neutral user; appKey is nil for our own app.
    public func vendorUser(_ user: UserID) -> (username: String, appKey: String?) {
        let raw = user.rawValue
        guard let mark = raw.lastIndex(of: Self.appKeySeparator) else { return (raw, nil) }
        let appKey = String(raw[raw.index(after: mark)...])
        return (String(raw[..<mark]), isOwnApp(appKey) ? nil : appKey)
    }
}
