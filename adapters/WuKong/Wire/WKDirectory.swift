import Foundation
import IMCore
import IMHTTP

/// The business server's user and group routes (TangSengDaoDao's, docs/adapters/wukong.md §6): WuKongIM
/// keeps channels, subscribers and tokens only; names, avatars and notices live here. Every route but
/// the avatars takes the `token` session header; errors are HTTP 400 `{"msg","status":400}`, an unknown
/// user or group answering a `msg` ending in "不存在！" (does not exist).
public enum WKDirectoryPaths {
    public static let currentUser = "/v1/user/current"
    public static let groupCreate = "/v1/group/create"
    public static func user(_ uid: String) -> String { "/v1/users/\(segment(uid))" }
    public static func userAvatar(_ uid: String) -> String { "/v1/users/\(segment(uid))/avatar" }
    public static func group(_ groupNo: String) -> String { "/v1/groups/\(segment(groupNo))" }
    public static func groupDetail(_ groupNo: String) -> String { group(groupNo) + "/detail" }
    public static func groupMembers(_ groupNo: String) -> String { group(groupNo) + "/members" }
    public static func groupAvatar(_ groupNo: String) -> String { group(groupNo) + "/avatar" }
    public static func groupDisband(_ groupNo: String) -> String { group(groupNo) + "/disband" }

    /// The fields `PUT /v1/user/current` accepts (a user's self-update).
    public static let userFields: Set<String> = ["sex", "short_no", "name", "search_by_phone", "search_by_short", "new_msg_notice",
                                                 "msg_show_detail", "voice_on", "shock_on", "msg_expire_second"]
    /// The fields `PUT /v1/groups/{group_no}` accepts; one per call (the server announces only one change).
    public static let groupFields: Set<String> = ["name", "notice", "invite"]
    /// Member roles: 1 creator (the owner), 2 manager, 0 member.
    public static let creatorRole: Int64 = 1
    public static let managerRole: Int64 = 2
    /// `GET /v1/groups/{group_no}/members` page size (the server's default).
    public static let membersPageSize = 100

    /// A path segment with everything but unreserved characters percent-encoded.
    static func segment(_ text: String) -> String {
        text.addingPercentEncoding(withAllowedCharacters: CharacterSet(charactersIn:
            "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")) ?? text
    }

    /// Whether a refusal says the user or group does not exist (`用户不存在！`, `群不存在！`).
    public static func isMissing(_ error: IMError) -> Bool {
        error.code == .notFound || (error.code == .invalidArgument && (error.vendorMessage ?? "").hasSuffix("不存在！"))
    }
}

/// `POST /v1/group/create`: the caller (session) is the creator and is added to `members`.
public struct WKGroupCreateRequest: Codable, Hashable, Sendable {
    public var name: String
    public var members: [String]
    public init(name: String, members: [String]) {
        self.name = name
        self.members = members
    }
}

/// `POST /v1/groups/{group_no}/members`.
public struct WKGroupMembersRequest: Codable, Hashable, Sendable {
    public var members: [String]
    public init(members: [String]) { self.members = members }
}

extension WuKongClient {
    /// A business-server call with any method; `body` nil sends none. Returns the checked body.
    public func business(_ method: String, _ path: String, session: String, query: [(String, String)] = [],
                         json body: Data? = nil) async throws -> Data {
        var url = businessURL + path
        if !query.isEmpty { url += "?" + FormBody(items: query.map { (name: $0.0, value: $0.1) }).encoded }
        var headers = [(name: "token", value: session)]
        if body != nil { headers.append((name: "Content-Type", value: "application/json")) }
        return try await call(OutboundRequest(method: method, url: url, headers: headers, body: body.map { Array($0) }))
    }
}
