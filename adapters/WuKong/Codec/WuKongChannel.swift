import IMCore
import IMHTTP

/// Channel naming rules: the neutral `ConversationRef` ⇄ WuKong `(channel_id, channel_type)`.
///
/// - type 1 (person) ⇄ `direct`: a message names the channel by the *other* user relative to its
///   sender (the server renders a stored message's `channel_id` as the recipient; an incoming message's
///   `channel_id` is therefore the reader's own uid). Both forms give `direct(from_uid, channel_id)`.
/// - type 2 ⇄ `group`; type 9 (live) ⇄ `chatroom`; any other type N ⇄ `.other("wk<N>")`, so every
///   channel survives a round trip.
/// - CMD channels carry the suffix `____cmd`; it is stripped before mapping.
public enum WuKongChannel {
    public static let cmdSuffix = "____cmd"
    public static let systemUID = "____system"

    /// The conversation a message belongs to, from its sender and the rendered channel.
    public static func conversation(channelID: String, channelType: UInt8, fromUID: String) -> ConversationRef {
        let id = stripCmdSuffix(channelID)
        switch channelType {
        case WKChannelType.person:
            if let at = id.firstIndex(of: "@") {
                // A fake id `a@b` (lookups by fake id, CMD channels of person channels).
                return .direct(UserID(String(id[..<at])), UserID(String(id[id.index(after: at)...])))
            }
            return .direct(UserID(fromUID.isEmpty ? systemUID : fromUID), UserID(id))
        case WKChannelType.group: return .group(GroupID(id))
        case WKChannelType.live: return .chatroom(id)
        default: return .other("wk\(channelType)", id)
        }
    }

    /// The conversation a `/conversation/sync` entry describes: person entries name the peer of `uid`.
    public static func conversation(peerOrChannel channelID: String, channelType: UInt8, viewer: String) -> ConversationRef {
        channelType == WKChannelType.person ? .direct(UserID(viewer), UserID(channelID)) : conversation(
            channelID: channelID, channelType: channelType, fromUID: viewer)
    }

    /// The `(channel_id, channel_type)` to address when `sender` writes to `conversation`.
    /// Direct: the peer of the sender (the sender must be one of the two users).
    public static func address(_ conversation: ConversationRef, sender: UserID) throws -> (id: String, type: UInt8) {
        switch conversation.kind {
        case .direct:
            guard let peer = conversation.peer(of: sender) else {
                throw IMError(.invalidArgument, "\(sender) is not a participant of \(conversation)")
            }
            return (peer.rawValue, WKChannelType.person)
        case .group: return (conversation.id, WKChannelType.group)
        case .chatroom: return (conversation.id, WKChannelType.live)
        case .other(let kind):
            if kind.hasPrefix("wk"), let type = UInt8(kind.dropFirst(2)) { return (conversation.id, type) }
            throw IMError(.unsupported, "WuKong has no channel type for conversation kind '\(kind)'")
        case .system:
            throw IMError(.unsupported, "WuKong has no system conversations; send from the system uid instead")
        }
    }

    /// The `(channel_id, channel_type)` a reader-independent lookup uses (history, extras): direct
    /// conversations are named by the peer of `viewer` (default: the first participant's peer).
    public static func lookup(_ conversation: ConversationRef, viewer: UserID? = nil) throws -> (loginUID: String, id: String, type: UInt8) {
        if conversation.kind == .direct {
            let users = conversation.participants
            guard users.count == 2 else { throw IMError(.invalidArgument, "bad direct conversation \(conversation)") }
            let me = viewer.flatMap { users.contains($0) ? $0 : nil } ?? users[0]
            return (me.rawValue, conversation.peer(of: me)!.rawValue, WKChannelType.person)
        }
        let address = try address(conversation, sender: viewer ?? "imbridge")
        return (viewer?.rawValue ?? "imbridge", address.id, address.type)
    }

    public static func stripCmdSuffix(_ id: String) -> String {
        id.hasSuffix(cmdSuffix) ? String(id.dropLast(cmdSuffix.count)) : id
    }

    /// The server's storage id of a person channel (`GetFakeChannelIDWith`): `from@to` when
    /// crc32(from) > crc32(to), else `to@from`.
    public static func fakeChannelID(_ a: String, _ b: String) -> String {
        Hashing.crc32(a) > Hashing.crc32(b) ? "\(a)@\(b)" : "\(b)@\(a)"
    }

    /// The rendered `channel_id` of a stored person message: the half of the fake id that is not the sender.
    public static func renderedPersonChannel(fakeID: String, fromUID: String) -> String {
        let parts = fakeID.split(separator: "@", maxSplits: 1).map(String.init)
        guard parts.count == 2 else { return fakeID }
        return parts[0] == fromUID ? parts[1] : parts[0]
    }

    /// `@`, `#`, `&` are refused in uids and channel ids.
    public static func hasSpecialCharacters(_ id: String) -> Bool {
        id.contains { $0 == "@" || $0 == "#" || $0 == "&" }
    }
}
