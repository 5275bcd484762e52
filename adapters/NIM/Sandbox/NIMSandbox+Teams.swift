import IMCore
import IMHTTP
import IMSandbox
import NIM

/// An advanced team (高级群) created through `/team/create.action`; the sandbox assigns `tid`.
/// `members` are the ordinary members in the order they joined (the owner is kept apart, as
/// `/team/query.action` lists it apart; the sandbox has no managers, so `admins` is always empty).
struct NIMStoredTeam: Sendable {
    var tid: Int64
    var tname: String
    var owner: String
    var members: [String]
    /// Accids that were members and are not now (kicked, or left out of a seeded member list): team
    /// history with `checkTeamValid=false` still reads as them.
    var formerMembers: Set<String> = []
    var icon: String?
    var announcement: String?
    var intro: String?
    var custom: String?
    var joinmode: Int
    var beinvitemode: Int
    var invitemode: Int
    var uptinfomode: Int
    var upcustommode: Int
    var maxusers: Int
    var createtime: Int64
    var updatetime: Int64

    var size: Int { members.count + 1 }

    func contains(_ accid: String) -> Bool { accid == owner || members.contains(accid) }

    /// One `tinfos` entry of `/team/query.action`: unset text fields omitted, `members`/`admins` only with
    /// `ope=1`.
    func tinfo(withMembers: Bool) -> JSONValue {
        var object: [String: JSONValue] = [
            "tid": .int(tid), "tname": .string(tname), "owner": .string(owner), "maxusers": .int(Int64(maxusers)),
            "size": .int(Int64(size)), "joinmode": .int(Int64(joinmode)), "beinvitemode": .int(Int64(beinvitemode)),
            "invitemode": .int(Int64(invitemode)), "uptinfomode": .int(Int64(uptinfomode)),
            "upcustommode": .int(Int64(upcustommode)), "muteType": 0, "mute": false,
            "createtime": .int(createtime), "updatetime": .int(updatetime),
        ]
        for (key, value) in [("icon", icon), ("announcement", announcement), ("intro", intro), ("custom", custom)] {
            if let value { object[key] = .string(value) }
        }
        if withMembers {
            object["members"] = .array(members.map(JSONValue.string))
            object["admins"] = .array([])
        }
        return .object(object)
    }

    /// One `infos` entry of `/team/joinTeams.action`.
    var joinInfo: JSONValue {
        var object: [String: JSONValue] = ["tid": .int(tid), "tname": .string(tname), "owner": .string(owner),
                                           "maxusers": .int(Int64(maxusers)), "size": .int(Int64(size))]
        if let custom { object["custom"] = .string(custom) }
        if let icon { object["icon"] = .string(icon) }
        return .object(object)
    }
}

/// Advanced teams (docs/adapters/nim.md §4): `/team/create.action`, `/team/add.action`,
/// `/team/update.action`, `/team/query.action`, `/team/joinTeams.action`, with the vendor's field limits
/// (414 over them) and its team codes: 801 team full, 802 not the owner, 803 no such team, 804 not in
/// the team (a team message's sender must be in the team: docs/adapters/nim.md, "Conversations").
extension NIMSandbox {
    /// Why a team message (or team notification) from `from` into `tid` is refused; nil when it may go:
    /// 803 when no team has that tid, 804 when `from` is neither its owner nor a member.
    static func teamRefusal(from: String, tid: String, in state: NIMSandboxState) -> NIMSandboxRefusal? {
        guard let number = Int64(tid), let team = state.teams[number] else { return NIMSandboxRefusal(NIMErrors.noSuchTeam, "team not exist") }
        guard team.contains(from) else { return NIMSandboxRefusal(NIMErrors.notInTeam, "not in team") }
        return nil
    }

