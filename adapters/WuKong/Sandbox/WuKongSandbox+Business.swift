import Foundation
import IMCore
import IMHTTP
import WuKong

/// The business server's message-extra routes (as TangSengDaoDao serves them), plus
/// IMBridge's `POST /v1/message/extra` for the remote `extra` dictionary.
///
/// Rules: the caller is the owner of the `token` header; only the sender may revoke or edit (and not
/// after a revoke); every change bumps the channel's `extra_version` and is announced by a CMD message
/// through WuKongIM, sent by the caller: `messageRevoke` (stored in the CMD channel → `msg.notify`),
/// `syncMessageExtra` / `syncMessageReaction` (`no_persist` → `msg.offline`).
extension WuKongSandbox {
    func handleBusiness(_ request: HTTPRequestData, path: String) -> HTTPResponseData {
        if let avatar = avatarResponse(request, path: path) { return avatar }
        guard let token = request.header("token"), let uid = state.withLock({ $0.tokenOwners[token] }) else {
            return .json(["msg": "请先登录！"], status: 401)
        }
        guard Self.serves(request.method, path) else { return Self.notFound() }
        if let directory = handleDirectory(request, path: path, uid: uid) { return directory }
        do {
            switch (request.method, path) {
            case ("POST", "/v1/message/extra/sync"): return try extraSync(request, uid: uid)
            case ("POST", "/v1/message/revoke"): return try revoke(request, uid: uid)
            case ("POST", "/v1/message/edit"): return try edit(request, uid: uid)
            case ("POST", "/v1/message/readed"): return try readed(request, uid: uid)
            case ("POST", "/v1/message/extra"): return try updateExtra(request, uid: uid)
            case ("POST", "/v1/reactions"): return try react(request, uid: uid)
            case ("POST", "/v1/reaction/sync"): return try reactionSync(request, uid: uid)
            default: return Self.notFound()
            }
        } catch SandboxRefusal.badRequest(let message) {
            return Self.failure(message)
        } catch {
            return Self.failure("\(error)")
        }
    }

    func extraSync(_ request: HTTPRequestData, uid: String) throws -> HTTPResponseData {
        let body = try Self.decode(WKExtraSyncRequest.self, request)
        let key = WuKongSandboxState.key(channelID: body.channelID, type: body.channelType, uid: uid)
        let limit = min(max(body.limit ?? 100, 1), 10_000)
        let rows = state.withLock { $0.extraRows(key, after: body.extraVersion, limit: limit, viewer: uid) }
        noteEditsServed(rows, limit: limit)
        return Self.bare(rows)
    }

    func revoke(_ request: HTTPRequestData, uid: String) throws -> HTTPResponseData {
        guard let idText = request.queryValue("message_id"), let id = Int64(idText),
              let channelID = request.queryValue("channel_id"), let type = request.queryValue("channel_type").flatMap(UInt8.init) else {
            throw SandboxRefusal.badRequest("参数有误！")
        }
        let key = WuKongSandboxState.key(channelID: channelID, type: type, uid: uid)
        try state.withLock { state in
            let message = try Self.target(id, in: key, state)
            guard message.fromUID == uid else { throw SandboxRefusal.badRequest("不能撤回别人的消息！") }
            if state.extras[key]?[id]?.revoke == 1 { return }
            state.updateExtra(id, in: key) { row in
                row.revoke = 1
                row.revoker = uid
            }
            command(WuKongInboundMapper.revokeCommand, param: ["message_id": .string(String(id))], from: uid, key: key,
                    persist: true, in: &state)
        }
        return Self.ok()
    }

    func edit(_ request: HTTPRequestData, uid: String) throws -> HTTPResponseData {
        let body = try Self.decode(WKEditRequest.self, request)
        guard let id = Int64(body.messageID) else { throw SandboxRefusal.badRequest("消息ID不能为空！") }
        guard case .object(let content)? = try? JSONValue.parse(body.contentEdit), content["type"]?.int64Value != nil else {
            throw SandboxRefusal.badRequest("编辑内容格式有误！")
        }
        let key = WuKongSandboxState.key(channelID: body.channelID, type: body.channelType, uid: uid)
        let now = clock.nowMs()
        try state.withLock { state in
            let message = try Self.target(id, in: key, state)
            guard message.fromUID == uid else { throw SandboxRefusal.badRequest("不能编辑别人的消息！") }
            guard state.extras[key]?[id]?.revoke != 1 else { throw SandboxRefusal.badRequest("消息已撤回，不能编辑！") }
            state.updateExtra(id, in: key) { row in
                row.contentEdit = .object(content)
                row.editedAt = now / 1000
            }
            command(WuKongInboundMapper.syncExtraCommand, param: nil, from: uid, key: key, persist: false, in: &state)
        }
        return Self.ok()
    }

