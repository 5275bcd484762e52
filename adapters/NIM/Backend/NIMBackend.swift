import Foundation
import IMAdapterKit
import IMCore
import IMMapping
import IMHTTP
import Synchronization

/// NetEase Yunxin (NIM) server API v1 as an `IMBackend`, with `Recalling`, `MediaTransferring`,
/// `UserProvisioning` and the directory (`UserDirectory`, `GroupDirectory`: `NIMBackend+Directory.swift`).
/// Not offered (v1 has no API): `Editing`, `Reacting`, `ReadReceipting`,
/// `ConversationListing`, `ExpansionUpdating` (see `sendExpansionChange` for the fallback).
///
/// Contract:
/// - `send` checks the content against `capabilities` before any I/O, refuses `expansion` (not native
///   on NIM), uploads media still in `needs_upload` state (the `NIMCustomAttachment` hooks: upload,
///   then `updateAttachmentURL`), creates the sender (and a direct peer) on first use when
///   `createUsersOnDemand`, then calls sendMsg (commands: sendAttachMsg, never stored). A repeated
///   `clientMessageID` returns the first message without sending again, within this process (NIM v1
///   sendMsg has no idempotency key; the id also travels in `ext` for echo detection).
/// - Inbound (`InboundHandling`): `handle(_:sink:)` verifies and parses one message-copy request
///   (`NIMInbound.batch(from:)`), hands the events to the sink and answers NIM only once the sink took
///   them; accepted events are also published on every `events()` stream. Redelivery gives the same
///   `eventID`s.
/// - `history` pages NIM's time windows (cursor `"<ms>:<msgid>"`, see `NIMHistoryPager`).
public final class NIMBackend: IMBackend, Recalling, MediaTransferring, UserProvisioning, ClientIDLookup {
    public let id: BackendID
    public let capabilities: Capabilities
    public let client: NIMClient
    public let codec: NIMMessageCodec
    public let inbound: NIMInbound
    public let clock: any IMClock
    public let settings: NIMSettings
    /// A member accid to query team history as when the query names no viewer.
    public var teamQueryAccid: String? { settings.teamQueryAccid }
    public var createUsersOnDemand: Bool { settings.createUsers }
    let state = Mutex(State())
    /// Backs `events()`: the callback exchange publishes every accepted event here.
    let fanout = EventFanout()

    struct State {
        var knownUsers: Set<String> = []
        /// Recently sent or received messages, for recall (which needs the send time) and idempotency.
        var recent: [MessageID: Message] = [:]
        var recentOrder = RecentSet<MessageID>(capacity: NIMBackend.recentCapacity)
        var clientIDs: [ClientMessageID: MessageID] = [:]
        /// Messages this process saw recalled: NIM drops them from history; `history` shows them as tombstones.
        var tombstones: [MessageID: Message] = [:]
        /// Per team: the accid its history was last read as after NIM refused the first choice (804): its owner.
        var teamReaders: [String: String] = [:]
    }

    static let recentCapacity = 10_000

    /// How far back `recall` searches history for a message's send time when no recall window is
    /// configured (NIM's longest window, `ignoreTime`, is 30 days).
    public static let recallSearchHorizonMs: Int64 = 30 * 86_400_000

    /// A backend on `settings`: its recall window is 30 days with `recallIgnoreTime` (NIM's limit for a
    /// recall with `ignoreTime=1`), else the console's when set, else `defaultCapabilities`'s 2 minutes.
    public init(id: BackendID = "nim", settings: NIMSettings, registry: ContentRegistry = ContentRegistry(),
                clock: any IMClock = SystemClock(), mapping: VendorTable = MappingSet.shipped.table("nim"),
                secrets: SecretMask = SecretMask()) {
        self.id = id
        self.settings = settings
        var capabilities = NIMBackend.defaultCapabilities
        if settings.recallIgnoreTime {
            capabilities.recallWindowMs = Self.recallSearchHorizonMs
        } else if let window = settings.recallWindow {
            capabilities.recallWindowMs = window.wholeMilliseconds
        }
        self.capabilities = capabilities.carrying(mapping)
        self.client = NIMClient(settings: settings, clock: clock, secrets: secrets)
        self.codec = NIMMessageCodec(registry: registry, customFormat: settings.customFormat, mapping: mapping)
        self.inbound = NIMInbound(backend: id, appKey: settings.appKey, appSecret: settings.appSecret, codec: codec,
                                  maxSkewMs: settings.callbackMaxSkew?.wholeMilliseconds, clock: clock)
        self.clock = clock
    }

