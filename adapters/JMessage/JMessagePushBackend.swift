import IMCore
import IMHTTP

/// A `JMessageBackend` as the bridge sees it when the app has the paid routing push
/// ("实时消息路由"): the same backend, plus `CallbackReceiving` so that `BridgeListener` feeds
/// `/callbacks/<backend>` into it and commits the events before answering JMessage.
///
/// The bridge does not pump `events()` of a `CallbackReceiving` backend, so run the wrapped backend
/// without the poller (`start(pollIntervalMs: nil)`) — or with it, if the poller's events are
/// consumed elsewhere; event ids are shared (`jmessage:msg:<msgid>`), so the ledger keeps one.
/// Failures answer 401 (credentials) / 400 (malformed) / 500, the `CallbackReceiving` default.
public struct JMessagePushBackend: CallbackReceiving, Recalling, MediaTransferring, UserProvisioning, ClientIDLookup,
    ConversationDiscovery {
    public let base: JMessageBackend
    public init(_ base: JMessageBackend) { self.base = base }

    public var id: BackendID { base.id }
    public var capabilities: Capabilities { base.capabilities }
    public func send(_ message: OutgoingMessage) async throws -> Message { try await base.send(message) }
    public func events() -> AsyncStream<IMEvent> { base.events() }
    public func history(_ query: HistoryQuery) async throws -> HistoryPage { try await base.history(query) }
    public func receiveCallback(_ request: HTTPRequestData) async throws -> CallbackOutcome { try await base.receiveCallback(request) }
    public func recall(_ message: MessageID, in conversation: ConversationRef, by user: UserID) async throws {
        try await base.recall(message, in: conversation, by: user)
    }
    public func upload(_ attachment: MediaAttachment) async throws -> MediaAttachment { try await base.upload(attachment) }
    public func download(_ attachment: MediaAttachment, into directory: String) async throws -> MediaAttachment {
        try await base.download(attachment, into: directory)
    }
    public func ensureUser(_ profile: UserProfile) async throws { try await base.ensureUser(profile) }
    public func message(withClientID id: ClientMessageID, in conversation: ConversationRef) async throws -> Message? {
        try await base.message(withClientID: id, in: conversation)
    }
    public func allConversations() async throws -> [ConversationRef] { try await base.allConversations() }
}
