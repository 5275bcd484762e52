import JMessage
import Foundation
import IMCore
import IMHTTP
import IMSandbox

/// `POST /v1/messages` and retract. A group message needs a group that exists (899006) with its sender
/// (the admin) among the members (803005); a group message is retracted only by a sender still in the
/// group (803005); docs/adapters/jmessage.md, "Conversations".
extension JMessageSandboxStore {
    /// Body fields each `msg_type` requires (file/location/video as docs/adapters/jmessage.md describes them).
    static let requiredBodyFields: [String: [String]] = [
        "text": ["text"],
        "image": ["media_id", "media_crc32", "width", "height", "format", "fsize"],
        "voice": ["media_id", "media_crc32", "duration", "fsize"],
        "file": ["media_id", "media_crc32", "fsize", "fname"],
        "location": ["latitude", "longitude"],
        "video": ["video"],
        "custom": [],
    ]

    /// The `media_id`s a message body names: image, voice and file bodies' own, a video's file and cover.
    /// Each must come from this app's `POST /v1/resource` (JMessage documents media bodies as the upload's
    /// answer; what it answers for another id is unconfirmed, so the strict reading: 899003).
    static func mediaIDs(_ msgType: String, _ fields: [String: JSONValue]) -> [String] {
        switch msgType {
        case "image", "voice", "file": return [fields["media_id"]?.stringValue ?? ""]
        case "video": return [fields["video"]?["media_id"], fields["thumb"]?["media_id"]].compactMap { $0?.stringValue }
        default: return []
        }
    }

    func send(_ request: HTTPRequestData) async -> HTTPResponseData {
        guard let body = try? JSONValue.parse(Data(request.body)), body.objectValue != nil else {
            return JMessageSandbox.error(JMessageErrors.invalidParameter, "body is not a JSON object")
        }
        guard let targetType = body["target_type"]?.stringValue, ["single", "group", "chatroom"].contains(targetType),
              let targetID = body["target_id"]?.stringValue, !targetID.isEmpty,
              let fromID = body["from_id"]?.stringValue, let msgType = body["msg_type"]?.stringValue,
              let msgBody = body["msg_body"], let fields = msgBody.objectValue else {
            return JMessageSandbox.error(JMessageErrors.invalidParameter, "target_type, target_id, from_type, from_id, msg_type and msg_body are required")
        }
        guard body["version"]?.int64Value != nil else { return JMessageSandbox.error(JMessageErrors.invalidParameter, "version is required") }
        guard Self.messageTypes.contains(msgType) else { return JMessageSandbox.error(JMessageErrors.invalidParameter, "msg_type \(msgType) is invalid") }
        let missing = (Self.requiredBodyFields[msgType] ?? []).filter { fields[$0] == nil }
        guard missing.isEmpty else { return JMessageSandbox.error(JMessageErrors.invalidParameter, "msg_body lacks \(missing.joined(separator: ", "))") }
        if msgType == "text", fields["text"]?.stringValue == nil { return JMessageSandbox.error(JMessageErrors.invalidParameter, "text must be a string") }
        if let extras = fields["extras"], extras.objectValue == nil { return JMessageSandbox.error(JMessageErrors.invalidParameter, "extras must be an object") }
        if let unknown = Self.mediaIDs(msgType, fields).first(where: { media[$0] == nil }) {
            return JMessageSandbox.error(JMessageErrors.invalidParameter, "media_id \(unknown) is not one of this app's uploads")
        }
        let size = msgBody.jsonData().count
        guard size <= 4096 else { return JMessageSandbox.error(JMessageErrors.invalidParameter, "msg_body is \(size) bytes, more than 4096") }
        guard let sender = users[fromID] else { return JMessageSandbox.error(JMessageErrors.userNotFound, "from_id \(fromID) not exist") }
        guard body["from_type"]?.stringValue == "admin", sender.isAdmin else {
            return JMessageSandbox.error(JMessageErrors.noSendPermission, "from_id \(fromID) has no permission to send message")
        }
        let targetAppKey = body["target_appkey"]?.stringValue ?? ""
        let crossApp = !targetAppKey.isEmpty && targetAppKey.caseInsensitiveCompare(appKey) != .orderedSame
        switch targetType {
        case "single" where !crossApp:
            guard users[targetID] != nil else { return JMessageSandbox.error(JMessageErrors.userNotFound, "target_id \(targetID) not exist") }
        case "group":
            guard let gid = Int64(targetID), let group = groups[gid] else { return JMessageSandbox.error(JMessageErrors.groupNotFound, "group \(targetID) not exist") }
            // The admin sends, and must be in the group like any sender (strict reading: docs/adapters/jmessage.md, "Conversations").
            guard group.members.contains(fromID) else { return JMessageSandbox.error(JMessageErrors.senderNotInGroup, "from_id \(fromID) is not in group \(targetID)") }
        default:
            break
        }
        let now = clock.nowMs()
        let msgid = nextMsgID
        nextMsgID += 1
        let fromName = body["from_name"]?.stringValue
        let stored = JMHistoryMessage(
            targetType: targetType, targetID: targetID, targetName: body["target_name"]?.stringValue ?? "", targetAppKey: targetAppKey,
            fromType: "admin", fromID: fromID, fromName: fromName ?? "", fromAppKey: appKey, fromPlatform: "api",
            msgType: msgType, msgBody: msgBody, createTime: now / 1000, msgCtime: now, msgid: msgid, msgLevel: crossApp ? 1 : 0,
            setFromName: fromName == nil ? 0 : 1,
            noOffline: body["no_offline"].flatMap(JMHistoryMessage.bool) ?? false,
            noNotification: body["no_notification"].flatMap(JMHistoryMessage.bool) ?? false,
            notification: body["notification"].flatMap { note in
                note.objectValue == nil ? nil : JMNotification(title: note["title"]?.stringValue, alert: note["alert"]?.stringValue)
            })
        messages.append(stored)
        // Handed over before any suspension, so pushes leave in the order the messages were stored (an
        // `await enqueue` lets another request's message reach the deliverer first: docs/reliability.md, Finding 12).
        push?.submit([stored])
        await push?.takeSubmitted()
        return .json(JMSendResult(msgID: msgid, msgCtime: now), status: 201)
    }

