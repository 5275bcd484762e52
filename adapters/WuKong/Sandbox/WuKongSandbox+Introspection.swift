import Foundation
import IMCore
import IMHTTP
import IMSandbox
import WuKong

/// `GET /_sandbox/messages` and `/_sandbox/users`: every stored chat message (CMD channels left out) in
/// `message_id` order, with the business server's revoke/edit/extra state folded in.
extension WuKongSandbox {
    public func messages() async -> [SandboxMessageRecord] {
        let snapshot = state.withLock { state in
            state.messages.filter { !$0.key.isCmd }.flatMap { key, messages in
                messages.map { ($0, state.extras[key]?[$0.messageID]) }
            }
        }
        return snapshot.sorted { $0.0.messageID < $1.0.messageID }.map { stored, extra in record(stored, extra: extra) }
    }

    func record(_ stored: WKMessage, extra: WKMessageExtra?) -> SandboxMessageRecord {
        let rendered = WuKongSandboxState.render(stored)
        let message = try? codec.decode(rendered)
        let conversation = message?.conversation
            ?? WuKongChannel.conversation(channelID: rendered.channelID, channelType: rendered.channelType, fromUID: stored.fromUID)
        let type: String = switch conversation.kind {
        case .direct: "direct"
        case .group: "group"
        case .chatroom: "chatroom"
        default: conversation.kind.description
        }
        var content = message?.content ?? .text("")
        if case .object(let edited)? = extra?.contentEdit, let decoded = try? codec.content.decode(edited) {
            content = decoded.content
        }
        let kind: String = switch content.kind {
        case .unsupported: "custom"
        default: content.kind.rawValue
        }
        let to = conversation.kind == .direct ? (conversation.peer(of: UserID(stored.fromUID))?.rawValue ?? "") : conversation.id
        let raw = (try? JSONValue.parse(WuKongJSON.encode(rendered))) ?? .null
        return SandboxMessageRecord(
            id: String(stored.messageID), conversationType: type, conversationID: conversation.id,
            from: stored.fromUID, to: to, sentAtMs: stored.timestamp * 1000, kind: kind,
            text: content.digest, recalled: extra?.revoke == 1, edited: (extra?.editedAt ?? 0) > 0,
            expansion: extra?.extra ?? [:], raw: raw)
    }

    public func users() async -> [JSONValue] {
        state.withLock { state in
            state.devices.keys.sorted().map { uid in
                let devices = (state.devices[uid] ?? [:]).sorted { $0.key < $1.key }
                    .map { JSONValue.object(["device_flag": .int(Int64($0.key)), "token": .string($0.value)]) }
                return .object(["uid": .string(uid), "devices": .array(devices)])
            }
        }
    }
}

/// `GET /_sandbox/extras-served` → `{"served":[{"message_id","text","limit"}…]}`: each edited content an
/// extras read (`/v1/message/extra/sync`) returned, once per (message, content, limit). WuKongIM keeps only a
/// message's latest edit, so an edit overwritten before any read was never there to relay; the campaign's
/// checker tells such an edit from a lost one with this (docs/reliability.md, "Final state").
struct EditServed: Hashable, Sendable {
    var content: JSONValue
    var limit: Int
}

extension WuKongSandbox {
    func noteEditsServed(_ rows: [WKMessageExtra], limit: Int) {
        let edited = rows.compactMap { row in row.contentEdit.map { (row.messageID, EditServed(content: $0, limit: limit)) } }
        guard !edited.isEmpty else { return }
        editsServed.withLock { served in
            for (id, edit) in edited where !(served[id] ?? []).contains(edit) { served[id, default: []].append(edit) }
        }
    }

    public func handleSandboxExtra(_ request: HTTPRequestData) async -> HTTPResponseData? {
        if request.method == "GET", request.normalizedPath == "/_sandbox/reactions-served" { return reactionsServedAnswer() }
        guard request.method == "GET", request.normalizedPath == "/_sandbox/extras-served" else { return nil }
        let served = editsServed.withLock { $0 }.sorted { $0.key < $1.key }.flatMap { id, edits in
            edits.map { edit -> JSONValue in
                var text = ""
                if case .object(let object) = edit.content, let decoded = try? codec.content.decode(object) { text = decoded.content.digest }
                return .object(["message_id": .string(String(id)), "text": .string(text), "limit": .int(Int64(edit.limit))])
            }
        }
        return .json(["served": JSONValue.array(served)])
    }
}

/// `GET /_sandbox/reactions-served` → `{"served":[{"message_id","uid","emoji","toggle"}…]}`: each reaction
/// row's version (`toggle`: its 1st, 2nd … toggle) that a reaction read from a cursor past 0 returned.
/// The business server keeps one row per message, user and emoji and gives it a new `seq` on each toggle
/// (docs/adapters/wukong.md), so a toggle overwritten before any read was never there to relay; the
/// campaign's checker tells such a toggle from a lost one with this. Reads from cursor 0 are left out:
/// the adapter's `toggleReaction` reads the whole state back that way after every toggle it makes.
extension WuKongSandbox {
    func reactionsServedAnswer() -> HTTPResponseData {
        let (toggles, served) = reactionsServed.withLock { ($0.toggles, $0.served) }
        var rows: [JSONValue] = []
        for (row, seqs) in toggles.sorted(by: { $0.key < $1.key }) {
            let parts = row.split(separator: "|", maxSplits: 2).map(String.init)
            guard parts.count == 3 else { continue }
            for (index, seq) in seqs.enumerated() where served.contains("\(row)|\(seq)") {
                rows.append(.object(["message_id": .string(parts[0]), "uid": .string(parts[1]), "emoji": .string(parts[2]),
                                     "toggle": .int(Int64(index + 1))]))
            }
        }
        return .json(["served": JSONValue.array(rows)])
    }
}
