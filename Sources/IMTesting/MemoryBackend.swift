import Foundation
import IMCore

/// An in-memory `IMBackend` with every opt-in protocol, keeping the rules of the capabilities preset it
/// was made with (see `MemoryWorld` for the list). Use it to unit-test app logic against the neutral
/// API with a vendor's limits, recall window and expansion rules, driven by a `TestClock`.
///
/// Several backends on one `MemoryWorld` share its state: give each a `viewer` to see only that user's
/// conversations, or none to see everything (the server's view). Features the preset does not mark
/// native are refused with `IMError(.unsupported)`; of the adapters' substitutes (`fallback`), NIM's
/// expansion carrier is simulated (`sendExpansionChange`) and JMessage's replies (carried in extras) are
/// taken, the others are not. `faults` injects the vendor's failures (rate limit, server error, timeout,
/// unknown outcome) into the next calls. Sending as any user is always allowed (the memory backend models users' clients).
public final class MemoryBackend: IMBackend, Recalling, Editing, ExpansionUpdating, Reacting, ReadReceipting,
    MediaTransferring, ConversationListing, ConversationStateSetting, UserProvisioning, ClientIDLookup, ConversationDiscovery,
    ExpansionChangeSending, Deleting {
    public let id: BackendID
    public let world: MemoryWorld
    public let viewer: UserID?

    public var capabilities: Capabilities { world.capabilities }

    /// The world's faults (shared by every backend on it): `backend.faults.inject(.rateLimited(), on: .send)`.
    public var faults: MemoryFaults { world.faults }

    public init(id: BackendID, world: MemoryWorld, viewer: UserID? = nil) {
        self.id = id
        self.world = world
        self.viewer = viewer
    }

    /// A backend with its own world; give the app's `registry` to have custom contents checked and
    /// round-tripped through it (see `MemoryWorld`).
    public convenience init(id: BackendID = "memory", capabilities: Capabilities = .rongCloud, clock: any IMClock = TestClock(),
                            registry: ContentRegistry? = nil) {
        self.init(id: id, world: MemoryWorld(capabilities: capabilities, clock: clock, registry: registry))
    }

    public func send(_ message: OutgoingMessage) async throws -> Message {
        return try world.faults.run(.send) {
            var sent = try world.send(message)
            if !world.historyForm.sendAnswersSeq { sent.seq = nil }
            return sent
        }
    }

    public func events() -> AsyncStream<IMEvent> { world.subscribe(backend: id, viewer: viewer) }

    /// The preset's own cursor form (see `HistoryForm`): `seq` for WuKong, `"<sentAt>:<id>"` for RongCloud,
    /// NIM and JMessage, as their adapters answer.
    public func cursor(for message: Message) throws -> HistoryCursor { try world.historyForm.cursor(for: message, backend: id) }

    public func history(_ query: HistoryQuery) async throws -> HistoryPage {
        return try world.faults.run(.history) {
            var query = query
            if query.viewer == nil { query.viewer = viewer }
            return try world.history(query)
        }
    }

    public func recall(_ message: MessageID, in conversation: ConversationRef, by user: UserID) async throws {
        try world.faults.run(.recall) {
            try world.recall(message, in: conversation, by: user)
        }
    }

    public var deletionScopes: Set<DeletionScope> { world.deletionScopes }

    public func delete(_ message: MessageID, in conversation: ConversationRef, by user: UserID, forUser: UserID?) async throws {
        try world.faults.run(.delete) {
            try world.delete(message, in: conversation, by: user, forUser: forUser)
        }
    }

    public func edit(_ message: MessageID, in conversation: ConversationRef, by user: UserID, content: MessageContent) async throws {
        try world.faults.run(.edit) {
            try world.edit(message, in: conversation, by: user, content: content)
        }
    }

    public func updateExpansion(of message: MessageID, in conversation: ConversationRef, by user: UserID,
                                _ change: ExpansionChange) async throws -> ExpansionDelta {
        try world.updateExpansion(message, in: conversation, by: user, change)
    }

    public func expansion(of message: MessageID, in conversation: ConversationRef) async throws -> Expansion {
        return try world.faults.run(.expansion) {
            try world.expansion(of: message, in: conversation)
        }
    }

    /// NIM's expansion fallback, as `NIMBackend.sendExpansionChange` does it (see `MemoryWorld`); other
    /// presets refuse it with `unsupported`.
    @discardableResult
    public func sendExpansionChange(_ delta: ExpansionDelta, of target: MessageID, in conversation: ConversationRef,
                                    by user: UserID, clientID: ClientMessageID?) async throws -> Message {
        try world.sendExpansionChange(delta, of: target, in: conversation, by: user, clientID: clientID)
    }

    public func toggleReaction(_ emoji: String, on message: MessageID, in conversation: ConversationRef,
                               by user: UserID) async throws -> Bool {
        try world.toggleReaction(emoji, on: message, in: conversation, by: user)
    }

    public func reactions(on message: MessageID, in conversation: ConversationRef) async throws -> [Reaction] {
        return try world.faults.run(.reaction) {
            try capabilities.require(.reactions)
            return try world.message(message, in: conversation).reactions
        }
    }

    public func markRead(_ conversation: ConversationRef, by user: UserID, upTo message: MessageID) async throws {
        try world.faults.run(.readReceipt) {
            try world.markRead(conversation, by: user, upTo: message)
        }
    }

    public func readCounts(of message: MessageID, in conversation: ConversationRef) async throws -> ReadCounts {
        return try world.faults.run(.readReceipt) {
            try world.readCounts(of: message, in: conversation)
        }
    }

    /// Reads the file at `localPath` and keeps its bytes under a `memory://` URL.
    public func upload(_ attachment: MediaAttachment) async throws -> MediaAttachment {
        return try world.faults.run(.media) {
            try capabilities.require(.media)
            guard let path = attachment.pathForUploading else {
                throw IMError(.invalidArgument, "attachment is \(attachment.transferState.rawValue); only needs_upload attachments upload")
            }
            guard let data = FileManager.default.contents(atPath: path) else {
                throw IMError(.notFound, "no file at \(path)")
            }
            let url = world.state.withLock { state in
                let url = "memory://\(self.id)/media/\(state.media.count + 1)/\((path as NSString).lastPathComponent)"
                state.media[url] = Array(data)
                return url
            }
            var uploaded = attachment
            try uploaded.markUploaded(url: url)
            if uploaded.size == nil { uploaded.size = Int64(data.count) }
            return uploaded
        }
    }

    /// Writes the bytes behind a `memory://` URL into `directory`.
    public func download(_ attachment: MediaAttachment, into directory: String) async throws -> MediaAttachment {
        return try world.faults.run(.media) {
            try capabilities.require(.media)
            guard attachment.needsDownload, let url = attachment.remoteURL else {
                throw IMError(.invalidArgument, "attachment is \(attachment.transferState.rawValue); only needs_download attachments download")
            }
            guard let bytes = world.state.withLock({ $0.media[url] }) else { throw IMError(.notFound, "no media at \(url)") }
            let path = (directory as NSString).appendingPathComponent((url as NSString).lastPathComponent)
            guard FileManager.default.createFile(atPath: path, contents: Data(bytes)) else {
                throw IMError(.unavailable, "cannot write \(path)", isRetryable: false)
            }
            var downloaded = attachment
            try downloaded.markDownloaded(to: path)
            return downloaded
        }
    }

    public func conversations(for user: UserID) async throws -> [ConversationSummary] {
        return try world.faults.run(.conversations) {
            try capabilities.require(.conversationList)
            return world.conversations(for: user)
        }
    }

    public func unreadCount(in conversation: ConversationRef, for user: UserID) async throws -> Int {
        return try world.faults.run(.conversations) {
            try capabilities.require(.conversationList)
            return world.unreadCount(in: conversation, for: user)
        }
    }

    public func totalUnread(for user: UserID) async throws -> Int {
        return try world.faults.run(.conversations) {
            try capabilities.require(.conversationList)
            return world.totalUnread(for: user)
        }
    }

    public func setMuted(_ muted: Bool, conversation: ConversationRef, for user: UserID) async throws {
        try world.faults.run(.conversations) {
            try capabilities.require(.conversationList)
            guard capabilities.keepsMuteState else {
                throw IMError(.unsupported, "\(capabilities.vendor) keeps no mute state", details: ["feature": Feature.conversationList.rawValue])
            }
            world.setMuted(muted, conversation: conversation, for: user)
        }
    }

    public func clearUnread(in conversation: ConversationRef, for user: UserID) async throws {
        try world.faults.run(.conversationState) {
            try world.clearUnread(in: conversation, for: user)
        }
    }

    public func setPinned(_ pinned: Bool, conversation: ConversationRef, for user: UserID) async throws {
        try world.faults.run(.conversationState) {
            try world.setPinned(pinned, conversation: conversation, for: user)
        }
    }

    public func reminders(in conversation: ConversationRef, for user: UserID) async throws -> [ConversationReminder] {
        return try world.faults.run(.conversationState) {
            try world.reminders(in: conversation, for: user)
        }
    }

    public func markReminderDone(_ message: MessageID, in conversation: ConversationRef, for user: UserID) async throws {
        try world.faults.run(.conversationState) {
            try world.markReminderDone(message, in: conversation, for: user)
        }
    }

    public func message(withClientID id: ClientMessageID, in conversation: ConversationRef, readingAs viewer: UserID?) async throws -> Message? {
        return try world.faults.run(.history) {
            world.state.withLock { state in
                guard let messageID = state.clientIDs[id], let location = state.locations[messageID],
                      location.conversation == conversation else { return nil }
                return state.conversations[conversation]?[location.index]
            }
        }
    }

    /// Every conversation with stored messages, in a stable order.
    public func allConversations() async throws -> [ConversationRef] {
        return try world.faults.run(.history) {
            world.state.withLock { $0.conversations.keys.sorted { $0.description < $1.description } }
        }
    }

    public func ensureUser(_ profile: UserProfile) async throws {
        try world.faults.run(.users) {
            try capabilities.require(.userProvisioning)
            world.ensureUser(profile)
        }
    }
}
