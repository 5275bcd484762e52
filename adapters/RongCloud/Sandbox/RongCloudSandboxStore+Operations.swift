import IMHTTP
import IMCore
import RongCloud

extension RongCloudSandboxStore {
    // MARK: recall

    /// `/message/recall.json`: returns the routed `RC:RcCmd` (nil when the message was already recalled).
    public func recall(_ form: FormBody) throws(RongCloudSandboxError) -> RCRoutedMessage? {
        let from = try Self.required(form, "fromUserId")
        let uid = try Self.required(form, "messageUID")
        let targetId = try Self.required(form, "targetId")
        guard let type = Lenient.int64(form["conversationType"]).flatMap({ RCConversationType(rawValue: Int($0)) }) else {
            throw .parameter("conversationType must be 1, 3, 4, 6 or 10")
        }
        let now = clock.nowMs()
        return try mutate { (state: inout State) throws(RongCloudSandboxError) -> RCRoutedMessage? in
            var message = try state.message(uid)
            guard message.fromUserId == from else { throw .parameter("\(RongCloudRefusal.notSender): \(uid)") }
            try Self.checkTarget(message, type: type, targetId: targetId, user: from)
            if message.isRecalled { return nil }
            let time = state.nextTime(now)
            message.recalledBy = from
            message.recalledAt = time
            message.recallDeleted = Lenient.bool(form["isDelete"]) ?? false
            state.messages[state.index[uid]!] = message
            let command = RCRecallCommand(messageUId: uid, conversationType: type.rawValue, targetId: targetId,
                                            sentTime: message.msgTime, isAdmin: Lenient.bool(form["isAdmin"]) ?? false,
                                            isDelete: message.recallDeleted)
            return RCRoutedMessage(fromUserId: from, toUserId: message.targetId, objectName: RCObjectName.recallCommand,
                                     content: command.json.jsonString(), channelType: message.channelType,
                                     msgTimestamp: time, msgUID: state.nextUID(time), sensitiveType: 0, source: "Server")
        }
    }

    /// The conversation named by `type` + `targetId` must be the message's. For a private message
    /// `targetId` may name either of its two users (which one the vendor expects is UNCONFIRMED).
    static func checkTarget(_ message: RongCloudStoredMessage, type: RCConversationType, targetId: String,
                            user: String) throws(RongCloudSandboxError) {
        guard type == message.conversationType else {
            throw .parameter("conversationType \(type.rawValue) does not match the message's \(message.conversationType.rawValue)")
        }
        let matches = type == .group ? message.targetId == targetId : message.involves(targetId)
        guard matches else { throw .parameter("targetId \(targetId) does not match the message's conversation") }
    }

    static func required(_ form: FormBody, _ field: String) throws(RongCloudSandboxError) -> String {
        guard let value = form[field], !value.isEmpty else { throw .parameter("\(field) is required") }
        return value
    }

    // MARK: expansions

    /// `/message/expansion/set.json` (`extraKeyVal`) and `/delete.json` (`extraKey`): applies the change
    /// and returns the routed `RC:MsgExMsg` (nil when no key changed).
    public func updateExpansion(_ form: FormBody, delete: Bool) throws(RongCloudSandboxError) -> RCRoutedMessage? {
        let uid = try Self.required(form, "msgUID")
        let user = try Self.required(form, "userId")
        let targetId = try Self.required(form, "targetId")
        guard let type = Lenient.int64(form["conversationType"]).flatMap({ RCConversationType(rawValue: Int($0)) }),
              type == .private || type == .group else {
            throw .parameter("conversationType must be 1 (private) or 3 (group) for message expansions")
        }
        let change: ExpansionChange
        if delete {
            let text = try Self.required(form, "extraKey")
            guard let array = (try? JSONValue.parse(text))?.arrayValue else { throw .parameter("extraKey must be a JSON array") }
            let keys = array.compactMap(\.stringValue)
            guard keys.count == array.count, !keys.isEmpty else { throw .parameter("extraKey must list keys as strings") }
            change = .remove(keys)
        } else {
            change = .set(try Self.stringObject(try Self.required(form, "extraKeyVal"), field: "extraKeyVal"))
        }
        let now = clock.nowMs()
        return try mutate { (state: inout State) throws(RongCloudSandboxError) -> RCRoutedMessage? in
            var message = try state.message(uid)
            try Self.checkTarget(message, type: type, targetId: targetId, user: user)
            guard message.expansionEnabled else { throw .parameter("\(RongCloudRefusal.notExtensible): \(uid)") }
            let current = RongCloudExpansionCodec.expansion(from: message.expansion)
            try check(change, current: current)
            var signal = RCExpansionSignal(mid: uid)
            switch change {
            case .set(let values):
                signal.put = values.filter { message.expansion[$0.key]?.v != $0.value }
            case .remove(let keys):
                signal.del = Set(keys).filter { message.expansion[$0] != nil }.sorted()
            case .clear:
                break
            }
            guard !signal.put.isEmpty || !signal.del.isEmpty else { return nil }
            let time = state.nextTime(now)
            for (key, value) in signal.put { message.expansion[key] = RCExpansionValue(v: value, ts: time) }
            for key in signal.del { message.expansion.removeValue(forKey: key) }
            state.messages[state.index[uid]!] = message
            let to = type == .group ? message.targetId : (message.fromUserId == user ? message.targetId : message.fromUserId)
            return RCRoutedMessage(fromUserId: user, toUserId: to, objectName: RCObjectName.expansionSignal,
                                     content: signal.json.jsonString(), channelType: message.channelType,
                                     msgTimestamp: time, msgUID: state.nextUID(time), sensitiveType: 0, source: "Server")
        }
    }

