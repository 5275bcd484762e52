import Foundation
import IMAdapterKit
import IMCore
import IMHTTP
import IMSandbox
import NIM

extension NIMSandbox {
    static let accidCharacters = Set("abcdefghijklmnopqrstuvwxyz0123456789_@.-")
    static let sendableTypes: Set<Int> = [0, 1, 2, 3, 4, 6, 10, 100]
    /// The text fields of a message and their limits (docs/adapters/nim.md, "Message field limits").
    static let messageFieldLimits = [("ext", NIMMessageCodec.fieldLimits.ext), ("pushcontent", NIMMessageCodec.fieldLimits.pushcontent),
                                     ("payload", NIMMessageCodec.fieldLimits.payload), ("msgDesc", NIMMessageCodec.fieldLimits.msgDesc)]

    func createUser(_ form: NIMForm) -> HTTPResponseData {
        guard let raw = form["accid"], !raw.isEmpty, raw.count <= 32 else { return Self.fail(NIMErrors.parameter, "accid is required, ≤32 chars") }
        let accid = raw.lowercased()
        guard accid.allSatisfy(Self.accidCharacters.contains) else { return Self.fail(NIMErrors.parameter, "accid has illegal characters") }
        if let refusal = Self.profileRefusal(form) { return refusal }
        if let refusal = Self.lengthRefusal(form, Self.accountLimits) { return refusal }
        let token = form["token"] ?? NIMSignature.sha1Hex(accid + appSecret).prefix(32).description
        return state.withLock { state in
            if state.users[accid] != nil { return Self.fail(NIMErrors.parameter, "already register") }
            var user = NIMStoredUser(accid: accid, token: token)
            Self.applyProfile(form, to: &user)
            state.users[accid] = user
            state.userOrder.append(accid)
            var info: [String: JSONValue] = ["accid": .string(accid), "token": .string(token)]
            if let name = form["name"] { info["name"] = .string(name) }
            return Self.ok(["info": .object(info)])
        }
    }

    /// A checked message body: what to store, or the refusal.
    enum CheckedBody {
        case body(String)
        case refused(HTTPResponseData)
    }

    /// Validates `type` and `body`. `body` is read leniently (`NIMLenientJSON`: NetEase's own tooling sends
    /// `str(dict)`, docs/adapters/nim.md); strict JSON is stored byte for byte, a lenient one as the JSON it
    /// means (what history, copies and `/_sandbox/messages` then show).
    /// `ext`, when given, is JSON (its length is one of `messageFieldLimits`).
    func checkMessage(type: Int64?, body: String?, ext: String? = nil) -> CheckedBody {
        guard let type, Self.sendableTypes.contains(Int(type)) else { return .refused(Self.fail(NIMErrors.parameter, "type is not a sendable message type")) }
        if let ext, !ext.isEmpty, NIMLenientJSON.parse(ext) == nil { return .refused(Self.fail(NIMErrors.parameter, "ext is not JSON")) }
        guard let body, !body.isEmpty else { return .refused(Self.fail(NIMErrors.parameter, "body is required")) }
        guard body.count <= 5000 else { return .refused(Self.fail(NIMErrors.parameter, "body is longer than 5000")) }
        guard let parsed = NIMLenientJSON.parse(body), parsed.objectValue != nil else {
            return .refused(Self.fail(NIMErrors.parameter, "body is not a JSON object"))
        }
        return .body(NIMLenientJSON.isStrict(body) ? body : parsed.jsonString())
    }

    /// The `option` field, read leniently; absent or unreadable → all defaults.
    static func option(_ form: NIMForm) -> NIMSendOption {
        NIMSendOption(parsing: form["option"].flatMap(NIMLenientJSON.parse) ?? .null)
    }

    /// A JSON-array-of-strings field (`toAccids`, `accids`), read leniently; nil when it is not one.
    static func stringList(_ text: String?) -> [String]? {
        guard let items = text.flatMap(NIMLenientJSON.parse)?.arrayValue else { return nil }
        let strings = items.compactMap(\.stringValue)
        return strings.count == items.count ? strings : nil
    }

    func store(from: String, ope: Int, to: String, type: Int, body: String, ext: String?, option: NIMSendOption,
               in state: inout NIMSandboxState) -> NIMStoredMessage {
        let msgid = state.nextMsgid
        state.nextMsgid += 1
        let message = NIMStoredMessage(msgid: msgid, msgidclient: NIMSignature.md5Hex(Array("\(msgid)\(appKey)".utf8)),
                                       from: from, ope: ope, to: to, type: type, body: body, ext: ext, option: option,
                                       sendtime: clock.nowMs())
        state.index[msgid] = state.messages.count
        state.messages.append(message)
        return message
    }

