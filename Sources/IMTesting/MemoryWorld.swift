import IMCore
import Synchronization

/// One in-memory IM system with one vendor's rules: the state that several `MemoryBackend`s share, so
/// that users connected through each see each other's messages.
///
/// Rules (all from the `Capabilities` it is configured with, checked before any state changes):
/// - contents are checked against the content kinds and the text limit; commands are delivered but
///   never stored; `persist: false` messages are delivered but not stored;
/// - messages go only into the conversation kinds the adapter sends into (`sendConversationKinds`:
///   RongCloud and NIM refuse chatrooms and system conversations, `unsupported`);
/// - a direct message's sender must be one of its two users;
/// - a group message is refused as `Capabilities.groupSendRefusals` says (the NIM preset: into a group
///   the world does not have, 803 `not_found`, or from a sender outside it, 804 `permission_denied`; the
///   JMessage preset: into a group it does not have, 899006): a group exists once it was created,
///   seeded or given members (`addMembers`);
/// - a repeated `clientMessageID` returns the first message and emits nothing (idempotent send);
/// - history is positioned as `Capabilities.history` says the adapter positions it (`HistoryForm`): WuKong
///   (and capabilities made without a preset) by `seq`, numbered per conversation from 1; RongCloud by
///   `msgTime:msgUID`, NIM and JMessage by `<ms>:<msgid>` with numeric message ids — those three leave
///   `seq` nil, as their adapters do, and refuse a seq cursor with the adapter's error text;
/// - with a `registry`, a typed custom content whose type is not registered is refused (`invalid_content`
///   naming the type), and every custom payload round-trips through the registry (encoded, then decoded
///   as the adapter's codec does on the way back), so a forgotten `register` or a broken `Codable` fails
///   here as it would in production;
/// - recall: within `recallWindowMs`, by the sender only when `recallBySenderOnly`, once;
/// - edit: by the sender only when `editBySenderOnly`, within `editWindowMs`, never on a recalled message;
/// - expansion: only on messages sent with one, within `expansionLimits` for `expansionCaller`;
///   events carry only the changed keys;
/// - reactions toggle: the same user and emoji again removes the reaction;
/// - unread: messages from others with `countUnread` above the user's read mark, not recalled; the
///   total skips conversations the user muted; the conversation list is newest first.
/// A feature the capabilities do not mark native (full/partial) is refused with `unsupported`.
public final class MemoryWorld: Sendable {
    public let capabilities: Capabilities
    public let clock: any IMClock
    /// The app's custom content types; nil accepts any custom content as given (no round trip).
    public let registry: ContentRegistry?
    /// How this world positions history (`Capabilities.history`).
    public let historyForm: HistoryForm
    /// Faults injected into the calls of every backend on this world (`MemoryFaults`, docs/testing-kit.md, "Faults").
    public let faults: MemoryFaults
    let state = Mutex(State())

    struct Subscriber {
        var backend: BackendID
        var viewer: UserID?
        var continuation: AsyncStream<IMEvent>.Continuation
    }

    struct State {
        var conversations: [ConversationRef: [Message]] = [:]
        var locations: [MessageID: (conversation: ConversationRef, index: Int)] = [:]
        var groupMembers: [GroupID: Set<UserID>] = [:]
        var readMarks: [ConversationRef: [UserID: Int64]] = [:]
        var muted: [UserID: Set<ConversationRef>] = [:]
        var pinned: [UserID: Set<ConversationRef>] = [:]
        var remindersDone: [UserID: Set<MessageID>] = [:]
        var clientIDs: [ClientMessageID: MessageID] = [:]
        var users: [UserID: UserProfile] = [:]
        /// Group profiles (name, avatar, owner, announcement); members live in `groupMembers`.
        var groups: [GroupID: GroupProfile] = [:]
        /// Groups dissolved (`GroupDissolving`): gone from the directory; a message into one is refused as
        /// `GroupSendRefusals.dissolvedGroup` says.
        var dissolvedGroups: Set<GroupID> = []
        var media: [String: [UInt8]] = [:]
        var subscribers: [Int: Subscriber] = [:]
        var nextSubscriber = 0
        var nextMessageNumber = 0
        var eventCounter = 0
        /// Messages deleted for everyone (gone from history and every lookup).
        var deleted: Set<MessageID> = []
        /// Messages deleted from one user's view (gone from that viewer's history).
        var hidden: [UserID: Set<MessageID>] = [:]
    }