    /// The `.nim` preset with the adapter's notes: expansion is a `fallback` carried by
    /// `sendExpansionChange` (not `ExpansionUpdating`); edits are rejected.
    public static var defaultCapabilities: Capabilities {
        var capabilities = Capabilities.nim
        capabilities.notes[.expansion] = "no expansion on NIM v1: NIMBackend.sendExpansionChange carries a delta as a type-100 "
            + "`imbridge.expansion` message, turned back into expansionChanged on the way in; send(expansion:) is refused"
        capabilities.notes[.edit] = "NIM v1 has no edit API (v2 modifyMsg is marked in development)"
        capabilities.notes[.history] = "time-window paging; recalled messages leave NIM history (shown only to the process that saw the recall)"
        capabilities.notes[.userProvisioning] = "accounts and advanced teams (tid assigned by NIM); NIM cannot list all accounts or all teams, "
            + "only one account's teams (/team/joinTeams.action)"
        return capabilities
    }

    // MARK: sending

    public func send(_ outgoing: OutgoingMessage) async throws -> Message {
        try capabilities.check(outgoing.content)
        if outgoing.expansion != nil { try capabilities.require(.expansion) }
        if case .custom = outgoing.content { try capabilities.require(.customContent) }
        _ = try NIMMessageCodec.target(of: outgoing.conversation, sender: outgoing.sender)
        if let clientID = outgoing.clientMessageID,
           let existing = state.withLock({ state in state.clientIDs[clientID].flatMap { state.recent[$0] } }) {
            return existing
        }
        var outgoing = outgoing
        let pendingMedia = outgoing.content.attachments.contains(where: \.needsUpload)
        if case .command = outgoing.content {} else if !pendingMedia { try Self.checkBody(try codec.sendForm(for: outgoing)) }
        outgoing.content = try await uploadPendingMedia(in: outgoing.content)
        try await ensureParties(of: outgoing)
        if case .command(let command) = outgoing.content {
            try await client.sendAttachMessage(try NIMCommandCodec.sendAttachForm(command, conversation: outgoing.conversation,
                                                                               sender: outgoing.sender))
            return Message(id: MessageID("cmd-\(UUID().uuidString.lowercased())"), clientMessageID: outgoing.clientMessageID,
                           conversation: outgoing.conversation, sender: outgoing.sender, sentAt: clock.nowMs(),
                           content: outgoing.content, options: outgoing.options)
        }
        let form = try codec.sendForm(for: outgoing)
        try Self.checkBody(form)
        let result = try await client.sendMessage(form)
        var vendorExtras = outgoing.vendorExtras
        if let ext = form.ext { vendorExtras[NIMMessageCodec.extKey] = .string(ext) }
        let message = Message(id: MessageID(String(result.msgid)), clientMessageID: outgoing.clientMessageID,
                              conversation: outgoing.conversation, sender: outgoing.sender, sentAt: result.timetag,
                              content: outgoing.content, mentions: outgoing.mentions, reply: outgoing.reply,
                              options: outgoing.options, vendorExtras: vendorExtras)
        remember(message)
        return message
    }

    /// NIM refuses bodies over 5000 characters (the text limit counts the text, the body its JSON).
    static func checkBody(_ form: NIMSendMessageForm) throws {
        guard form.body.count <= 5000 else {
            throw IMError(.limitExceeded, "the NIM body is \(form.body.count) characters; NIM allows 5000",
                          details: ["limit": "body_length"])
        }
    }

    /// Creates the sender and, for a direct message, the peer, once per process (puppets on demand).
    func ensureParties(of outgoing: OutgoingMessage) async throws {
        guard createUsersOnDemand else { return }
        var users = [outgoing.sender]
        if let peer = outgoing.conversation.peer(of: outgoing.sender) { users.append(peer) }
        for user in users { try await ensureUser(UserProfile(id: user)) }
    }

    public func ensureUser(_ profile: UserProfile) async throws {
        let accid = profile.id.rawValue.lowercased()
        if state.withLock({ $0.knownUsers.contains(accid) }) { return }
        try await client.createUser(accid: profile.id.rawValue, name: profile.name, icon: profile.avatar)
        _ = state.withLock { $0.knownUsers.insert(accid) }
    }

    func remember(_ message: Message) {
        state.withLock { state in
            let evicted = state.recentOrder.insert(message.id).evicted
            state.recent[message.id] = message
            if let clientID = message.clientMessageID { state.clientIDs[clientID] = message.id }
            if let dropped = evicted, let old = state.recent.removeValue(forKey: dropped), let clientID = old.clientMessageID {
                state.clientIDs.removeValue(forKey: clientID)
            }
        }
    }

    // MARK: events

    public func events() -> AsyncStream<IMEvent> { fanout.subscribe() }

    func observe(_ event: IMEvent) {
        switch event.kind {
        case .message(let message):
            remember(message)
        case .recalled(let id, _, let by, let at):
            state.withLock { state in
                if var message = state.recent[id] {
                    message.recall = RecallState(by: by, at: at)
                    state.tombstones[id] = message
                }
            }
        default:
            break
        }
    }
}