    func sendMessage(_ form: NIMForm) async -> HTTPResponseData {
        guard let from = form["from"]?.lowercased(), let to = form["to"], !to.isEmpty else { return Self.fail(NIMErrors.parameter, "from and to are required") }
        guard let ope = form.int("ope"), ope == 0 || ope == 1 else { return Self.fail(NIMErrors.parameter, "ope must be 0 or 1") }
        let body: String
        switch checkMessage(type: form.int("type"), body: form["body"], ext: form["ext"]) {
        case .refused(let refusal): return refusal
        case .body(let checked): body = checked
        }
        if let refusal = Self.lengthRefusal(form, Self.messageFieldLimits) { return refusal }
        let option = Self.option(form)
        let result: Result<NIMStoredMessage, NIMSandboxRefusal> = state.withLock { state in
            guard state.users[from] != nil else { return .failure(NIMSandboxRefusal(NIMErrors.parameter, "from accid not registered")) }
            if ope == 0, state.users[to.lowercased()] == nil { return .failure(NIMSandboxRefusal(NIMErrors.parameter, "to accid not registered")) }
            if ope == 1, let refusal = Self.teamRefusal(from: from, tid: to, in: state) { return .failure(refusal) }
            let message = store(from: from, ope: Int(ope), to: ope == 0 ? to.lowercased() : to, type: Int(form.int("type")!),
                                body: body, ext: form["ext"], option: option, in: &state)
            if option.route ?? true { submit([message.copy]) }
            return .success(message)
        }
        switch result {
        case .failure(let refusal): return Self.fail(refusal.entry, refusal.desc)
        case .success(let message):
            await queueSubmitted()
            return Self.ok(["data": ["msgid": .int(message.msgid), "timetag": .int(message.sendtime), "antispam": false]])
        }
    }

    func sendBatch(_ form: NIMForm) async -> HTTPResponseData {
        guard let from = form["fromAccid"]?.lowercased() else { return Self.fail(NIMErrors.parameter, "fromAccid is required") }
        guard let list = Self.stringList(form["toAccids"]), !list.isEmpty, list.count <= 500 else {
            return Self.fail(NIMErrors.parameter, "toAccids must be a JSON array of 1…500 accids")
        }
        let body: String
        switch checkMessage(type: form.int("type"), body: form["body"], ext: form["ext"]) {
        case .refused(let refusal): return refusal
        case .body(let checked): body = checked
        }
        if let refusal = Self.lengthRefusal(form, Self.messageFieldLimits) { return refusal }
        let option = Self.option(form)
        let returnIDs = Lenient.bool(form["returnMsgid"]) ?? false
        if returnIDs, list.count > 100 { return Self.fail(NIMErrors.parameter, "returnMsgid allows at most 100 recipients") }
        let outcome: (sent: [NIMStoredMessage], unregistered: [String])? = state.withLock { state in
            guard state.users[from] != nil else { return nil }
            var sent: [NIMStoredMessage] = [], unregistered: [String] = []
            for accid in list.map({ $0.lowercased() }) {
                guard state.users[accid] != nil else { unregistered.append(accid); continue }
                sent.append(store(from: from, ope: 0, to: accid, type: Int(form.int("type")!), body: body,
                                  ext: form["ext"], option: option, in: &state))
            }
            if option.route ?? true { submit(sent.map(\.copy)) }
            return (sent, unregistered)
        }
        guard let outcome else { return Self.fail(NIMErrors.parameter, "fromAccid not registered") }
        await queueSubmitted()
        var payload: [String: JSONValue] = [
            "unregister": .string(JSONValue.array(outcome.unregistered.map { .string($0) }).jsonString()),
            "timetag": .int(outcome.sent.first?.sendtime ?? clock.nowMs()),
        ]
        if returnIDs {
            payload["msgids"] = .object(Dictionary(uniqueKeysWithValues: outcome.sent.map { ($0.to, JSONValue.int($0.msgid)) }))
        }
        return Self.ok(payload)
    }