    /// `POST /_sandbox/groups` (test-only control, `SandboxGroupSeed`): the team of that tid gets exactly
    /// this owner and these members (accids lower-cased, registered or not); a new one takes the
    /// defaults of `/team/create.action`, and later tids are assigned above it.
    public func seedGroup(_ seed: SandboxGroupSeed) async throws(SandboxGroupSeed.SeedError) {
        guard let tid = Int64(seed.id), tid > 0 else { throw .badRequest("a NIM tid is a positive number, not '\(seed.id)'") }
        let owner = seed.owner.lowercased()
        let members = seed.everyone.map { $0.lowercased() }.filter { $0 != owner }
        state.withLock { state in
            let now = clock.nowMs()
            var team = state.teams[tid] ?? NIMStoredTeam(
                tid: tid, tname: seed.name ?? seed.id, owner: owner, members: [], joinmode: 0, beinvitemode: 0, invitemode: 0,
                uptinfomode: 0, upcustommode: 0, maxusers: Self.teamMaxUsers, createtime: now, updatetime: now)
            if state.teams[tid] == nil { state.teamOrder.append(tid) }
            team.formerMembers.formUnion(team.members.filter { !members.contains($0) && $0 != owner })
            if team.owner != owner, !team.owner.isEmpty, !members.contains(team.owner) { team.formerMembers.insert(team.owner) }
            team.owner = owner
            team.members = members
            if let name = seed.name { team.tname = name }
            team.updatetime = now
            state.teams[tid] = team
            state.nextTid = max(state.nextTid, tid + 1)
        }
    }

    /// Text fields of create/update with their documented limits.
    static let teamTextLimits: [(field: String, max: Int)] = [
        ("tname", 64), ("announcement", 1024), ("intro", 512), ("custom", 1024), ("icon", 1024),
    ]
    /// `/team/add.action`'s `attach` (an extension of the invitation): at most 512 characters
    /// (docs/adapters/nim.md, "Sandbox refusals").
    static let teamAddAttachLimit = 512
    /// Mode fields and the values each allows.
    static let teamModes: [(field: String, allowed: ClosedRange<Int64>)] = [
        ("joinmode", 0...2), ("beinvitemode", 0...1), ("invitemode", 0...1), ("uptinfomode", 0...1), ("upcustommode", 0...1),
    ]
    /// The app's team size limit (the vendor's default: 200, owner included).
    static let teamMaxUsers = 200

    static func teamFieldRefusal(_ form: NIMForm) -> HTTPResponseData? {
        for (field, max) in teamTextLimits {
            if let value = form[field], value.count > max { return fail(NIMErrors.parameter, "\(field) is longer than \(max)") }
        }
        for (field, allowed) in teamModes {
            if let text = form[field], !text.isEmpty, !(Int64(text).map(allowed.contains) ?? false) {
                return fail(NIMErrors.parameter, "\(field) must be \(allowed.lowerBound)…\(allowed.upperBound)")
            }
        }
        if let text = form["teamMemberLimit"], !text.isEmpty,
           !(Int(text).map { (2...teamMaxUsers).contains($0) } ?? false) {
            return fail(NIMErrors.parameter, "teamMemberLimit must be 2…\(teamMaxUsers)")
        }
        return nil
    }

    /// Applies the optional fields present in `form` (create and update); "" clears a text field.
    static func applyTeamFields(_ form: NIMForm, to team: inout NIMStoredTeam) {
        func text(_ field: String) -> String?? { form[field].map { $0.isEmpty ? nil : $0 } }
        if let tname = form["tname"], !tname.isEmpty { team.tname = tname }
        if let icon = text("icon") { team.icon = icon }
        if let announcement = text("announcement") { team.announcement = announcement }
        if let intro = text("intro") { team.intro = intro }
        if let custom = text("custom") { team.custom = custom }
        if let value = form.int("joinmode") { team.joinmode = Int(value) }
        if let value = form.int("beinvitemode") { team.beinvitemode = Int(value) }
        if let value = form.int("invitemode") { team.invitemode = Int(value) }
        if let value = form.int("uptinfomode") { team.uptinfomode = Int(value) }
        if let value = form.int("upcustommode") { team.upcustommode = Int(value) }
        if let value = form.int("teamMemberLimit") { team.maxusers = Int(value) }
    }

