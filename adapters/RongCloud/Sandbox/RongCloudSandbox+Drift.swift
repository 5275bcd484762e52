import Foundation
import IMCore
import IMSandbox
import RongCloud

/// `POST /_sandbox/drift` (`SandboxDrift`) on the RongCloud sandbox's stored messages: what history
/// (`/v3/message/*/query.json`) then shows. A text drift rewrites the `content` field of an `RC:TxtMsg`.
extension RongCloudSandbox {
    public func plantDrift(_ drift: SandboxDrift) async throws(SandboxDrift.DriftError) -> String {
        try store.plantDrift(drift)
    }
}

extension RongCloudSandboxStore {
    func plantDrift(_ drift: SandboxDrift) throws(SandboxDrift.DriftError) -> String {
        let now = clock.nowMs()
        do throws(RongCloudSandboxError) {
            return try mutate { (state: inout State) throws(RongCloudSandboxError) -> String in
                guard let position = state.index[drift.id] else { throw RongCloudSandboxError(404, drift.id) }
                var message = state.messages[position]
                switch drift.operation {
                case .remove:
                    state.messages.remove(at: position)
                    state.reindex()
                    return drift.id
                case .double:
                    let time = state.nextTime(now)
                    message.msgUID = state.nextUID(time)
                    message.msgTime = time
                    message.receivedAtUs = Int64(Date().timeIntervalSince1970 * 1_000_000)
                    state.messages.append(message)
                    state.reindex()
                    return message.msgUID
                case .text:
                    guard message.objectName == "RC:TxtMsg", case .object(var body)? = try? JSONValue.parse(Data(message.content.utf8)) else {
                        throw RongCloudSandboxError(400, "\(drift.id) is not a stored RC:TxtMsg")
                    }
                    body["content"] = .string(drift.text ?? "")
                    message.content = JSONValue.object(body).jsonString()
                case .unrecall:
                    message.recalledBy = nil
                    message.recalledAt = nil
                    message.recallDeleted = false
                case .expansion:
                    guard message.expansionEnabled, let key = drift.key else {
                        throw RongCloudSandboxError(400, "\(drift.id) was not published with expansion=true")
                    }
                    if let value = drift.value {
                        message.expansion[key] = RCExpansionValue(v: value, ts: state.nextTime(now))
                    } else {
                        message.expansion[key] = nil
                    }
                }
                state.messages[position] = message
                return drift.id
            }
        } catch {
            throw error.code == 404 ? .notFound(drift.id) : .unsupported(error.message)
        }
    }
}