    /// The push fields of a custom system notification (`sendAttachMsg`, `sendBatchAttachMsg`) and their
    /// limits (docs/adapters/nim.md, "Sandbox refusals").
    static let attachPushLimits = [("pushcontent", 500), ("payload", 2048), ("sound", 30)]

    /// The refusal of an out-of-limit push field, or of a `save` other than 1 (online only) or 2 (stored
    /// offline), of a custom system notification; nil when they pass.
    static func attachFieldRefusal(_ form: NIMForm) -> HTTPResponseData? {
        if let refusal = lengthRefusal(form, attachPushLimits) { return refusal }
        if let save = form["save"], !save.isEmpty, save != "1", save != "2" { return fail(NIMErrors.parameter, "save must be 1 or 2") }
        return nil
    }

    /// Custom system notification: delivered (copied), never stored. A p2p one (`msgtype=0`) goes to a
    /// registered accid, as sendMsg's `to`; a team one to a team the sender is in (docs/adapters/nim.md,
    /// "Sandbox refusals").
    func sendAttach(_ form: NIMForm) async -> HTTPResponseData {
        guard let from = form["from"]?.lowercased(), let to = form["to"], let attach = form["attach"], !attach.isEmpty else {
            return Self.fail(NIMErrors.parameter, "from, to and attach are required")
        }
        guard let type = form.int("msgtype"), type == 0 || type == 1 else { return Self.fail(NIMErrors.parameter, "msgtype must be 0 or 1") }
        guard attach.count <= 4096 else { return Self.fail(NIMErrors.parameter, "attach is longer than 4096") }
        if let refusal = Self.attachFieldRefusal(form) { return refusal }
        let refusal: NIMSandboxRefusal? = state.withLock { state in
            guard state.users[from] != nil else { return NIMSandboxRefusal(NIMErrors.parameter, "from accid not registered") }
            if type == 0, state.users[to.lowercased()] == nil { return NIMSandboxRefusal(NIMErrors.parameter, "to accid not registered") }
            return type == 1 ? Self.teamRefusal(from: from, tid: to, in: state) : nil
        }
        if let refusal { return Self.fail(refusal.entry, refusal.desc) }
        let copy = NIMCopyEvent(fields: [
            "eventType": "1", "convType": .string(type == 0 ? "CUSTOM_PERSON" : "CUSTOM_TEAM"), "to": .string(to),
            "fromAccount": .string(from), "fromClientType": "REST",
            "msgType": .string(type == 0 ? "CUSTOM_P2P_MSG" : "CUSTOM_TEAM_MSG"), "attach": .string(attach),
            "msgTimestamp": .string(String(clock.nowMs())),
            "customSafeFlag": .string(form["save"] == "1" ? "0" : "1"),
        ])
        if Self.option(form).route ?? true { await enqueue(copy) }
        return Self.ok()
    }

    /// The text fields of `/msg/recall.action` and their limits (docs/adapters/nim.md, "Sandbox refusals"):
    /// the recall note `msg`, the copy's `attach`, the push `payload` (`pushcontent` NIM cuts past 500 rather
    /// than refuses).
    static let recallFieldLimits = [("msg", 128), ("attach", 5000), ("payload", 2048)]