    /// `members` as a JSON array of accids (lower-cased), or nil when it is not one.
    static func accidList(_ form: NIMForm, _ field: String) -> [String]? {
        stringList(form[field]).map { $0.map { $0.lowercased() } }
    }

    /// `/team/create.action`: `tname`, `owner`, `members` (JSON array, owner not listed, members + owner ≤
    /// 200), `msg` ≤ 150, `magree` 0/1 and `joinmode` 0/1/2 required. Answers `{"code":200,"tid":N}`;
    /// members that are not registered are not added and come back in `faccid`.
    func createTeam(_ form: NIMForm) -> HTTPResponseData {
        guard let tname = form["tname"], !tname.isEmpty else { return Self.fail(NIMErrors.parameter, "tname is required") }
        guard let owner = form["owner"]?.lowercased(), !owner.isEmpty else { return Self.fail(NIMErrors.parameter, "owner is required") }
        guard let requested = Self.accidList(form, "members") else { return Self.fail(NIMErrors.parameter, "members must be a JSON array of accids") }
        guard let msg = form["msg"], msg.count <= 150 else { return Self.fail(NIMErrors.parameter, "msg is required, ≤150 chars") }
        guard let magree = form["magree"], ["0", "1"].contains(magree) else { return Self.fail(NIMErrors.parameter, "magree must be 0 or 1") }
        guard let joinmode = form["joinmode"], ["0", "1", "2"].contains(joinmode) else { return Self.fail(NIMErrors.parameter, "joinmode must be 0, 1 or 2") }
        if let refusal = Self.teamFieldRefusal(form) { return refusal }
        var members: [String] = []
        for accid in requested where accid != owner && !members.contains(accid) { members.append(accid) }
        let limit = form.int("teamMemberLimit").map { Int($0) } ?? Self.teamMaxUsers
        guard members.count + 1 <= limit else { return Self.fail(NIMErrors.teamFull, "team member limit \(limit) exceeded") }
        return state.withLock { state in
            guard state.users[owner] != nil else { return Self.fail(NIMErrors.parameter, "owner not register") }
            let failed = members.filter { state.users[$0] == nil }
            let tid = state.nextTid
            state.nextTid += 1
            let now = clock.nowMs()
            var team = NIMStoredTeam(tid: tid, tname: tname, owner: owner, members: members.filter { state.users[$0] != nil },
                                     joinmode: Int(joinmode) ?? 0, beinvitemode: 0, invitemode: 0, uptinfomode: 0, upcustommode: 0,
                                     maxusers: limit, createtime: now, updatetime: now)
            Self.applyTeamFields(form, to: &team)
            state.teams[tid] = team
            state.teamOrder.append(tid)
            var payload: [String: JSONValue] = ["tid": .int(tid)]
            if !failed.isEmpty {
                payload["faccid"] = ["accid": .array(failed.map(JSONValue.string)), "msg": "not register"]
            }
            return Self.ok(payload)
        }
    }

