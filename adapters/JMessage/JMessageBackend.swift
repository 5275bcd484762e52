import Foundation
import IMAdapterKit
import IMCore
import IMMapping
import IMHTTP
import Synchronization

/// `IMBackend` over JMessage REST v1 + report v2.
///
/// - **Sending** is always as the configured admin (JMessage REST allows nothing else); a neutral
///   sender other than the admin is carried as `from_name` + `extras.imbridge_sender` and restored on
///   read (`sendAsAnyUser: fallback`, see `JMessageCodec`).
/// - **Events** come from the report v2 poller (`start(pollIntervalMs:)`) on `events()`. When the app
///   has bought the routing push, wrap the backend in `JMessagePushBackend` (the `CallbackReceiving`
///   face the bridge feeds from `/callbacks/<backend>`); both paths name a message `jmessage:msg:<msgid>`.
///   The bridge pumps `events()` only of backends that are not `CallbackReceiving`, hence two faces.
///   Retracts made through this backend emit `recalled` events; report v2 does not report retracts.
/// - **History** reads report v2 (`/v2/users/{u}/messages` for both users of a direct conversation,
///   `/v2/groups/{gid}/messages`, `/v2/chatrooms/{id}/messages`) in ≤ 7-day windows, at most 60 days back.
public final class JMessageBackend: IMBackend, Recalling, MediaTransferring, UserProvisioning {
    public let id: BackendID
    public let capabilities: Capabilities
    public let client: JMessageClient
    public let codec: JMessageCodec
    public let inbound: JMessageInbound
    public let poller: JMessagePoller
    let clock: any IMClock
    let hub: EventHub
    let state = Mutex(State())
    /// Users created by `ensureUser` get this password (nobody logs in as a bridge puppet).
    let puppetPassword: String

    struct Sent: Sendable {
        var sender: UserID
        var vendorSender: String
        var conversation: ConversationRef
    }

    struct State {
        var pollTask: Task<Void, Never>?
        /// How often `startIntake` polls report v2 (nil: not at all, the routing push brings messages).
        var intakePollIntervalMs: Int64? = 2000
        var pump: StreamIntake?
        var recalled: [MessageID: RecallState] = [:]
        var sent: [MessageID: Sent] = [:]
        var sentOrder = RecentSet<MessageID>(capacity: 10_000)
    }

    public init(id: BackendID, config: JMessageConfig, registry: ContentRegistry = ContentRegistry(),
                checkpoints: any CheckpointStorage = InMemoryCheckpointStorage(), clock: any IMClock = SystemClock(),
                pollerSettings: JMessagePoller.Settings = .init(), capabilities: Capabilities = .jMessage,
                puppetPassword: String? = nil, ackTimeoutMs: Int64 = 30_000,
                mapping: VendorTable = MappingSet.shipped.table("jmessage")) {
        self.id = id
        self.capabilities = capabilities.carrying(mapping)
        self.clock = clock
        self.client = JMessageClient(config: config)
        self.codec = JMessageCodec(identity: JMessageIdentity(appKey: config.appKey, admin: config.admin), registry: registry,
                                   mapping: mapping)
        self.inbound = JMessageInbound(appKey: config.appKey, masterSecret: config.masterSecret, codec: codec, backend: id)
        self.puppetPassword = puppetPassword ?? Hashing.sha256Hex(Array("\(config.appKey):\(config.masterSecret):puppet".utf8)).prefix(24).description
        let hub = EventHub(ackTimeoutMs: ackTimeoutMs)
        self.hub = hub
        self.poller = JMessagePoller(client: client, codec: codec, backend: id, storage: checkpoints, clock: clock,
                                     settings: pollerSettings) { events in
            let published = hub.publish(events)
            await hub.waitUntilConsumed(upTo: published.lastSeq)
        }
    }

    /// Registers the admin (when a password is configured) and starts polling report v2 every
    /// `pollIntervalMs` (nil: no polling, e.g. when only the routing push is used).
    ///
    /// Durability: the poller polls only while someone subscribes to `events()`, and saves its position
    /// only after every subscriber has pulled the page's events (see `EventHub`), so a consumer that
    /// stores each event before pulling the next (the bridge's pump does) loses nothing across a crash;
    /// a subscriber that stops reading without cancelling delays the save by at most `ackTimeoutMs`.
    public func start(pollIntervalMs: Int64? = 2000) async throws {
        if let password = client.config.adminPassword {
            try await client.registerAdmin(username: client.config.admin, password: password)
        }
        guard let interval = pollIntervalMs else { return }
        let poller = self.poller
        let hub = self.hub
        let task = Task { await poller.run(intervalMs: interval, before: { await hub.waitForSubscriber() }) }
        let previous = state.withLock { state -> Task<Void, Never>? in
            defer { state.pollTask = task }
            return state.pollTask
        }
        previous?.cancel()
    }

    /// Stops polling and ends every `events()` stream.
    public func stop() async {
        let task = state.withLock { state -> Task<Void, Never>? in
            defer { state.pollTask = nil }
            return state.pollTask
        }
        task?.cancel()
        hub.finish()
        await task?.value
    }

    public func events() -> AsyncStream<IMEvent> { hub.stream() }

    public func send(_ message: OutgoingMessage) async throws -> Message {
        try capabilities.check(message.content)
        let request = try codec.encode(message)
        let result = try await client.send(request)
        let id = MessageID(String(result.msgID))
        remember(id, Sent(sender: message.sender, vendorSender: request.fromID, conversation: message.conversation))
        var extras = message.vendorExtras
        extras["jmessage_from_type"] = .string(request.fromType)
        extras["jmessage_from_id"] = .string(request.fromID)
        return Message(id: id, clientMessageID: message.clientMessageID, conversation: message.conversation, sender: message.sender,
                       sentAt: result.msgCtime, content: message.content, reply: message.reply, options: message.options,
                       vendorExtras: extras)
    }

    func remember(_ id: MessageID, _ sent: Sent) {
        state.withLock { state in
            state.sent[id] = sent
            if let evicted = state.sentOrder.insert(id).evicted { state.sent.removeValue(forKey: evicted) }
        }
    }

    // MARK: routing push

    /// Verifies and parses a routing push, publishes its events and answers HTTP 200 with an empty body.
    /// A forged push throws `authentication_failed`, a malformed one `malformed_payload` (no event).
    public func receiveCallback(_ request: HTTPRequestData) async throws -> CallbackOutcome {
        let events = try inbound.parse(request)
        hub.publish(events)
        return CallbackOutcome(events: events, response: HTTPResponseData(status: 200))
    }
}