    func recall(_ form: NIMForm) async -> HTTPResponseData {
        guard let msgid = form.int("deleteMsgid"), let timetag = form.int("timetag"), let type = form.int("type"),
              let from = form["from"]?.lowercased(), let to = form["to"] else {
            return Self.fail(NIMErrors.parameter, "deleteMsgid, timetag, type, from and to are required")
        }
        guard type == 7 || type == 8 else { return Self.fail(NIMErrors.parameter, "type must be 7 or 8") }
        if let refusal = Self.lengthRefusal(form, Self.recallFieldLimits) { return refusal }
        var ignoreTime = false
        if let flag = form["ignoreTime"] {
            guard flag == "1" else { return Self.fail(NIMErrors.parameter, "ignoreTime may only be 1") }
            ignoreTime = true
        }
        let now = clock.nowMs()
        let window = ignoreTime ? Self.thirtyDaysMs : recallWindowMs
        let result: Result<NIMStoredMessage, NIMSandboxRefusal> = state.withLock { state in
            guard let position = state.index[msgid] else { return .failure(NIMSandboxRefusal(NIMErrors.notFound, "msg not found")) }
            let message = state.messages[position]
            guard message.from == from else { return .failure(NIMSandboxRefusal(NIMErrors.notAllowed, "not allow!")) }
            guard message.sendtime == timetag, message.ope == (type == 7 ? 0 : 1),
                  message.to.lowercased() == to.lowercased() else {
                return .failure(NIMSandboxRefusal(NIMErrors.parameter, "timetag, type or to does not match the message"))
            }
            if message.ope == 1 {
                // A team message is recalled only by someone still in the team: NIM answers 403 `not allow!`
                // to a sender who left it (docs/adapters/nim.md, "Conversations").
                guard let tid = Int64(message.to), let team = state.teams[tid] else {
                    return .failure(NIMSandboxRefusal(NIMErrors.noSuchTeam, "team not exist"))
                }
                guard team.contains(from) else { return .failure(NIMSandboxRefusal(NIMErrors.notAllowed, "not allow!")) }
            }
            // NIM refuses to recall a message sent to oneself (docs/adapters/nim.md, "Sandbox refusals"); its
            // code is not documented: the sandbox answers 414, as for its other parameter refusals.
            if message.ope == 0, message.from == message.to.lowercased() {
                return .failure(NIMSandboxRefusal(NIMErrors.parameter, "cannot recall a message sent to oneself"))
            }
            if message.recalled { return .failure(NIMSandboxRefusal(NIMErrors.duplicate, "msg already recalled")) }
            guard now - message.sendtime <= window else { return .failure(NIMSandboxRefusal(NIMErrors.recallTimeout, "msg recall timeout")) }
            state.messages[position].recalled = true
            state.messages[position].recallTime = now
            return .success(message)
        }
        switch result {
        case .failure(let refusal): return Self.fail(refusal.entry, refusal.desc)
        case .success(let message):
            var fields: [String: JSONValue] = [
                "eventType": .string(type == 7 ? "7" : "8"), "clientId": .string(message.msgidclient),
                "deleteTime": .string(String(now)), "from": .string(message.from), "fromClientType": "REST",
                "msgId": .string(String(message.msgid)), "selfMsg": .string(form["msg"] ?? "撤回了一条消息"),
                "sendTime": .string(String(message.sendtime)), "to": .string(message.to),
            ]
            if let attach = form["attach"] { fields["attach"] = .string(attach) }
            await enqueue(NIMCopyEvent(fields: fields))
            return Self.ok()
        }
    }

    func upload(_ form: NIMForm, host: String?) -> HTTPResponseData {
        guard let content = form["content"], let bytes = Data(base64Encoded: content) else {
            return Self.fail(NIMErrors.parameter, "content must be base64")
        }
        guard bytes.count <= 15 << 20 else { return Self.fail(NIMErrors.parameter, "content is larger than 15 MB") }
        let ext = form["type"].map { $0.trimmingCharacters(in: CharacterSet(charactersIn: ".")) }.flatMap { $0.isEmpty ? nil : $0 } ?? "bin"
        let name = state.withLock { state in
            let name = "\(state.nextMedia).\(ext)"
            state.nextMedia += 1
            state.media[name] = Array(bytes)
            return name
        }
        return Self.ok(["url": .string("http://\(host ?? "127.0.0.1")/_sandbox/media/\(name)")])
    }

    public func messages() async -> [SandboxMessageRecord] {
        let codec = NIMContentCodec()
        return state.withLock { state in
            state.messages.map { message in
                let content = try? codec.decode(type: message.type, body: message.body)
                let kind = content.map { $0.kind == .unsupported ? "custom" : $0.kind.rawValue } ?? "custom"
                let text: String = if case .text(let text)? = content { text.text } else { content?.digest ?? "" }
                var raw = message.historyEntry.json
                if case .object(var object) = raw {
                    object["ope"] = .int(Int64(message.ope))
                    object["to"] = .string(message.to)
                    object["option"] = (try? JSONValue.parse(message.option.json)) ?? .null
                    raw = .object(object)
                }
                return SandboxMessageRecord(
                    id: String(message.msgid), conversationType: message.ope == 0 ? "direct" : "group",
                    conversationID: message.ope == 0 ? [message.from, message.to].sorted().joined(separator: ",") : message.to,
                    from: message.from, to: message.to, sentAtMs: message.sendtime, kind: kind, text: text,
                    recalled: message.recalled, raw: raw)
            }
        }
    }
}

struct NIMSandboxRefusal: Error {
    var entry: VendorErrorTable.Entry
    var desc: String
    init(_ entry: VendorErrorTable.Entry, _ desc: String) {
        self.entry = entry
        self.desc = desc
    }
}
