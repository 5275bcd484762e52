import IMCore
import IMHTTP
import NIM

extension NIMSandbox {
    static let broadcastPlatforms: Set<String> = ["ios", "aos", "pc", "web", "mac"]
    static let defaultBroadcastTTLHours: Int64 = 7 * 24

    /// `/msg/sendBatchAttachMsg.action`: one custom system notification to each of `toAccids` (a JSON array,
    /// ≤500) from `fromAccid`; like `sendAttachMsg` it is copied (`CUSTOM_PERSON`), never stored.
    /// Answer `{"code":200,"unregister":"[…]"}` (a JSON-array string, as in sendBatchMsg).
    func sendBatchAttach(_ form: NIMForm) async -> HTTPResponseData {
        guard let from = form["fromAccid"]?.lowercased(), !from.isEmpty else { return Self.fail(NIMErrors.parameter, "fromAccid is required") }
        guard let list = Self.stringList(form["toAccids"]), !list.isEmpty, list.count <= 500 else {
            return Self.fail(NIMErrors.parameter, "toAccids must be a JSON array of 1…500 accids")
        }
        guard let attach = form["attach"], !attach.isEmpty else { return Self.fail(NIMErrors.parameter, "attach is required") }
        guard attach.count <= 4096 else { return Self.fail(NIMErrors.parameter, "attach is longer than 4096") }
        if let refusal = Self.attachFieldRefusal(form) { return refusal }
        let outcome: (sent: [String], unregistered: [String])? = state.withLock { state in
            guard state.users[from] != nil else { return nil }
            var sent: [String] = [], unregistered: [String] = []
            for accid in list.map({ $0.lowercased() }) {
                if state.users[accid] == nil { unregistered.append(accid) } else { sent.append(accid) }
            }
            return (sent, unregistered)
        }
        guard let outcome else { return Self.fail(NIMErrors.parameter, "fromAccid not registered") }
        if Self.option(form).route ?? true {
            let now = clock.nowMs()
            for to in outcome.sent {
                await enqueue(NIMCopyEvent(fields: [
                    "eventType": "1", "convType": "CUSTOM_PERSON", "to": .string(to), "fromAccount": .string(from),
                    "fromClientType": "REST", "msgType": "CUSTOM_P2P_MSG", "attach": .string(attach),
                    "msgTimestamp": .string(String(now)), "customSafeFlag": .string(form["save"] == "1" ? "0" : "1"),
                ]))
            }
        }
        return Self.ok(["unregister": .string(JSONValue.array(outcome.unregistered.map { .string($0) }).jsonString())])
    }

    /// `/msg/broadcastMsg.action`: `body` (≤4096, required), `from` (optional, a registered accid),
    /// `isOffline` (default false), `ttl` in hours (default 7 days), `targetOs` (JSON array of ios, aos, pc,
    /// web, mac). Answer `{"code":200,"msg":{broadcastId,from,body,targetOs,isOffline,createTime,expireTime}}`;
    /// the broadcast is listed at `GET /_sandbox/broadcasts`. It is not a chat message: no copy, no history.
    func broadcast(_ form: NIMForm) -> HTTPResponseData {
        guard let body = form["body"], !body.isEmpty else { return Self.fail(NIMErrors.parameter, "body is required") }
        guard body.count <= 4096 else { return Self.fail(NIMErrors.parameter, "body is longer than 4096") }
        var isOffline = false
        if let flag = form["isOffline"], !flag.isEmpty {
            guard let parsed = Lenient.bool(flag) else { return Self.fail(NIMErrors.parameter, "isOffline must be true or false") }
            isOffline = parsed
        }
        var ttl = Self.defaultBroadcastTTLHours
        if let text = form["ttl"], !text.isEmpty {
            guard let hours = Lenient.int64(text), hours > 0 else { return Self.fail(NIMErrors.parameter, "ttl must be a positive number of hours") }
            ttl = hours
        }
        var targetOs: [String]?
        if let text = form["targetOs"], !text.isEmpty {
            guard let list = Self.stringList(text), !list.isEmpty, list.allSatisfy(Self.broadcastPlatforms.contains) else {
                return Self.fail(NIMErrors.parameter, "targetOs must be a JSON array of ios, aos, pc, web, mac")
            }
            targetOs = list
        }
        let from = form["from"].flatMap { $0.isEmpty ? nil : $0.lowercased() }
        let now = clock.nowMs()
        return state.withLock { state in
            if let from, state.users[from] == nil { return Self.fail(NIMErrors.parameter, "from accid not registered") }
            let broadcast = NIMStoredBroadcast(broadcastId: state.nextBroadcastId, from: from, body: body, targetOs: targetOs,
                                               isOffline: isOffline, createTime: now, expireTime: now + ttl * 3_600_000)
            state.nextBroadcastId += 1
            state.broadcasts.append(broadcast)
            return Self.ok(["msg": broadcast.json])
        }
    }

    static func lengthRefusal(_ form: NIMForm, _ limits: [(String, Int)]) -> HTTPResponseData? {
        for (field, max) in limits {
            if let value = form[field], value.utf16.count > max { return fail(NIMErrors.parameter, "\(field) is longer than \(max)") }
        }
        return nil
    }

    /// `GET /_sandbox/broadcasts`: `{"broadcasts":[…]}` in the order sent.
    func broadcastList() -> HTTPResponseData {
        let list = state.withLock { $0.broadcasts.map(\.json) }
        return .json(JSONValue.object(["broadcasts": .array(list)]).jsonData())
    }
}