    /// `/team/add.action`: `tid`, `owner` (must be the team's owner: 802), `members` (JSON array ≤ 200),
    /// `magree`, `msg`. Members already in the team are skipped; unregistered ones come back in `faccid`;
    /// going over the team's `maxusers` is 801 and adds nobody.
    func addTeamMembers(_ form: NIMForm) -> HTTPResponseData {
        guard let tid = form.int("tid") else { return Self.fail(NIMErrors.parameter, "tid is required") }
        guard let owner = form["owner"]?.lowercased(), !owner.isEmpty else { return Self.fail(NIMErrors.parameter, "owner is required") }
        guard let requested = Self.accidList(form, "members"), !requested.isEmpty else {
            return Self.fail(NIMErrors.parameter, "members must be a JSON array of accids")
        }
        guard requested.count <= 200 else { return Self.fail(NIMErrors.parameter, "members allows at most 200 per call") }
        guard let msg = form["msg"], msg.count <= 150 else { return Self.fail(NIMErrors.parameter, "msg is required, ≤150 chars") }
        guard let magree = form["magree"], ["0", "1"].contains(magree) else { return Self.fail(NIMErrors.parameter, "magree must be 0 or 1") }
        if let refusal = Self.lengthRefusal(form, [("attach", Self.teamAddAttachLimit)]) { return refusal }
        return state.withLock { state in
            guard var team = state.teams[tid] else { return Self.fail(NIMErrors.noSuchTeam, "team not exist") }
            guard team.owner == owner else { return Self.fail(NIMErrors.noTeamPermission, "no permission") }
            let failed = requested.filter { state.users[$0] == nil }
            var added: [String] = []
            for accid in requested where state.users[accid] != nil && !team.contains(accid) && !added.contains(accid) {
                added.append(accid)
            }
            guard team.size + added.count <= team.maxusers else { return Self.fail(NIMErrors.teamFull, "team member limit \(team.maxusers) exceeded") }
            team.members += added
            team.updatetime = clock.nowMs()
            state.teams[tid] = team
            var payload: [String: JSONValue] = [:]
            if !failed.isEmpty {
                payload["faccid"] = ["accid": .array(failed.map(JSONValue.string)), "msg": "not register"]
            }
            return Self.ok(payload)
        }
    }

    /// `/team/update.action`: `tid`, `owner` (must be the team's owner: 802) and any of `tname`, `icon`,
    /// `announcement`, `intro`, `custom`, the modes and `teamMemberLimit` (not below the current size).
    func updateTeam(_ form: NIMForm) -> HTTPResponseData {
        guard let tid = form.int("tid") else { return Self.fail(NIMErrors.parameter, "tid is required") }
        guard let owner = form["owner"]?.lowercased(), !owner.isEmpty else { return Self.fail(NIMErrors.parameter, "owner is required") }
        if let refusal = Self.teamFieldRefusal(form) { return refusal }
        return state.withLock { state in
            guard var team = state.teams[tid] else { return Self.fail(NIMErrors.noSuchTeam, "team not exist") }
            guard team.owner == owner else { return Self.fail(NIMErrors.noTeamPermission, "no permission") }
            if let limit = form.int("teamMemberLimit"), Int(limit) < team.size {
                return Self.fail(NIMErrors.parameter, "teamMemberLimit is below the team's size \(team.size)")
            }
            Self.applyTeamFields(form, to: &team)
            team.updatetime = clock.nowMs()
            state.teams[tid] = team
            return Self.ok()
        }
    }

    /// `/team/query.action`: `tids` (JSON array), `ope` 1 with member lists / 0 without. An unknown tid is
    /// 803, unless `ignoreInvalid` is true: then it is left out and listed in `invalidTids`.
    func queryTeams(_ form: NIMForm) -> HTTPResponseData {
        guard let list = Self.stringList(form["tids"]), !list.isEmpty else { return Self.fail(NIMErrors.parameter, "tids must be a JSON array of tids") }
        guard let ope = form["ope"], ["0", "1"].contains(ope) else { return Self.fail(NIMErrors.parameter, "ope must be 0 or 1") }
        let ignoreInvalid = NIMLenient.bool(form["ignoreInvalid"]) ?? false
        return state.withLock { state in
            var infos: [JSONValue] = [], invalid: [String] = []
            for text in list {
                if let tid = Int64(text), let team = state.teams[tid] {
                    infos.append(team.tinfo(withMembers: ope == "1"))
                } else if ignoreInvalid {
                    invalid.append(text)
                } else {
                    return Self.fail(NIMErrors.noSuchTeam, "team not exist: \(text)")
                }
            }
            var payload: [String: JSONValue] = ["tinfos": .array(infos)]
            if ignoreInvalid { payload["invalidTids"] = .array(invalid.map(JSONValue.string)) }
            return Self.ok(payload)
        }
    }