    /// `/message/expansion/query.json`: every key with its value and `ts`.
    public func queryExpansion(_ form: FormBody) throws(RongCloudSandboxError) -> RCExpansionQueryResponse {
        let uid = try Self.required(form, "msgUID")
        let message = try state.withLock { state throws(RongCloudSandboxError) in try state.message(uid) }
        guard message.expansionEnabled else { throw .parameter("\(RongCloudRefusal.notExtensible): \(uid)") }
        return RCExpansionQueryResponse(extraContent: message.expansion)
    }

    // MARK: history

    /// `/v3/message/{private,group}/query.json`: stored messages of one conversation between the two
    /// bounds, at most `pageSize` (1…100).
    ///
    /// The vendor's direction (docs/adapters/rongcloud.md §4 #14): `startTime` is the newer bound and
    /// `endTime` the older one; rows run from `startTime` back towards `endTime`, newest first, and
    /// `includeStart` says whether a message exactly at `startTime` is included (paging: the next
    /// `startTime` is the oldest `msgTime` returned). A window written the other way round
    /// (`startTime < endTime`) is refused with 1002: the vendor's own tool text says `endTime` must be
    /// earlier, and what the vendor answers otherwise is not confirmed, so the sandbox takes the strict
    /// reading. A recalled message shows as the `RC:RcNtf` clients display; one recalled with `isDelete=1`
    /// is gone.
    public func history(_ query: RCHistoryQuery, group: Bool) throws(RongCloudSandboxError) -> RCHistoryResponse {
        guard (1...RCHistoryQuery.maxPageSize).contains(query.pageSize) else {
            throw .parameter("pageSize must be 1…\(RCHistoryQuery.maxPageSize)")
        }
        guard query.startTime >= query.endTime else {
            throw .parameter("endTime (\(query.endTime)) must be earlier than startTime (\(query.startTime)): rows run from startTime back")
        }
        let (older, newer) = (query.endTime, query.startTime)
        let rows = state.withLock { state in
            let matching = state.messages.filter { message in
                guard message.persisted, !message.recallDeleted else { return false }
                guard message.msgTime >= older, message.msgTime <= newer else { return false }
                if !query.includeStart, message.msgTime == query.startTime { return false }
                if group { return message.conversationType == .group && message.targetId == query.targetId }
                return message.conversationType == .private && message.involves(query.userId) && message.involves(query.targetId)
                    && (query.userId != query.targetId || message.fromUserId == message.targetId)
            }
            // Newest first by the server's time (stable: rows of one millisecond newest-stored first).
            return matching.enumerated().sorted { ($0.element.msgTime, $0.offset) > ($1.element.msgTime, $1.offset) }
                .prefix(query.pageSize).map { Self.historyRow($0.element) }
        }
        return RCHistoryResponse(data: Array(rows))
    }

    static func historyRow(_ message: RongCloudStoredMessage) -> RCHistoryMessage {
        var objectName = message.objectName
        var content = message.content
        if let by = message.recalledBy, let at = message.recalledAt {
            objectName = RCObjectName.recallNotification
            content = JSONValue.object([
                "operatorId": .string(by), "recallTime": .int(at), "originalObjectName": .string(message.objectName),
                "isAdmin": .bool(false), "isDelete": .bool(false),
            ]).jsonString()
        }
        let extra = message.expansionEnabled
            ? JSONValue.object(message.expansion.mapValues { ["v": .string($0.v), "ts": .int($0.ts)] }).jsonString() : nil
        return RCHistoryMessage(targetId: message.targetId, fromUserId: message.fromUserId, messageUID: message.msgUID,
                                  msgTime: message.msgTime, objectName: objectName, content: content,
                                  expansion: message.expansionEnabled, extraContent: extra)
    }
}
