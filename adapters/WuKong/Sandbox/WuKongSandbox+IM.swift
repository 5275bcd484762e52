import Foundation
import IMCore
import IMHTTP
import WuKong

/// WuKongIM's own routes (users, channels, messages, history, conversations).
extension WuKongSandbox {
    func handleIM(_ request: HTTPRequestData, path: String) -> HTTPResponseData {
        guard Self.serves(request.method, path) else { return Self.notFound() }
        let parts = path.split(separator: "/").map { $0.removingPercentEncoding ?? String($0) }
        if request.method == "GET", parts.count == 5, parts[0] == "cluster", parts[4] == "subscribers" {
            return clusterSubscribers(channelID: parts[2], type: parts[3])
        }
        do {
            switch (request.method, path) {
            case ("GET", "/health"): return .json(["status": "ok"])
            case ("POST", "/user/token"): return try userToken(request)
            case ("POST", "/channel"), ("POST", "/channel/info"): return try channel(request, withSubscribers: path == "/channel")
            case ("POST", "/channel/delete"): return try channelDelete(request)
            case ("POST", "/channel/subscriber_add"): return try subscribers(request, add: true)
            case ("POST", "/channel/subscriber_remove"): return try subscribers(request, add: false)
            case ("POST", "/message/send"): return try send(request)
            case ("POST", "/message/sendbatch"): return try sendBatch(request)
            case ("POST", "/channel/messagesync"): return try messageSync(request)
            case ("POST", "/messages"): return try lookup(request)
            case ("POST", "/conversation/sync"): return try conversationSync(request)
            case ("POST", "/conversation/channels"): return try conversationChannels(request)
            case ("POST", "/conversations/clearUnread"): return try clearUnread(request)
            default: return Self.notFound()
            }
        } catch SandboxRefusal.badRequest(let message) {
            return Self.failure(message)
        } catch {
            return Self.failure("\(error)")
        }
    }

    /// `GET /cluster/channels/{channel_id}/{channel_type}/subscribers` (the cluster API mounted on the
    /// main API): the channel's subscribers as a bare `["uid",…]`; a channel it does not have has none.
    func clusterSubscribers(channelID: String, type: String) -> HTTPResponseData {
        guard let type = UInt8(type) else { return Self.failure("频道类型不能为空！") }
        let key = WuKongSandboxState.ChannelKey(id: channelID, type: type)
        return Self.bare(state.withLock { $0.channels[key]?.subscribers ?? [] })
    }

    func userToken(_ request: HTTPRequestData) throws -> HTTPResponseData {
        let body = try Self.decode(WKUserTokenRequest.self, request)
        guard !body.uid.isEmpty else { throw SandboxRefusal.badRequest("uid不能为空！") }
        guard !body.token.isEmpty else { throw SandboxRefusal.badRequest("token不能为空！") }
        guard body.uid != WuKongChannel.systemUID else { throw SandboxRefusal.badRequest("系统账号不能更新token！") }
        guard !WuKongChannel.hasSpecialCharacters(body.uid) else { throw SandboxRefusal.badRequest("uid不能包含特殊字符！") }
        state.withLock { state in
            if let old = state.devices[body.uid]?[body.deviceFlag] { state.tokenOwners[old] = nil }
            state.devices[body.uid, default: [:]][body.deviceFlag] = body.token
            state.tokenOwners[body.token] = body.uid
        }
        return Self.ok()
    }

    func channel(_ request: HTTPRequestData, withSubscribers: Bool) throws -> HTTPResponseData {
        let body = try Self.decode(WKChannelRequest.self, request)
        try Self.checkChannel(body.channelID, body.channelType)
        if body.channelType == WKChannelType.person, !(body.subscribers ?? []).isEmpty {
            throw SandboxRefusal.badRequest("个人频道不支持添加订阅者！")
        }
        let key = WuKongSandboxState.ChannelKey(id: body.channelID, type: body.channelType)
        state.withLock { state in
            var channel = state.channels[key] ?? .init()
            channel.ban = body.ban ?? channel.ban
            channel.disband = body.disband ?? channel.disband
            channel.sendBan = body.sendBan ?? channel.sendBan
            channel.large = body.large ?? channel.large
            state.channels[key] = channel
            if withSubscribers { Self.addSubscribers(body.subscribers ?? [], reset: body.reset == 1, to: key, in: &state) }
        }
        return Self.ok()
    }

