import IMCore
import IMHTTP
import NIM

extension NIMSandbox {
    /// The profile fields of `/user/create.action` and `/user/updateUinfo.action` with their documented
    /// limits (docs/adapters/nim.md): over a limit, or a `gender` other than 0/1/2, is 414.
    static let profileLimits: [(field: String, max: Int)] = [
        ("name", 64), ("icon", 1024), ("sign", 256), ("email", 64), ("birth", 16), ("mobile", 32), ("ex", 1024),
    ]

    /// The fields only `/user/create.action` takes, with their documented limits (docs/adapters/nim.md,
    /// "Sandbox refusals"): the login `token` and the deprecated `props`. Over a limit is 414.
    static let accountLimits: [(field: String, max: Int)] = [("token", 128), ("props", 1024)]

    /// The refusal for an out-of-limit profile field, or nil.
    static func profileRefusal(_ form: NIMForm) -> HTTPResponseData? {
        for (field, max) in profileLimits {
            if let value = form[field], value.count > max { return fail(NIMErrors.parameter, "\(field) is longer than \(max)") }
        }
        if let gender = form["gender"], !gender.isEmpty, !["0", "1", "2"].contains(gender) {
            return fail(NIMErrors.parameter, "gender must be 0, 1 or 2")
        }
        return nil
    }

    /// Applies the profile fields present in `form`; "" clears a field.
    static func applyProfile(_ form: NIMForm, to user: inout NIMStoredUser) {
        func value(_ field: String) -> String?? { form[field].map { $0.isEmpty ? nil : $0 } }
        if let name = value("name") { user.name = name }
        if let icon = value("icon") { user.icon = icon }
        if let sign = value("sign") { user.sign = sign }
        if let email = value("email") { user.email = email }
        if let birth = value("birth") { user.birth = birth }
        if let mobile = value("mobile") { user.mobile = mobile }
        if let ex = value("ex") { user.ex = ex }
        if let gender = value("gender") { user.gender = gender.flatMap { Int($0) } }
    }

    /// `/user/refreshToken.action` (`accid`): a new token, answered in `info` like create. The old one is
    /// replaced (NIM calls this 重置, reset); an unknown accid is 414 `not register`.
    func refreshToken(_ form: NIMForm) -> HTTPResponseData {
        guard let accid = form["accid"]?.lowercased(), !accid.isEmpty else { return Self.fail(NIMErrors.parameter, "accid is required") }
        return state.withLock { state in
            guard var user = state.users[accid] else { return Self.fail(NIMErrors.parameter, "not register") }
            state.tokenGeneration += 1
            user.token = String(NIMSignature.sha1Hex("\(accid)\(appSecret)\(state.tokenGeneration)\(clock.nowMs())").prefix(32))
            state.users[accid] = user
            return Self.ok(["info": ["accid": .string(accid), "token": .string(user.token)]])
        }
    }

    /// `/user/updateUinfo.action` (`accid` + any of name, icon, sign, email, birth, mobile, gender, ex):
    /// `{"code":200}`; the change shows in `/user/getUinfos.action` and `/_sandbox/users`.
    func updateUinfo(_ form: NIMForm) -> HTTPResponseData {
        guard let accid = form["accid"]?.lowercased(), !accid.isEmpty else { return Self.fail(NIMErrors.parameter, "accid is required") }
        if let refusal = Self.profileRefusal(form) { return refusal }
        return state.withLock { state in
            guard var user = state.users[accid] else { return Self.fail(NIMErrors.parameter, "not register") }
            Self.applyProfile(form, to: &user)
            state.users[accid] = user
            return Self.ok()
        }
    }

    /// `/user/getUinfos.action` (`accids`: a JSON array of ≤200 accids): `{"code":200,"uinfos":[…]}` in the
    /// order asked, unknown accids left out, unset fields omitted.
    func getUinfos(_ form: NIMForm) -> HTTPResponseData {
        guard let accids = Self.stringList(form["accids"]), !accids.isEmpty else {
            return Self.fail(NIMErrors.parameter, "accids must be a JSON array of accids")
        }
        guard accids.count <= 200 else { return Self.fail(NIMErrors.parameter, "accids allows at most 200") }
        let infos = state.withLock { state in accids.compactMap { state.users[$0.lowercased()]?.uinfo } }
        return Self.ok(["uinfos": .array(infos)])
    }
}