    /// `/team/joinTeams.action` (`accid`): the teams the account is in (owner or member), oldest first, as
    /// `{"code":200,"count":N,"infos":[…]}`; an unknown accid is in no team.
    func joinTeams(_ form: NIMForm) -> HTTPResponseData {
        guard let accid = form["accid"]?.lowercased(), !accid.isEmpty else { return Self.fail(NIMErrors.parameter, "accid is required") }
        let infos = state.withLock { state in
            state.teamOrder.compactMap { state.teams[$0] }.filter { $0.contains(accid) }.map(\.joinInfo)
        }
        return Self.ok(["count": .int(Int64(infos.count)), "infos": .array(infos)])
    }

    /// `/team/kick.action`: `tid`, `owner` (must be the team's owner: 802) and `member` or `members` (a JSON
    /// array of ≤ 200 accids; `member` wins when both are given). The owner cannot be kicked (802); an accid
    /// that is not in the team is 804 and kicks nobody.
    func kickTeamMembers(_ form: NIMForm) -> HTTPResponseData {
        guard let tid = form.int("tid") else { return Self.fail(NIMErrors.parameter, "tid is required") }
        guard let owner = form["owner"]?.lowercased(), !owner.isEmpty else { return Self.fail(NIMErrors.parameter, "owner is required") }
        let single = form["member"].flatMap { $0.isEmpty ? nil : [$0.lowercased()] }
        guard let leaving = single ?? Self.accidList(form, "members"), !leaving.isEmpty else {
            return Self.fail(NIMErrors.parameter, "member or members (a JSON array of accids) is required")
        }
        guard leaving.count <= 200 else { return Self.fail(NIMErrors.parameter, "members allows at most 200 per call") }
        return state.withLock { state in
            guard var team = state.teams[tid] else { return Self.fail(NIMErrors.noSuchTeam, "team not exist") }
            guard team.owner == owner else { return Self.fail(NIMErrors.noTeamPermission, "no permission") }
            guard !leaving.contains(team.owner) else { return Self.fail(NIMErrors.noTeamPermission, "the owner cannot be kicked") }
            guard leaving.allSatisfy(team.members.contains) else { return Self.fail(NIMErrors.notInTeam, "not in team") }
            team.members.removeAll { leaving.contains($0) }
            team.formerMembers.formUnion(leaving)
            team.updatetime = clock.nowMs()
            state.teams[tid] = team
            return Self.ok()
        }
    }

    /// `/team/remove.action`: `tid` and `owner` (must be the team's owner: 802). The team is gone: a team
    /// message into it afterwards is 803. Its members get the team notification of the dismissal, which the
    /// message copy carries (`msgType` NOTIFICATION, `attach` `{"data":{"tinfo":…},"id":4}`).
    func removeTeam(_ form: NIMForm) async -> HTTPResponseData {
        guard let tid = form.int("tid") else { return Self.fail(NIMErrors.parameter, "tid is required") }
        guard let owner = form["owner"]?.lowercased(), !owner.isEmpty else { return Self.fail(NIMErrors.parameter, "owner is required") }
        let removed: Result<NIMStoredTeam, NIMSandboxRefusal> = state.withLock { state in
            guard let team = state.teams[tid] else { return .failure(NIMSandboxRefusal(NIMErrors.noSuchTeam, "team not exist")) }
            guard team.owner == owner else { return .failure(NIMSandboxRefusal(NIMErrors.noTeamPermission, "no permission")) }
            state.teams[tid] = nil
            state.teamOrder.removeAll { $0 == tid }
            return .success(team)
        }
        switch removed {
        case .failure(let refusal):
            return Self.fail(refusal.entry, refusal.desc)
        case .success(let team):
            let now = clock.nowMs()
            let attach = JSONValue.object(["data": ["tinfo": team.tinfo(withMembers: false)], "id": 4]).jsonString()
            await enqueue(NIMCopyEvent(fields: [
                "eventType": "1", "convType": "TEAM", "to": .string(String(tid)), "fromAccount": .string(owner),
                "fromClientType": "REST", "msgType": "NOTIFICATION", "attach": .string(attach),
                "msgTimestamp": .string(String(now)), "msgidServer": .string("remove-\(tid)-\(now)"),
            ]))
            return Self.ok()
        }
    }
}
