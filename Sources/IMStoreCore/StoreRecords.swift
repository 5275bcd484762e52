import Foundation
import IMCore

/// A queue of work for one target: the target backend and the conversation there.
public struct LaneKey: Hashable, Sendable, Codable, CustomStringConvertible {
    public var backend: BackendID
    public var conversation: ConversationRef
    public init(backend: BackendID, conversation: ConversationRef) {
        self.backend = backend
        self.conversation = conversation
    }
    public var description: String { "\(backend)/\(conversation)" }
    package init?(_ text: String) {
        guard let slash = text.firstIndex(of: "/"),
              let conversation = try? ConversationRef(parsing: String(text[text.index(after: slash)...])) else { return nil }
        self.init(backend: BackendID(String(text[..<slash])), conversation: conversation)
    }
    /// The name of the lane's lease (see `StoreTransaction.takeLease`).
    public var leaseName: String { "lane:\(description)" }
}

/// One tenure of a lease: `owner` holding `name` since it took it, told apart from its other tenures
/// and from everyone else's by `token` (drawn at random when the lease changes owner). Writes that only
/// the lease's holder may make check it (`StoreTransaction.holds`) — a fencing token.
public struct LeaseFence: Sendable, Hashable, CustomStringConvertible {
    public var name: String
    public var owner: String
    public var token: Int64
    public init(name: String, owner: String, token: Int64) {
        (self.name, self.owner, self.token) = (name, owner, token)
    }
    public var description: String { "\(name) held by \(owner)" }
}

/// One unit of outbound work.
public struct OutboxEntry: Sendable, Hashable {
    public enum State: String, Sendable { case pending, done, dead }
    public var id: Int64
    public var lane: LaneKey
    public var sourceBackend: BackendID
    public var sourceEventID: EventID
    public var kind: String
    public var payload: Data
    public var state: State
    public var attempts: Int
    public var nextAttemptAt: Int64
    public var lastError: String?
    public var createdAt: Int64

    package init(id: Int64, lane: LaneKey, sourceBackend: BackendID, sourceEventID: EventID, kind: String, payload: Data, state: State, attempts: Int, nextAttemptAt: Int64, lastError: String?, createdAt: Int64) {
        self.id = id
        self.lane = lane
        self.sourceBackend = sourceBackend
        self.sourceEventID = sourceEventID
        self.kind = kind
        self.payload = payload
        self.state = state
        self.attempts = attempts
        self.nextAttemptAt = nextAttemptAt
        self.lastError = lastError
        self.createdAt = createdAt
    }
}

/// An inbound dead letter: a poison message (authenticated, but its content did not convert) kept with
/// its raw bytes and the reason, until an operator retries it (`imbridge deadletters retry`).
public struct InboundDeadLetter: Sendable, Hashable {
    public var id: Int64
    public var backend: BackendID
    /// Stable across redeliveries (the vendor's message id, or a hash of the bytes).
    public var key: String
    /// The adapter's name for what `payload` is (how to replay it).
    public var format: String
    public var payload: Data
    public var reason: String
    public var receivedAt: Int64
    /// Retries that did not convert it either.
    public var retries: Int

    package init(id: Int64, backend: BackendID, key: String, format: String, payload: Data, reason: String, receivedAt: Int64, retries: Int) {
        self.id = id
        self.backend = backend
        self.key = key
        self.format = format
        self.payload = payload
        self.reason = reason
        self.receivedAt = receivedAt
        self.retries = retries
    }
}

/// A lane with pending work, as the status page shows it: its depth and when its oldest pending entry
/// was queued.
public struct LaneSummary: Sendable, Hashable {
    public var lane: LaneKey
    public var depth: Int
    public var oldestCreatedAt: Int64
    public init(lane: LaneKey, depth: Int, oldestCreatedAt: Int64) {
        self.lane = lane
        self.depth = depth
        self.oldestCreatedAt = oldestCreatedAt
    }
}

/// A row of the message-id map: `from` on one backend corresponds to `to` on another.
/// `bridgeCreated` is true when the bridge wrote `to` (an echo of it must not be relayed).
public struct MessageMapping: Sendable, Hashable {
    public var fromBackend: BackendID
    public var fromMessage: MessageID
    public var toBackend: BackendID
    public var toMessage: MessageID
    public var toConversation: ConversationRef
    public var bridgeCreated: Bool
    /// When the row was written (the bridge's clock, ms): for a copy the bridge made, right after the
    /// target accepted it.
    public var createdAt: Int64?

    package init(fromBackend: BackendID, fromMessage: MessageID, toBackend: BackendID, toMessage: MessageID, toConversation: ConversationRef,
                 bridgeCreated: Bool, createdAt: Int64? = nil) {
        self.createdAt = createdAt
        self.fromBackend = fromBackend
        self.fromMessage = fromMessage
        self.toBackend = toBackend
        self.toMessage = toMessage
        self.toConversation = toConversation
        self.bridgeCreated = bridgeCreated
    }
}
