import IMCore
import IMSandbox
import RongCloud

extension RongCloudSandbox {
    /// A stored message in the shared introspection shape (`SandboxMessageRecord`); `raw` is the message
    /// as the vendor's history query shows it, plus the sandbox's recall facts.
    func record(_ message: RongCloudStoredMessage) -> SandboxMessageRecord {
        let decoded = try? codec.decode(objectName: message.objectName, content: message.content)
        let kind: String
        switch decoded?.content.kind {
        case .some(.unsupported), .none: kind = "custom"
        case .some(let other): kind = other.rawValue
        }
        let text: String = if case .text(let text)? = decoded?.content { text.text } else { decoded?.content.digest ?? "[\(message.objectName)]" }
        let group = message.conversationType == .group
        var raw: [String: JSONValue] = [
            "msgUID": .string(message.msgUID), "fromUserId": .string(message.fromUserId), "targetId": .string(message.targetId),
            "conversationType": .int(Int64(message.conversationType.rawValue)), "objectName": .string(message.objectName),
            "content": .string(message.content), "msgTime": .int(message.msgTime), "isPersisted": .bool(message.persisted),
            "expansion": .bool(message.expansionEnabled),
            "extraContent": .object(message.expansion.mapValues { ["v": .string($0.v), "ts": .int($0.ts)] }),
        ]
        if let by = message.recalledBy { raw["recalledBy"] = .string(by) }
        if let at = message.recalledAt { raw["recallTime"] = .int(at) }
        return SandboxMessageRecord(
            id: message.msgUID, conversationType: group ? "group" : "direct",
            conversationID: group ? message.targetId : ConversationRef.direct(UserID(message.fromUserId), UserID(message.targetId)).id,
            from: message.fromUserId, to: message.targetId, sentAtMs: message.msgTime, kind: kind, text: text,
            recalled: message.isRecalled, expansion: message.expansion.mapValues(\.v), raw: .object(raw),
            receivedAtUs: message.receivedAtUs)
    }
}
