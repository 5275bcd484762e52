import IMCore
import NIM
import Testing

/// The send `option` flags read back: the neutral options they say, and the flags the neutral options
/// have no place for (kept under `nim_option` and written again).
@Suite struct NIMSendOptionTests {
    @Test func optionFlagsReadBack() throws {
        let options = MessageOptions(persist: false, countUnread: false, push: false)
        let outgoing = OutgoingMessage(conversation: .direct("alice", "bob"), sender: "alice", content: .text("hi"), options: options,
                                       vendorExtras: [NIMMessageCodec.optionKey: ["route": false, "sendersync": false, "history": true]])
        let form = try NIMCodecTests.codec.sendForm(for: outgoing)
        let read = NIMSendOption(parsing: try JSONValue.parse(form.option.json))
        #expect(read.messageOptions == options)
        #expect(read.unmappedFlags == ["route": false, "sendersync": false], "kept flags written again; `history` follows the options")
        #expect(NIMSendOption().messageOptions == MessageOptions(), "no flags: the vendor's defaults, all true")
    }
}
