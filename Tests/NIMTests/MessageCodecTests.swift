import IMCore
import NIM
import Testing

/// Whole messages: bodies with the round-trip hint, history entries, message copies and sendMsg forms.
@Suite struct NIMMessageCodecTests {
    static let codec = NIMCodecTests.codec
    static let table = NIMCodecTests.table

    @Test(arguments: 0..<table.count)
    func decodesAndRoundTripsExactly(row: Int) throws {
        let (type, body, expected) = Self.table[row]
        let decoded = try Self.codec.decodeBody(type: type, body: body)
        #expect(decoded.content == expected)
        let again = try Self.codec.encodeBody(decoded.content, hint: decoded.hint)
        #expect(again.type == type)
        #expect(again.body == body)
    }

    /// A history entry reads as a message whose `vendorExtras` keep what has no neutral home, and the
    /// message writes back to the same entry.
    @Test func historyEntriesRoundTripThroughVendorExtras() throws {
        let ext = #"{"app":"kept","imbridge":{"cid":"c-1","mentions":{"all":false,"users":["bob"]}}}"#
        let entry = NIMHistoryMessage(from: "alice", msgid: 42, msgidclient: "nim-client", sendtime: 1_700_000_000_000, type: 0,
                                      fromclienttype: 16, body: #"{"msg":"hi","flag":1}"#, ext: ext, others: ["antispam": "x"])
        let message = try Self.codec.message(from: entry, in: .direct("alice", "bob"))
        #expect(message.id == "42" && message.clientMessageID == "c-1" && message.mentions == Mentions(users: ["bob"]))
        #expect(message.content == .text("hi"))
        #expect(message.vendorExtras[NIMMessageCodec.bodyHintKey] == .string(#"{"msg":"hi","flag":1}"#))
        #expect(message.vendorExtras[NIMMessageCodec.extKey] == .string(ext))
        #expect(message.vendorExtras["antispam"] == "x" && message.vendorExtras["fromclienttype"] == 16)
        #expect(try Self.codec.historyEntry(from: message) == entry)
    }

    /// Options, mentions and the client id land where NIM reads them.
    @Test func sendFormsCarryOptionsMentionsAndTheClientID() throws {
        let outgoing = OutgoingMessage(conversation: .group("1001"), sender: "alice", content: .text("@bob"), clientMessageID: "c-9",
                                       mentions: Mentions(users: ["bob"]),
                                       options: MessageOptions(persist: false, countUnread: false, push: true))
        let form = try Self.codec.sendForm(for: outgoing)
        #expect(form.ope == 1 && form.to == "1001" && form.type == 0 && form.body == #"{"msg":"@bob"}"#)
        #expect(form.forcepushlist == ["bob"] && form.forcepushall == nil)
        #expect(form.option == NIMSendOption(roam: false, history: false, badge: false, persistent: false))
        let ours = try #require(form.ext.flatMap { try? JSONValue.parse($0) }?["imbridge"])
        #expect(ours["cid"] == "c-9" && ours["mentions"]?["users"] == ["bob"])
        #expect(throws: IMError.self) {
            _ = try Self.codec.sendForm(for: OutgoingMessage(conversation: .chatroom("r"), sender: "alice", content: .text("x")))
        }
    }
}
