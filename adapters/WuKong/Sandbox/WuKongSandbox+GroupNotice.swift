import Foundation
import IMCore
import WuKong

/// The business server's "group created" notice (docs/adapters/wukong.md, "Users and groups"): after
/// `/v1/group/create` it sends, through WuKongIM and from the system uid (`from_uid` ""), a stored
/// type 1001 message into the new group channel: `content` a template naming the creator `{0}` and the
/// invited members `{1}`, `{2}` …, `extra` the `{"uid","name"}` of each placeholder, `creator`,
/// `creator_name` and the group's `version`. Every member thus has a conversation with the group.
extension WuKongSandbox {
    func announceCreation(of groupNo: String, creator: String, members: [String], version: Int64) {
        let invited = members.filter { $0 != creator }
        let names = directory.withLock { directory in
            Dictionary(([creator] + invited).map { ($0, directory.users[$0]?["name"]?.stringValue.flatMap { $0.isEmpty ? nil : $0 } ?? $0) }) { first, _ in first }
        }
        let placeholders = invited.indices.map { "{\($0 + 1)}" }.joined(separator: "、")
        let extra: [JSONValue] = ([creator] + invited).map { .object(["uid": .string($0), "name": .string(names[$0] ?? $0)]) }
        let payload: JSONValue = .object([
            "type": .int(Int64(WKContentType.groupCreated)), "content": .string("{0}邀请\(placeholders)加入群聊"),
            "extra": .array(extra), "creator": .string(creator), "creator_name": .string(names[creator] ?? creator),
            "version": .int(version),
        ])
        let request = WKSendRequest(header: WKHeader(noPersist: 0, redDot: 1, syncOnce: 0), fromUID: "", channelID: groupNo,
                                    channelType: WKChannelType.group, payload: payload.jsonData())
        state.withLock { state in
            let message = state.store(request, key: .init(id: groupNo, type: WKChannelType.group), nowMs: clock.nowMs())
            publish(message, in: state)
        }
    }
}
