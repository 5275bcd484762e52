import IMCore

/// Commands ⇄ NIM custom system notifications (`/msg/sendAttachMsg.action`, copies with convType
/// CUSTOM_PERSON / CUSTOM_TEAM and msgType CUSTOM_P2P_MSG / CUSTOM_TEAM_MSG). They are not stored and
/// not roamed, like neutral commands.
///
/// The `attach` the adapter writes is `{"name":<command name>,"data":<data>}`; an attach of any other
/// shape (sent by an app) arrives as the command `nim.custom_notification` with the parsed attach (or
/// the raw string) as data.
public enum NIMCommandCodec {
    public static let foreignCommandName = "nim.custom_notification"

    /// The sendAttachMsg form: `from`, `msgtype` (0 p2p / 1 team), `to`, `attach`, `save` 1 (online only).
    public static func sendAttachForm(_ command: CommandContent, conversation: ConversationRef, sender: UserID) throws -> [(String, String)] {
        let target = try NIMMessageCodec.target(of: conversation, sender: sender)
        let attach = JSONValue.object(["name": .string(command.name), "data": command.data]).jsonString()
        return [("from", sender.rawValue), ("msgtype", String(target.type.ope)), ("to", target.id), ("attach", attach),
                ("save", "1")]
    }

    /// The command event kind of a custom-notification copy; nil for any other copy.
    public static func command(fromCopy copy: NIMCopyEvent) throws -> IMEvent.Kind? {
        guard let convType = copy.convType, convType == "CUSTOM_PERSON" || convType == "CUSTOM_TEAM",
              let msgType = copy.msgType, msgType == "CUSTOM_P2P_MSG" || msgType == "CUSTOM_TEAM_MSG" else { return nil }
        guard let from = copy.fromAccount, let to = copy.to else {
            throw IMError(.malformedPayload, "custom notification copy lacks fromAccount/to")
        }
        let conversation: ConversationRef = convType == "CUSTOM_PERSON" ? .direct(UserID(from), UserID(to)) : .group(GroupID(to))
        let attach = copy.attach ?? ""
        let parsed = try? JSONValue.parse(attach)
        let content: CommandContent
        if let object = parsed?.objectValue, object.count == 2, let name = object["name"]?.stringValue, let data = object["data"] {
            content = CommandContent(name: name, data: data)
        } else {
            content = CommandContent(name: foreignCommandName, data: parsed ?? .string(attach))
        }
        return .command(conversation: conversation, sender: UserID(from), content: content,
                        at: copy.msgTimestamp ?? 0)
    }
}