    /// `clock` defaults to a `TestClock`, as `MemoryBackend`'s does: windows (recall, edit) move only when
    /// the test moves the clock. Give the app's `registry` to have custom contents checked and
    /// round-tripped as production does.
    public init(capabilities: Capabilities, clock: any IMClock = TestClock(), registry: ContentRegistry? = nil) {
        self.capabilities = capabilities
        self.clock = clock
        self.registry = registry
        self.historyForm = HistoryForm(capabilities.history)
        self.faults = MemoryFaults(capabilities: capabilities)
    }

    // MARK: membership and users

    /// Adds users to a group; group members count unread and see the group's events.
    /// A `membersChanged` event is published for the users who were not members yet, where the vendor
    /// reports membership changes (`reportsMembershipChanges`).
    public func addMembers(_ users: [UserID], to group: GroupID) {
        let now = clock.nowMs()
        state.withLock { state in
            let joined = state.join(users, to: group)
            publishMembership(group, joined: joined, left: [], by: nil, at: now, in: &state)
        }
    }

    public func members(of conversation: ConversationRef) -> Set<UserID> {
        state.withLock { $0.members(of: conversation) }
    }

    public var knownUsers: [UserProfile] { state.withLock { $0.users.values.sorted { $0.id < $1.id } } }

    /// Creates a missing user; an existing one is left as it is (`UserProvisioning`'s contract).
    func ensureUser(_ profile: UserProfile) {
        state.withLock { state in
            if state.users[profile.id] == nil { state.users[profile.id] = profile }
        }
    }

    /// Every stored message of every conversation, but those deleted for everyone (test introspection).
    public var allMessages: [Message] {
        state.withLock { state in
            state.conversations.values.flatMap { $0 }.filter { !state.deleted.contains($0.id) }.sorted { ($0.sentAt, $0.id) < ($1.sentAt, $1.id) }
        }
    }

    // MARK: events

    func subscribe(backend: BackendID, viewer: UserID?) -> AsyncStream<IMEvent> {
        let (stream, continuation) = AsyncStream<IMEvent>.makeStream()
        let key = state.withLock { state in
            let key = state.nextSubscriber
            state.nextSubscriber += 1
            state.subscribers[key] = Subscriber(backend: backend, viewer: viewer, continuation: continuation)
            return key
        }
        continuation.onTermination = { [weak self] _ in
            _ = self?.state.withLock { $0.subscribers.removeValue(forKey: key) }
        }
        return stream
    }

    /// Delivers an event to every subscriber allowed to see its conversation. Called with the lock held
    /// so that events leave in the order the state changed.
    static func publish(_ eventID: String, _ kind: IMEvent.Kind, in state: inout State) {
        let conversation = IMEvent(eventID: EventID(eventID), backend: "", kind: kind).conversation
        let members = state.members(of: conversation)
        for subscriber in state.subscribers.values {
            if let viewer = subscriber.viewer, !members.contains(viewer) { continue }
            subscriber.continuation.yield(IMEvent(eventID: EventID(eventID), backend: subscriber.backend, kind: kind))
        }
    }

    // MARK: lookups

    func message(_ id: MessageID, in conversation: ConversationRef) throws -> Message {
        try state.withLock { try $0.message(id, in: conversation) }
    }
}

extension MemoryWorld.State {
    func members(of conversation: ConversationRef) -> Set<UserID> {
        switch conversation.kind {
        case .direct:
            return Set(conversation.participants)
        case .group:
            var members = groupMembers[GroupID(conversation.id)] ?? []
            for message in conversations[conversation] ?? [] { members.insert(message.sender) }
            return members
        default:
            return Set((conversations[conversation] ?? []).map(\.sender))
        }
    }

    func message(_ id: MessageID, in conversation: ConversationRef) throws -> Message {
        guard let location = locations[id], location.conversation == conversation, !deleted.contains(id) else {
            throw IMError(.notFound, "message \(id) not found in \(conversation)")
        }
        return conversations[conversation]![location.index]
    }

    /// Adds `users` to the group; returns those who were not members yet, in the order given.
    mutating func join(_ users: [UserID], to group: GroupID) -> [UserID] {
        var members = groupMembers[group] ?? []
        let joined = users.filter { members.insert($0).inserted }
        groupMembers[group] = members
        return joined
    }

    mutating func update(_ id: MessageID, _ body: (inout Message) -> Void) {
        guard let location = locations[id] else { return }
        body(&conversations[location.conversation]![location.index])
    }
}
