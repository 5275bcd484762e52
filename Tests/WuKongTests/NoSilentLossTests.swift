import Foundation
import IMCore
import Testing
import WuKong

/// What a WuKong CMD or edit carries besides its neutral content reaches the event, and writing the
/// event's content back with it gives the payload WuKong sent (`vendorExtras` are "never dropped").
@Suite struct NoSilentLossTests {
    let codec = WuKongContentCodec()

    /// The iOS SDK's `WKCMDContent` adds `sign`; it used to vanish between the message and the command event.
    @Test func cmdParametersBeyondTheNameStayWithTheCommandEvent() throws {
        let payload = #"{"type":99,"cmd":"groupAvatarUpdate","param":{"group_no":"g1"},"sign":"c2lnbmF0dXJl","robot":true}"#
        let wire = WKMessage(header: WKHeader(syncOnce: 1), messageID: 31, fromUID: "u1", channelID: "u2____cmd", channelType: 1,
                             timestamp: 5, payload: Data(payload.utf8))
        let actions = try WuKongInboundMapper(backend: "wk", codec: WuKongMessageCodec(content: codec)).actions(for: wire)
        guard case .event(let event)? = actions.first, case .command(_, _, let command, _) = event.kind else {
            Issue.record("not a command event: \(actions)"); return
        }
        #expect(command == CommandContent(name: "groupAvatarUpdate", data: ["group_no": "g1"]))
        #expect(event.vendorExtras["payload_fields"] == ["sign": "c2lnbmF0dXJl", "robot": true])
        let back = try codec.encode(.command(command), mentions: event.mentions, reply: event.reply, vendorExtras: event.vendorExtras)
        #expect(JSONValue.object(back) == (try JSONValue.parse(Data(payload.utf8))), "written back: \(JSONValue.object(back).jsonString())")
    }

    /// An edit whose new payload mentions someone and quotes a message keeps both, and its kept keys.
    @Test func anEditKeepsItsMentionsReplyAndKeptKeys() throws {
        let edited: JSONValue = ["type": 1, "content": "@bob 改好了", "mention": ["uids": ["bob"]],
                                 "reply": ["message_id": "9", "from_uid": "bob", "payload": ["type": 1, "content": "在吗"]],
                                 "entities": [["offset": 0, "length": 4, "type": "mention"]], "format": "html"]
        var row = WKMessageExtra(messageID: 11, messageSeq: 1, extraVersion: 1)
        row.contentEdit = edited
        row.editedAt = 1_700_000_100
        let events = WuKongExtrasCodec(backend: "wk", content: codec).events(rows: [(nil, row)], conversation: .group("g1"), actor: "alice", at: 9)
        guard let event = events.first(where: { $0.kindName == "edited" }), case .edited(_, _, _, let content, _) = event.kind else {
            Issue.record("no edit event: \(events)"); return
        }
        #expect(content == .text("@bob 改好了"))
        #expect(event.mentions == Mentions(users: ["bob"]))
        #expect(event.reply == ReplyRef(messageID: "9", sender: "bob", digest: "在吗"))
        let back = try codec.encode(content, mentions: event.mentions, reply: event.reply, vendorExtras: event.vendorExtras)
        #expect(JSONValue.object(back) == edited, "written back: \(JSONValue.object(back).jsonString())")
    }

    /// Events stored before the new fields existed still decode.
    @Test func olderEventJSONDecodes() throws {
        let event = IMEvent(eventID: "cmd:1", backend: "wk", kind: .command(conversation: .group("g"), sender: "u", content: CommandContent(name: "x"), at: 1),
                            vendorExtras: ["sign": "s"])
        let data = try JSONEncoder().encode(event)
        #expect(try JSONDecoder().decode(IMEvent.self, from: data) == event)
        var object = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
        object.removeValue(forKey: "mentions")
        object.removeValue(forKey: "vendorExtras")
        let old = try JSONDecoder().decode(IMEvent.self, from: JSONSerialization.data(withJSONObject: object))
        #expect(old.eventID == "cmd:1" && old.vendorExtras.isEmpty)
    }
}
