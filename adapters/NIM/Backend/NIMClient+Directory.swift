import Foundation
import IMCore

/// The account and team calls of the directory (docs/adapters/nim.md §1 "Users and teams"). Lists go on
/// the wire as JSON-array strings inside the form, as every NIM list parameter does.
extension NIMClient {
    /// `/user/create.action` with profile fields (`name`, `icon`, `sign`, `email`, `birth`, `mobile`,
    /// `gender`, `ex`); false when the account already exists (414 `already register`).
    public func createUser(accid: String, fields: [(String, String)]) async throws -> Bool {
        do {
            _ = try await call("/user/create.action", [("accid", accid)] + fields)
            return true
        } catch let error as IMError where error.code == .conflict {
            return false
        }
    }

    /// `/user/updateUinfo.action`: sets the given profile fields of an existing account.
    public func updateUserInfo(accid: String, fields: [(String, String)]) async throws {
        _ = try await call("/user/updateUinfo.action", [("accid", accid)] + fields)
    }

    /// `/user/getUinfos.action`, 200 accids per call: the `uinfos` of those that exist.
    public func userInfos(_ accids: [String]) async throws -> [JSONValue] {
        var infos: [JSONValue] = []
        for chunk in accids.nimChunks(of: 200) {
            let envelope = try await call("/user/getUinfos.action", [("accids", Self.jsonList(chunk))])
            infos += envelope["uinfos"]?.arrayValue ?? []
        }
        return infos
    }

    /// `/team/create.action` → the new `tid` and the accids NIM did not add (`faccid.accid`).
    public func createTeam(_ fields: [(String, String)]) async throws -> (tid: String, failed: [String]) {
        let envelope = try await call("/team/create.action", fields)
        guard let tid = NIMLenient.string(envelope["tid"]), !tid.isEmpty else {
            throw IMError(.vendorError, "team/create answered 200 without tid")
        }
        return (tid, Self.failedAccids(envelope))
    }

    /// `/team/add.action` (≤ 200 members per call, `magree` 0: they join at once) → the accids not added.
    public func addTeamMembers(tid: String, owner: String, members: [String], msg: String) async throws -> [String] {
        let envelope = try await call("/team/add.action", [("tid", tid), ("owner", owner), ("members", Self.jsonList(members)),
                                                           ("magree", "0"), ("msg", msg)])
        return Self.failedAccids(envelope)
    }

    /// `/team/update.action` (`tid`, `owner` and the fields to change); `{"code":200}` only.
    public func updateTeam(_ fields: [(String, String)]) async throws {
        _ = try await call("/team/update.action", fields)
    }

    /// `/team/kick.action` (`tid`, `owner`, `members` as a JSON array of ≤ 200 accids); `{"code":200}` only.
    public func kickTeamMembers(tid: String, owner: String, members: [String]) async throws {
        _ = try await call("/team/kick.action", [("tid", tid), ("owner", owner), ("members", Self.jsonList(members))])
    }

    /// `/team/remove.action` (`tid`, `owner`): dismisses the team; `{"code":200}` only.
    public func removeTeam(tid: String, owner: String) async throws {
        _ = try await call("/team/remove.action", [("tid", tid), ("owner", owner)])
    }

    /// `/team/query.action` with `ignoreInvalid=true`: the `tinfos` of the teams that exist (with member
    /// lists when `withMembers`).
    public func queryTeams(_ tids: [String], withMembers: Bool) async throws -> [JSONValue] {
        let envelope = try await call("/team/query.action", [("tids", Self.jsonList(tids)), ("ope", withMembers ? "1" : "0"),
                                                             ("ignoreInvalid", "true")])
        return envelope["tinfos"]?.arrayValue ?? []
    }

    /// `/team/joinTeams.action` → the `infos` of the teams `accid` is in.
    public func joinedTeams(accid: String) async throws -> [JSONValue] {
        let envelope = try await call("/team/joinTeams.action", [("accid", accid)])
        return envelope["infos"]?.arrayValue ?? []
    }

    static func jsonList(_ items: [String]) -> String { JSONValue.array(items.map(JSONValue.string)).jsonString() }

    static func failedAccids(_ envelope: [String: JSONValue]) -> [String] {
        envelope["faccid"]?["accid"]?.arrayValue?.compactMap { NIMLenient.string($0) } ?? []
    }
}

extension Array {
    /// Consecutive slices of at most `size` elements (NIM caps list parameters at 200).
    func nimChunks(of size: Int) -> [[Element]] {
        stride(from: 0, to: count, by: size).map { Array(self[$0..<Swift.min($0 + size, count)]) }
    }
}