    func readed(_ request: HTTPRequestData, uid: String) throws -> HTTPResponseData {
        let body = try Self.decode(WKReadedRequest.self, request)
        let key = WuKongSandboxState.key(channelID: body.channelID, type: body.channelType, uid: uid)
        let now = clock.nowMs()
        state.withLock { state in
            var changed = false
            let members = state.members(of: key)
            for id in body.messageIDs.compactMap(Int64.init) {
                guard let message = state.message(id), state.locations[id] == key, message.fromUID != uid,
                      state.readers[id, default: []].insert(uid).inserted else { continue }
                let count = state.readers[id]!.count
                state.updateExtra(id, in: key) { row in
                    row.readedCount = count
                    row.unreadCount = max(0, members.filter { $0 != message.fromUID }.count - count)
                    row.readedAt = now / 1000
                }
                changed = true
            }
            if changed {
                command(WuKongInboundMapper.syncExtraCommand, param: nil, from: uid, key: key, persist: false, in: &state)
            }
        }
        return Self.ok()
    }

    func updateExtra(_ request: HTTPRequestData, uid: String) throws -> HTTPResponseData {
        let body = try Self.decode(WKExtraUpdateRequest.self, request)
        guard let id = Int64(body.messageID) else { throw SandboxRefusal.badRequest("消息ID不能为空！") }
        let key = WuKongSandboxState.key(channelID: body.channelID, type: body.channelType, uid: uid)
        try state.withLock { state in
            _ = try Self.target(id, in: key, state)
            if state.extras[key]?[id]?.extra == body.extra { return }
            state.updateExtra(id, in: key) { $0.extra = body.extra }
            command(WuKongInboundMapper.syncExtraCommand, param: nil, from: uid, key: key, persist: false, in: &state)
        }
        return Self.ok()
    }

    func react(_ request: HTTPRequestData, uid: String) throws -> HTTPResponseData {
        let body = try Self.decode(WKReactionRequest.self, request)
        guard let id = Int64(body.messageID), !body.emoji.isEmpty else { throw SandboxRefusal.badRequest("参数有误！") }
        let key = WuKongSandboxState.key(channelID: body.channelID, type: body.channelType, uid: uid)
        let now = clock.nowMs()
        try state.withLock { state in
            _ = try Self.target(id, in: key, state)
            let seq = (state.reactionSeqs[key] ?? 0) + 1
            state.reactionSeqs[key] = seq
            var rows = state.reactions[key] ?? []
            if let index = rows.firstIndex(where: { $0.messageID == body.messageID && $0.uid == uid && $0.emoji == body.emoji }) {
                rows[index].isDeleted = rows[index].isDeleted == 0 ? 1 : 0
                rows[index].seq = seq
                rows[index].createdAt = WuKongExtrasCodec.formatTime(now)
            } else {
                rows.append(WKReaction(messageID: body.messageID, channelID: body.channelID, channelType: body.channelType, seq: seq,
                                       uid: uid, name: uid, emoji: body.emoji, isDeleted: 0, createdAt: WuKongExtrasCodec.formatTime(now)))
            }
            state.reactions[key] = rows
            reactionsServed.withLock { $0.toggles["\(body.messageID)|\(uid)|\(body.emoji)", default: []].append(seq) }
            command(WuKongInboundMapper.syncReactionCommand, param: nil, from: uid, key: key, persist: false, in: &state)
        }
        return Self.ok()
    }

    func reactionSync(_ request: HTTPRequestData, uid: String) throws -> HTTPResponseData {
        let body = try Self.decode(WKReactionSyncRequest.self, request)
        let key = WuKongSandboxState.key(channelID: body.channelID, type: body.channelType, uid: uid)
        let limit = min(max(body.limit ?? 100, 1), 1000)
        let rows = state.withLock { state in
            (state.reactions[key] ?? []).filter { $0.seq > body.seq }.sorted { $0.seq < $1.seq }.prefix(limit)
        }
        if body.seq > 0, !rows.isEmpty {
            reactionsServed.withLock { record in for row in rows { record.served.insert("\(row.messageID)|\(row.uid)|\(row.emoji)|\(row.seq)") } }
        }
        return Self.bare(Array(rows))
    }

    static func target(_ id: Int64, in key: WuKongSandboxState.ChannelKey, _ state: WuKongSandboxState) throws -> WKMessage {
        guard state.locations[id] == key, let message = state.message(id) else { throw SandboxRefusal.badRequest("消息不存在！") }
        return message
    }

    /// Sends a CMD (type 99) through WuKongIM from `uid` to the channel: `sync_once` 1, `red_dot` 0,
    /// `no_persist` unless `persist`. Must run under the state lock (messages leave in order).
    func command(_ name: String, param: JSONValue?, from uid: String, key: WuKongSandboxState.ChannelKey, persist: Bool,
                 in state: inout WuKongSandboxState) {
        var payload: [String: JSONValue] = ["type": 99, "cmd": .string(name)]
        if let param { payload["param"] = param }
        let request = WKSendRequest(header: WKHeader(noPersist: persist ? 0 : 1, redDot: 0, syncOnce: 1), fromUID: uid,
                                    channelID: key.id, channelType: key.type, payload: JSONValue.object(payload).jsonData())
        let message = state.store(request, key: .init(id: key.id + WuKongChannel.cmdSuffix, type: key.type), nowMs: clock.nowMs())
        publish(message, in: state)
    }
}
