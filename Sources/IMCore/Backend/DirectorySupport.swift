/// Which calls of the user and group directory (`UserDirectory`, `GroupDirectory`, `GroupMemberRemoving`)
/// a vendor's adapter serves, and what a group read back holds; the calls it lacks it refuses with
/// `unsupported` (docs/adapters/<vendor>.md, "Facts on the preset"). The testing kit's memory world
/// follows them.
public struct DirectorySupport: Hashable, Sendable, Codable {
    /// `allUsers` (JMessage lists its users; WuKong, RongCloud and NIM have no user listing the adapter calls).
    public var listsAllUsers: Bool
    /// `removeMembers` (RongCloud `/group/quit.json`, NIM `/team/kick.action`, JMessage and WuKong through their
    /// member routes: every shipped adapter serves it).
    public var removesMembers: Bool
    /// `groups(of:)` (WuKong's adapter has no call for a user's groups).
    public var listsGroupsOfUser: Bool
    /// Whether a group read back names its owner (RongCloud's groups have none).
    public var keepsGroupOwner: Bool

    public init(listsAllUsers: Bool = true, removesMembers: Bool = true, listsGroupsOfUser: Bool = true, keepsGroupOwner: Bool = true) {
        self.listsAllUsers = listsAllUsers
        self.removesMembers = removesMembers
        self.listsGroupsOfUser = listsGroupsOfUser
        self.keepsGroupOwner = keepsGroupOwner
    }

    /// Every call, owners kept: capabilities made without a preset.
    public static let all = DirectorySupport()
}