    func channelDelete(_ request: HTTPRequestData) throws -> HTTPResponseData {
        let body = try Self.decode(WKChannelRequest.self, request)
        let key = WuKongSandboxState.ChannelKey(id: body.channelID, type: body.channelType)
        state.withLock { state in
            state.channels[key, default: .init()].disband = 1
            for message in state.messages[key] ?? [] { state.locations[message.messageID] = nil }
            state.messages[key] = nil
        }
        return Self.ok()
    }

    func subscribers(_ request: HTTPRequestData, add: Bool) throws -> HTTPResponseData {
        var body = try Self.decode(WKChannelRequest.self, request)
        if body.channelType == 0 { body.channelType = WKChannelType.group }
        try Self.checkChannel(body.channelID, body.channelType)
        if body.tempSubscriber == 1 { throw SandboxRefusal.badRequest("不再支持临时订阅者！") }
        if body.channelType == WKChannelType.person { throw SandboxRefusal.badRequest("个人频道不支持添加订阅者！") }
        let key = WuKongSandboxState.ChannelKey(id: body.channelID, type: body.channelType)
        state.withLock { state in
            if add {
                Self.addSubscribers(body.subscribers ?? [], reset: body.reset == 1, to: key, in: &state)
            } else {
                let removed = Set(body.subscribers ?? [])
                state.channels[key]?.subscribers.removeAll { removed.contains($0) }
                for uid in removed { state.readTo[uid]?[key] = nil }
            }
        }
        return Self.ok()
    }

    /// Creates the channel if absent; each new subscriber gets a conversation read up to the last seq
    /// (except live channels).
    static func addSubscribers(_ uids: [String], reset: Bool, to key: WuKongSandboxState.ChannelKey,
                               in state: inout WuKongSandboxState) {
        var channel = state.channels[key] ?? .init()
        if reset { channel.subscribers = [] }
        for uid in uids where !channel.subscribers.contains(uid) {
            channel.subscribers.append(uid)
            if key.type != WKChannelType.live { state.readTo[uid, default: [:]][key] = state.lastSeq(key) }
        }
        state.channels[key] = channel
    }

    static func checkChannel(_ id: String, _ type: UInt8) throws {
        guard !id.isEmpty else { throw SandboxRefusal.badRequest("频道ID不能为空！") }
        guard type != 0 else { throw SandboxRefusal.badRequest("频道类型不能为0！") }
        guard !WuKongChannel.hasSpecialCharacters(id) else { throw SandboxRefusal.badRequest("频道ID不能包含特殊字符！") }
    }

    func send(_ request: HTTPRequestData) throws -> HTTPResponseData {
        let body = try Self.decode(WKSendRequest.self, request)
        guard !body.payload.isEmpty else { throw SandboxRefusal.badRequest("payload不能为空！") }
        if !(body.subscribers ?? []).isEmpty {
            guard body.header.syncOnce == 1, body.channelID.isEmpty else { throw SandboxRefusal.badRequest("无法处理发送消息请求！") }
            return try sendToSubscribers(body)
        }
        try Self.checkChannel(body.channelID, body.channelType)
        guard !WuKongChannel.hasSpecialCharacters(body.fromUID) else { throw SandboxRefusal.badRequest("发送者uid不能包含特殊字符！") }
        let message = try deliver(body)
        return Self.bare(SendReply(status: 200, data: .init(messageID: message.messageID, clientMsgNo: message.clientMsgNo)))
    }

    /// Stores and publishes one API send (skips membership checks, as API sends do; ban/disband apply).
    func deliver(_ body: WKSendRequest) throws -> WKMessage {
        let from = body.fromUID.isEmpty ? WuKongChannel.systemUID : body.fromUID
        return try state.withLock { state in
            var key = WuKongSandboxState.key(channelID: body.channelID, type: body.channelType, uid: from)
            if let channel = state.channels[key] {
                if channel.disband == 1 { throw SandboxRefusal.badRequest("频道已解散！") }
                if channel.ban == 1 && from != WuKongChannel.systemUID { throw SandboxRefusal.badRequest("频道已被封禁！") }
            }
            if body.header.syncOnce == 1 && body.channelType != WKChannelType.temp {
                key = .init(id: key.id + WuKongChannel.cmdSuffix, type: key.type)
            }
            let message = state.store(body, key: key, nowMs: clock.nowMs())
            publish(message, in: state)
            return message
        }
    }