    func retract(username: String, msgid text: String) -> HTTPResponseData {
        guard let msgid = Int64(text), let message = messages.first(where: { $0.msgid == msgid }) else {
            return JMessageSandbox.error(JMessageErrors.retractNotFound, "retract message is not exist")
        }
        guard message.fromID == username else { return JMessageSandbox.error(JMessageErrors.retractNotSender, "request retract message is not the sender") }
        if message.targetType == "group", !(Int64(message.targetID).flatMap { groups[$0] }?.members.contains(username) ?? false) {
            return JMessageSandbox.error(JMessageErrors.senderNotInGroup, "\(username) is no longer in group \(message.targetID)")
        }
        guard !retracted.contains(msgid) else { return JMessageSandbox.error(JMessageErrors.alreadyRetracted, "message had been retracted") }
        guard clock.nowMs() - message.msgCtime <= Self.retractWindowMs else {
            return JMessageSandbox.error(JMessageErrors.retractExpired, "out of retract message time, the effective time is within 3 minutes")
        }
        retracted.insert(msgid)
        return HTTPResponseData(status: 204)
    }

    // MARK: introspection

    func records() -> [SandboxMessageRecord] {
        let identity = JMessageIdentity(appKey: appKey, admin: "")
        return messages.map { wire in
            let from = identity.userID(username: wire.fromID, appKey: wire.fromAppKey)
            let peer = identity.userID(username: wire.targetID, appKey: wire.targetAppKey)
            let (type, conversationID, to): (String, String, String) = switch wire.targetType {
            case "single": ("direct", ConversationRef.direct(from, peer).id, peer.rawValue)
            case "group": ("group", wire.targetID, wire.targetID)
            default: ("chatroom", wire.targetID, wire.targetID)
            }
            let decoded = try? JMessageContentCodec().decode(msgType: wire.msgType, body: wire.msgBody)
            let kind = decoded.map { $0.content.kind == .unsupported ? "custom" : $0.content.kind.rawValue } ?? "custom"
            let raw = (try? JSONValue.parse(JSONEncoder().encode(wire))) ?? .null
            return SandboxMessageRecord(id: String(wire.msgid), conversationType: type, conversationID: conversationID, from: from.rawValue,
                                        to: to, sentAtMs: wire.msgCtime, kind: kind, text: decoded?.content.digest ?? "",
                                        recalled: retracted.contains(wire.msgid), raw: raw)
        }
    }
}
