import Foundation
import IMAdapterKit
import IMCore
import IMMapping
import IMHTTP
import Synchronization

/// `IMBackend` over JMessage REST v1 + report v2 (docs/adapters/jmessage.md).
///
/// - **Sending** is always as the configured admin (JMessage REST allows nothing else); a neutral
///   sender other than the admin is carried as `from_name` + `extras.imbridge_sender` and restored on
///   read (`sendAsAnyUser: fallback`, see `JMessageCodec`).
/// - **Inbound** (`InboundHandling`, in `JMessageBackend+Inbound.swift`): `startIntake(into:)` runs the
///   report v2 poller, which pushes each page into the sink and saves its position once `accept`
///   returned; when the app has bought the routing push, `handle(_:sink:)` takes it at
///   `/callbacks/<backend>`. Both name a message `jmessage:msg:<msgid>`. Retracts made through this
///   backend emit `recalled` events (report v2 does not report retracts).
/// - **`events()`** carries what was accepted (callbacks and polled pages) and those `recalled` events,
///   for app code that reads the neutral API directly; `start(pollIntervalMs:)` polls into it alone.
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
    /// What this backend keeps about its uploads of URLs (`JMessageBackend+Hosting.swift`).
    let notes: any CheckpointStorage
    /// Backs `events()`; `exchange` publishes accepted callbacks on it.
    let fanout = EventFanout()
    let exchange: CallbackExchange
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
        var intakePollIntervalMs: Int64?
        /// The sink given to `startIntake`, while the intake runs (this backend's own `recalled` events go there too).
        var intakeSink: (any EventSink)?
        var recalled: [MessageID: RecallState] = [:]
        var sent: [MessageID: Sent] = [:]
        var sentOrder = RecentSet<MessageID>(capacity: 10_000)
        /// URLs uploaded as media (`withUploadedMedia`, `hostedAvatar`): the upload, and back.
        var hosted: [String: JMUploadResult] = [:]
        var hostedSources: [String: String] = [:]
        var hostedIDs: [String: String] = [:]
        var hostedOrder = RecentSet<String>(capacity: JMessageBackend.hostedCapacity)
    }

    /// A backend on `settings`: its poll interval is `startIntake`'s and its poll overlap the poller's
    /// (over `pollerSettings.overlapMs`).
    public init(id: BackendID, settings: JMessageSettings, registry: ContentRegistry = ContentRegistry(),
                checkpoints: any CheckpointStorage = InMemoryCheckpointStorage(), notes: any CheckpointStorage = InMemoryCheckpointStorage(),
                clock: any IMClock = SystemClock(), pollerSettings: JMessagePoller.Settings = .init(), capabilities: Capabilities = .jMessage,
                puppetPassword: String? = nil, mapping: VendorTable = MappingSet.shipped.table("jmessage"),
                secrets: SecretMask = SecretMask()) {
        self.id = id
        self.notes = notes
        self.capabilities = capabilities.carrying(mapping)
        self.clock = clock
        self.client = JMessageClient(settings: settings, secrets: secrets)
        self.codec = JMessageCodec(identity: JMessageIdentity(appKey: settings.appKey, admin: settings.admin), registry: registry,
                                   mapping: mapping)
        self.inbound = JMessageInbound(appKey: settings.appKey, masterSecret: settings.masterSecret, codec: codec, backend: id)
        self.puppetPassword = puppetPassword
            ?? Hashing.sha256Hex(Array("\(settings.appKey):\(settings.masterSecret):puppet".utf8)).prefix(24).description
        var pollerSettings = pollerSettings
        pollerSettings.overlapMs = settings.pollOverlap.wholeMilliseconds
        self.poller = JMessagePoller(client: client, codec: codec, backend: id, storage: checkpoints, clock: clock,
                                     settings: pollerSettings)
        state.withLock { $0.intakePollIntervalMs = settings.pollIntervalMs }
        self.exchange = CallbackExchange(backend: id, answers: JMessageInbound.answers, fanout: fanout)
    }

    /// Registers the admin (when a password is configured) and, for app code that reads `events()`
    /// without a sink, starts polling report v2 every `pollIntervalMs` straight into `events()` (nil: no
    /// polling). That stream has no acknowledgement: the position is saved once a page was published,
    /// so only `startIntake(into:)` (a sink that stores before it returns) loses nothing across a crash.
    public func start(pollIntervalMs: Int64?) async throws {
        if let password = client.settings.adminPassword {
            try await client.registerAdmin(username: client.settings.admin, password: password)
        }
        guard let interval = pollIntervalMs else { return }
        startPolling(intervalMs: interval, into: PublishingSink(inner: nil, fanout: fanout))
    }

    /// Stops polling (and the intake) and ends every `events()` stream.
    public func stop() async {
        await stopPolling()
        fanout.finish()
    }

    func startPolling(intervalMs: Int64, into sink: any EventSink) {
        let poller = self.poller
        let task = Task { await poller.run(intervalMs: intervalMs, into: sink) }
        let previous = state.withLock { state -> Task<Void, Never>? in
            defer { state.pollTask = task }
            return state.pollTask
        }
        previous?.cancel()
    }

    func stopPolling() async {
        let task = state.withLock { state -> Task<Void, Never>? in
            defer {
                state.pollTask = nil
                state.intakeSink = nil
            }
            return state.pollTask
        }
        task?.cancel()
        await task?.value
    }

    public func events() -> AsyncStream<IMEvent> { fanout.subscribe() }

    public func send(_ message: OutgoingMessage) async throws -> Message {
        try capabilities.check(message.content)
        var outgoing = message
        outgoing.content = try await withUploadedMedia(message.content)
        let request = try codec.encode(outgoing)
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
}

/// A sink that hands events to `inner` (when there is one) and publishes them on `fanout` once it
/// took them: the poller's sink, so that `events()` shows what the intake accepted.
struct PublishingSink: EventSink {
    let inner: (any EventSink)?
    let fanout: EventFanout

    func accept(_ events: [IMEvent]) async throws {
        try await inner?.accept(events)
        fanout.publish(events)
    }

    func accept(_ batch: InboundBatch) async throws {
        if let inner { try await inner.accept(batch) } else if !batch.setAside.isEmpty {
            throw IMError(.unavailable, "no sink keeps the set-aside messages", isRetryable: true)
        }
        fanout.publish(batch.events)
    }

    func refused(_ error: IMError, backend: BackendID) { inner?.refused(error, backend: backend) }
}
