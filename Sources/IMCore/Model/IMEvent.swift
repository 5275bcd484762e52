/// Something that happened on a backend, as the backend's event stream delivers it.
///
/// `eventID` is stable across redelivery: a vendor that posts the same callback twice produces two
/// events with one `eventID`, and the bridge's ledger keeps one. Adapters derive it from the vendor's
/// own ids (message id, recall of message id, expansion version …), never from arrival time.
public struct IMEvent: Hashable, Sendable, Codable {
    public enum Kind: Hashable, Sendable, Codable {
        /// A new stored message.
        case message(Message)
        /// A message's content was replaced; `content` is the latest.
        case edited(messageID: MessageID, conversation: ConversationRef, by: UserID, content: MessageContent, at: Int64)
        case recalled(messageID: MessageID, conversation: ConversationRef, by: UserID, at: Int64)
        /// Only the keys that changed (see `ExpansionDelta`).
        case expansionChanged(messageID: MessageID, conversation: ConversationRef, by: UserID?, delta: ExpansionDelta)
        /// `added` false when the same user's same emoji was toggled off.
        case reaction(messageID: MessageID, conversation: ConversationRef, user: UserID, emoji: String, added: Bool, at: Int64)
        /// `user` has read everything in `conversation` up to and including `upTo`.
        case read(conversation: ConversationRef, user: UserID, upTo: MessageID, at: Int64)
        /// A transient signalling message (never stored).
        case command(conversation: ConversationRef, sender: UserID, content: CommandContent, at: Int64)
        /// A message was deleted: for everyone (`forUser` nil) — gone, unlike a recall, which leaves a trace —
        /// or only from `forUser`'s view (docs/mappings.md, "Deletion").
        case deleted(messageID: MessageID, conversation: ConversationRef, by: UserID, forUser: UserID?, at: Int64)
        /// Members joined or left a group (`by`: who added or removed them, nil when they acted themselves or
        /// the vendor does not say). The bridge compares the group again (docs/architecture.md, "Groups").
        case membersChanged(group: GroupID, joined: [UserID], left: [UserID], by: UserID?, at: Int64)
        /// The group was dissolved (`by`: who dissolved it, nil when the vendor does not say). The bridge
        /// dissolves the target group, or leaves it with a notice (docs/architecture.md, "Portals").
        case groupDissolved(group: GroupID, by: UserID?, at: Int64)
    }

    public var eventID: EventID
    public var backend: BackendID
    public var kind: Kind
    /// For `edited` and `command`: what travels beside the content — the edited content's mentions and
    /// quoted reply, and the vendor's fields with no neutral form (a WuKong CMD's `sign`, the kept keys of
    /// an edited payload), kept like `Message.vendorExtras` so that nothing the vendor sent is dropped.
    /// Empty for the other kinds (a `message` carries its own).
    public var mentions: Mentions
    public var reply: ReplyRef?
    public var vendorExtras: [String: JSONValue]

    public init(eventID: EventID, backend: BackendID, kind: Kind, mentions: Mentions = Mentions(), reply: ReplyRef? = nil,
                vendorExtras: [String: JSONValue] = [:]) {
        self.eventID = eventID
        self.backend = backend
        self.kind = kind
        self.mentions = mentions
        self.reply = reply
        self.vendorExtras = vendorExtras
    }

    enum CodingKeys: String, CodingKey {
        case eventID, backend, kind, mentions, reply, vendorExtras
    }

    /// Events written before `mentions`, `reply` and `vendorExtras` existed decode with them empty.
    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        eventID = try c.decode(EventID.self, forKey: .eventID)
        backend = try c.decode(BackendID.self, forKey: .backend)
        kind = try c.decode(Kind.self, forKey: .kind)
        mentions = try c.decodeIfPresent(Mentions.self, forKey: .mentions) ?? Mentions()
        reply = try c.decodeIfPresent(ReplyRef.self, forKey: .reply)
        vendorExtras = try c.decodeIfPresent([String: JSONValue].self, forKey: .vendorExtras) ?? [:]
    }

    public var conversation: ConversationRef {
        switch kind {
        case .message(let message): message.conversation
        case .edited(_, let conversation, _, _, _), .recalled(_, let conversation, _, _),
             .expansionChanged(_, let conversation, _, _), .reaction(_, let conversation, _, _, _, _),
             .read(let conversation, _, _, _), .command(let conversation, _, _, _), .deleted(_, let conversation, _, _, _):
            conversation
        case .membersChanged(let group, _, _, _, _), .groupDissolved(let group, _, _): .group(group)
        }
    }

    /// The message the event is about (nil for `command`, `membersChanged` and `groupDissolved`).
    public var messageID: MessageID? {
        switch kind {
        case .message(let message): message.id
        case .edited(let id, _, _, _, _), .recalled(let id, _, _, _), .expansionChanged(let id, _, _, _),
             .reaction(let id, _, _, _, _, _), .read(_, _, let id, _), .deleted(let id, _, _, _, _):
            id
        case .command, .membersChanged, .groupDissolved: nil
        }
    }

    /// A short name for logs and metrics: message, edited, recalled, expansion, reaction, read, command,
    /// deleted, members, dissolved.
    public var kindName: String {
        switch kind {
        case .message: "message"
        case .edited: "edited"
        case .recalled: "recalled"
        case .expansionChanged: "expansion"
        case .reaction: "reaction"
        case .read: "read"
        case .command: "command"
        case .deleted: "deleted"
        case .membersChanged: "members"
        case .groupDissolved: "dissolved"
        }
    }
}