    private func sendToSubscribers(_ body: WKSendRequest) throws -> HTTPResponseData {
        let uids = (body.subscribers ?? []).sorted()
        let id = String(Hashing.crc32(uids.joined(separator: ",")), radix: 16)
        var temp = body
        temp.channelID = id
        temp.channelType = WKChannelType.temp
        state.withLock { state in
            let key = WuKongSandboxState.ChannelKey(id: id, type: WKChannelType.temp)
            state.channels[key, default: .init()].subscribers = uids
            let message = state.store(temp, key: key, nowMs: clock.nowMs())
            publish(message, in: state)
        }
        return Self.ok()
    }

    func sendBatch(_ request: HTTPRequestData) throws -> HTTPResponseData {
        let body = try Self.decode(WKSendBatchRequest.self, request)
        guard !body.fromUID.isEmpty else { throw SandboxRefusal.badRequest("发送者uid不能为空！") }
        guard !body.subscribers.isEmpty else { throw SandboxRefusal.badRequest("订阅者不能为空！") }
        guard !body.payload.isEmpty else { throw SandboxRefusal.badRequest("payload不能为空！") }
        var reply = WKSendBatchResponse()
        for uid in body.subscribers {
            do {
                _ = try deliver(WKSendRequest(header: body.header, fromUID: body.fromUID, channelID: uid,
                                              channelType: WKChannelType.person, payload: body.payload))
            } catch SandboxRefusal.badRequest(let why) {
                reply.failUIDs.append(uid)
                reply.reason.append(why)
            }
        }
        return Self.bare(reply)
    }

    func messageSync(_ request: HTTPRequestData) throws -> HTTPResponseData {
        let body = try Self.decode(WKMessageSyncRequest.self, request)
        guard !body.loginUID.isEmpty else { throw SandboxRefusal.badRequest("login_uid不能为空！") }
        guard !body.channelID.isEmpty else { throw SandboxRefusal.badRequest("channel_id不能为空！") }
        let key = WuKongSandboxState.key(channelID: body.channelID, type: body.channelType, uid: body.loginUID)
        let (messages, more) = state.withLock {
            $0.sync(key, start: body.startMessageSeq, end: body.endMessageSeq, limit: body.limit, pullMode: body.pullMode)
        }
        return Self.bare(WKMessageSyncResponse(startMessageSeq: body.startMessageSeq, endMessageSeq: body.endMessageSeq,
                                               more: more, messages: messages.map(WuKongSandboxState.render)))
    }

    func lookup(_ request: HTTPRequestData) throws -> HTTPResponseData {
        let body = try Self.decode(WKLookupRequest.self, request)
        let key = WuKongSandboxState.key(channelID: body.channelID, type: body.channelType, uid: body.loginUID ?? "")
        let found = state.withLock { state in
            (state.messages[key] ?? []).filter { message in
                (body.messageSeqs ?? []).contains(message.messageSeq) || (body.messageIDs ?? []).contains(message.messageID)
                    || (body.clientMsgNos ?? []).contains(message.clientMsgNo)
            }
        }
        return Self.bare(WKMessageSyncResponse(startMessageSeq: 0, endMessageSeq: 0, more: 0,
                                               messages: found.map(WuKongSandboxState.render)))
    }

    func clearUnread(_ request: HTTPRequestData) throws -> HTTPResponseData {
        let body = try Self.decode(WKClearUnreadRequest.self, request)
        let key = WuKongSandboxState.key(channelID: body.channelID, type: body.channelType, uid: body.uid)
        state.withLock { $0.readTo[body.uid, default: [:]][key] = $0.lastSeq(key) }
        return Self.ok()
    }

    struct SendReply: Encodable {
        struct Data: Encodable {
            var messageID: Int64
            var clientMsgNo: String
            enum CodingKeys: String, CodingKey { case messageID = "message_id", clientMsgNo = "client_msg_no" }
        }
        var status: Int
        var data: Data
    }
}
