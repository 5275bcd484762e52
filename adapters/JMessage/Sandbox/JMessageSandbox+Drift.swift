import Foundation
import IMCore
import IMHTTP
import IMSandbox

/// `POST /_sandbox/drift` (`SandboxDrift`) on the JMessage sandbox's stored messages: what report v2
/// then shows. JMessage keeps no expansions, so an `expansion` drift is refused.
extension JMessageSandbox {
    public func plantDrift(_ drift: SandboxDrift) async throws(SandboxDrift.DriftError) -> String {
        try await store.plantDrift(drift)
    }
}

extension JMessageSandboxStore {
    func plantDrift(_ drift: SandboxDrift) throws(SandboxDrift.DriftError) -> String {
        guard let msgid = Int64(drift.id), let position = messages.firstIndex(where: { $0.msgid == msgid }) else {
            throw .notFound(drift.id)
        }
        var message = messages[position]
        var result = drift.id
        switch drift.operation {
        case .remove:
            messages.remove(at: position)
        case .double:
            let now = max(clock.nowMs(), message.msgCtime + 1)
            message.msgid = nextMsgID
            nextMsgID += 1
            message.msgCtime = now
            message.createTime = now / 1000
            messages.append(message)
            result = String(message.msgid)
        case .text:
            guard message.msgType == "text", case .object(var body) = message.msgBody else {
                throw .unsupported("\(drift.id) is not a stored text message")
            }
            body["text"] = .string(drift.text ?? "")
            message.msgBody = .object(body)
            messages[position] = message
        case .unrecall:
            retracted.remove(msgid)
        case .expansion:
            throw .unsupported("JMessage keeps no message expansions")
        }
        _ = persist(HTTPResponseData(status: 204))
        return result
    }
}
