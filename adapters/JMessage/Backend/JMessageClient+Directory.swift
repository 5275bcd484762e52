import Foundation
import IMCore
import IMHTTP

/// The user and group calls of the directory (docs/adapters/jmessage.md, "Users and groups"). Bodies are
/// built as `JSONValue` objects so that only the fields given are sent.
extension JMessageClient {
    /// The most users or groups one listing page holds (`count` ≤ 500).
    public static let pageSize = 500

    /// `POST /v1/users/` with one user object (username, password and profile fields): true when created,
    /// false when the user existed (899001). Any other per-item error is thrown.
    public func registerUser(_ object: [String: JSONValue]) async throws -> Bool {
        let results = try decode([JMUserRegistrationResult].self, try await call("POST", api("/v1/users/"), json: JSONValue.array([.object(object)])))
        if let error = results.first?.error {
            if error.code == JMessageErrors.userExists.code { return false }
            throw JMessageErrors.error(status: JMessageErrors.table.status(for: error.code), code: error.code, message: error.message,
                                          retryAfterMs: nil)
        }
        return true
    }

    /// `GET /v1/users/{username}`; nil when the user does not exist (899002).
    public func user(_ username: String) async throws -> JSONValue? {
        do {
            return try decode(JSONValue.self, try await call("GET", api("/v1/users/\(escape(username))"), body: nil))
        } catch let error as IMError where error.vendorCode == String(JMessageErrors.userNotFound.code) {
            return nil
        }
    }

    /// `PUT /v1/users/{username}` with the fields to change → 204.
    public func updateUser(_ username: String, fields: [String: JSONValue]) async throws {
        _ = try await call("PUT", api("/v1/users/\(escape(username))"), json: JSONValue.object(fields))
    }

    /// One page of `GET /v1/users/?start=&count=`: the usernames and the total.
    public func userPage(start: Int, count: Int = pageSize) async throws -> (total: Int, usernames: [String]) {
        let page = try decode(JSONValue.self, try await call("GET", api("/v1/users/?start=\(start)&count=\(count)"), body: nil))
        return (Int(page["total"]?.int64Value ?? 0), (page["users"]?.arrayValue ?? []).compactMap { $0["username"]?.stringValue })
    }

    /// `POST /v1/groups/` with the given body → the `gid`.
    public func createGroup(_ body: [String: JSONValue]) async throws -> String {
        let created = try decode(JSONValue.self, try await call("POST", api("/v1/groups/"), json: JSONValue.object(body)))
        guard let gid = created["gid"]?.stringValue, !gid.isEmpty else {
            throw IMError(.malformedPayload, "jmessage answered the group creation without a gid")
        }
        return gid
    }

    /// `GET /v1/groups/{gid}`; nil when the group does not exist (899006).
    public func group(gid: String) async throws -> JSONValue? {
        do {
            return try decode(JSONValue.self, try await call("GET", api("/v1/groups/\(escape(gid))"), body: nil))
        } catch let error as IMError where error.vendorCode == String(JMessageErrors.groupNotFound.code) {
            return nil
        }
    }

    /// `PUT /v1/groups/{gid}` with any of `name`, `avatar`, `desc` → 204.
    public func updateGroup(gid: String, fields: [String: JSONValue]) async throws {
        _ = try await call("PUT", api("/v1/groups/\(escape(gid))"), json: JSONValue.object(fields))
    }

    /// `DELETE /v1/groups/{gid}` → 204; false when the group does not exist (899006).
    @discardableResult
    public func deleteGroup(gid: String) async throws -> Bool {
        do {
            _ = try await call("DELETE", api("/v1/groups/\(escape(gid))"), body: nil)
            return true
        } catch let error as IMError where error.vendorCode == String(JMessageErrors.groupNotFound.code) {
            return false
        }
    }

    /// `GET /v1/groups/{gid}/members/`: the member objects (`flag` 1 = owner).
    public func groupMembers(gid: String) async throws -> [JSONValue] {
        try decode([JSONValue].self, try await call("GET", api("/v1/groups/\(escape(gid))/members/"), body: nil))
    }

    /// One page of `GET /v1/groups/?start=&count=`: the gids and the total.
    public func groupPage(start: Int, count: Int = pageSize) async throws -> (total: Int, gids: [String]) {
        let page = try decode(JSONValue.self, try await call("GET", api("/v1/groups/?start=\(start)&count=\(count)"), body: nil))
        return (Int(page["total"]?.int64Value ?? 0), (page["groups"]?.arrayValue ?? []).compactMap { $0["gid"]?.stringValue })
    }

    /// `GET /v1/users/{username}/groups/`: the gids of the user's groups.
    public func groupsOfUser(_ username: String) async throws -> [String] {
        try decode([JSONValue].self, try await call("GET", api("/v1/users/\(escape(username))/groups/"), body: nil))
            .compactMap { $0["gid"]?.stringValue }
    }
}
