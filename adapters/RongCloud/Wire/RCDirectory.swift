/// The user and group endpoints of the classic Server API (docs/adapters/rongcloud.md §7): all signed
/// form POSTs, answered with the usual envelope.
extension RCPaths {
    public static let userInfo = "/user/info.json"
    public static let userRefresh = "/user/refresh.json"
    public static let groupCreate = "/group/create.json"
    public static let groupJoin = "/group/join.json"
    public static let groupRefresh = "/group/refresh.json"
    public static let groupQuit = "/group/quit.json"
    public static let groupMembers = "/group/user/query.json"
    public static let groupDismiss = "/group/dismiss.json"
    public static let userGroups = "/user/group/query.json"

    /// The group endpoints, in the order the docs list them.
    public static let groupPaths = [groupCreate, groupJoin, groupQuit, groupRefresh, groupMembers, userGroups, groupDismiss]
}

/// Limits of the group endpoints: ≤ 1000 `userId` per create/join/quit call, ≤ 3000 members per group,
/// ≤ 1000 groups per `/user/group/query.json` page (default 50).
public enum RCGroupLimits {
    public static let usersPerCall = 1000
    public static let membersPerGroup = 3000
    public static let maxPageSize = 1000
    public static let defaultPageSize = 50
}

/// Limits of users and ids (docs/adapters/rongcloud.md, "Profiles in live relay" and "Publish refusals"):
/// user and group ids ≤ 64 bytes; `/user/getToken.json` and `/user/refresh.json` take a `name` of at most 64
/// characters and a `portraitUri` of at most 1024 bytes.
public enum RCUserLimits {
    public static let maxIdBytes = 64
    public static let maxNameLength = 64
    public static let maxPortraitBytes = 1024
}

/// `/user/info.json`: `{"code":200,"userName","userPortrait","createTime":"2016-05-24 10:38:19"}`.
public struct RCUserInfoResponse: Codable, Hashable, Sendable {
    public var code = 200
    public var userName: String?
    public var userPortrait: String?
    /// `yyyy-MM-dd HH:mm:ss` (Beijing time at the CN data centre).
    public var createTime: String?
    public init(userName: String?, userPortrait: String?, createTime: String?) {
        self.userName = userName
        self.userPortrait = userPortrait
        self.createTime = createTime
    }
}

/// `/group/user/query.json`: `{"code":200,"users":[{"id":"10001"},…]}`.
public struct RCGroupMembersResponse: Codable, Hashable, Sendable {
    public struct Member: Codable, Hashable, Sendable {
        public var id: String
        public init(id: String) { self.id = id }
    }
    public var code = 200
    public var users: [Member]
    public init(users: [Member]) { self.users = users }
}

/// `/user/group/query.json`: `{"code":200,"groups":[{"id":"g1","name":"…"}]}`.
public struct RCUserGroupsResponse: Codable, Hashable, Sendable {
    public struct Group: Codable, Hashable, Sendable {
        public var id: String
        public var name: String?
        public init(id: String, name: String?) {
            self.id = id
            self.name = name
        }
    }
    public var code = 200
    public var groups: [Group]
    public init(groups: [Group]) { self.groups = groups }
}
