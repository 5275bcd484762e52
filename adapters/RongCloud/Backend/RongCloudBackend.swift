import Foundation
import IMAdapterKit
import IMCore
import IMMapping
import IMHTTP

/// The RongCloud classic Server API as an `IMBackend`: a server-side view that sends as any user.
///
/// Contract:
/// - `send` checks the content against `capabilities` and the expansion limits before any I/O,
///   publishes (private for direct, group for group conversations) and returns the message with the
///   server's `messageUID`. The publish answer carries no server time, so `sentAt` is this process's
///   clock; the routed copy (and history) carry the server's `msgTimestamp`.
/// - Events come from the message-routing callback only: the bridge (or a test harness) hands each
///   received HTTP request to `handle(_:sink:)` (`InboundHandling`, in `Inbound/`), which verifies and
///   parses it (`RongCloudInbound.batch(from:)`), pushes the events into the sink and answers 200 `ok`
///   once the sink took them (401 forged/stale, 400 malformed, 503 when the sink failed). Accepted events
///   are also yielded on every `events()` stream (a redelivered callback is not yielded twice; see
///   `EventFanout`).
/// - Opt-in protocols: `Recalling` (sender only, no window), `ExpansionUpdating` (server-call limits,
///   validated with `ExpansionLimits.validate` before any call), `UserProvisioning` (`getToken`),
///   `UserDirectory` and `GroupDirectory` (`RongCloudBackend+Directory.swift`).
///   No edit, reaction, read-state or conversation-list API exists for private/group messages.
public final class RongCloudBackend: IMBackend, Recalling, ExpansionUpdating, UserProvisioning, Deleting {
    public let id: BackendID
    public let capabilities: Capabilities
    public let settings: RongCloudSettings
    public let clock: any IMClock
    public let client: RongCloudClient
    public let codec: RongCloudCodec
    public let inbound: RongCloudInbound
    /// Backs `events()`: what `handle` accepted.
    let fanout = EventFanout()
    /// The routing callbacks' signatures, when the sink keeps none (`CallbackMarks`).
    let callbackMarks = CallbackMarks()

    public init(id: BackendID = "rongcloud", settings: RongCloudSettings, registry: ContentRegistry = ContentRegistry(),
                clock: any IMClock = SystemClock(), mapping: VendorTable = MappingSet.shipped.table("rongcloud"),
                secrets: SecretMask = SecretMask()) {
        self.id = id
        self.settings = settings
        self.clock = clock
        var capabilities = Capabilities.rongCloud
        capabilities.notes[.replies] = "RC:ReferenceMsg quotes with a text body; a reply with other content is sent without the quote"
        capabilities.notes[.userProvisioning] = "users: name and portrait; groups: name and members (no owner, avatar or announcement outside profile hosting); cannot list all users or groups"
        self.capabilities = capabilities.carrying(mapping)
        self.client = RongCloudClient(baseURLs: settings.apiURLs, appKey: settings.appKey, appSecret: settings.appSecret,
                                      timeoutSeconds: settings.timeout.secondsRoundedUp, clock: clock, secrets: secrets)
        self.codec = RongCloudCodec(content: RongCloudContentCodec(registry: registry, objectNames: settings.objectNames, mapping: mapping))
        self.inbound = RongCloudInbound(backend: id, appKey: settings.appKey, appSecret: settings.appSecret,
                                        codec: codec, clock: clock, maxSkewMs: settings.callbackMaxSkewMs)
    }

    deinit { fanout.finish() }

    // MARK: IMBackend

    public func send(_ outgoing: OutgoingMessage) async throws -> Message {
        try capabilities.check(outgoing.content)
        if let initial = outgoing.expansion, !initial.isEmpty {
            try capabilities.require(.expansion)
            try ExpansionLimits.rongCloud.validate(.set(initial), current: Expansion(), caller: .server)
        }
        let (path, form) = try codec.publish(outgoing)
        let response = try await client.post(path, form: form.form, as: RCPublishResponse.self)
        let target = form.toGroupIds.first ?? form.toUserIds.first
        guard let entries = response.messageUIDs, let entry = entries.first(where: { $0.target == target }) ?? entries.first else {
            throw IMError(.vendorError, "\(path) answered without messageUIDs; the message id is unknown", details: ["path": path])
        }
        let now = clock.nowMs()
        var options = outgoing.options
        if case .command = outgoing.content { options.persist = false }
        return Message(id: MessageID(entry.messageUID), clientMessageID: outgoing.clientMessageID, conversation: outgoing.conversation,
                       sender: outgoing.sender, sentAt: now, content: outgoing.content, mentions: outgoing.mentions,
                       reply: outgoing.reply, options: options,
                       expansion: outgoing.expansion.map { Expansion(initial: $0, version: $0.isEmpty ? 0 : now) },
                       vendorExtras: outgoing.vendorExtras)
    }

    public func events() -> AsyncStream<IMEvent> { fanout.subscribe() }

    // MARK: Recalling

    public func recall(_ message: MessageID, in conversation: ConversationRef, by user: UserID) async throws {
        try capabilities.require(.recall)
        let target = try RongCloudCodec.target(of: conversation, for: user)
        let form = RCRecallForm(fromUserId: user.rawValue, conversationType: target.type.rawValue, targetId: target.targetId,
                                  messageUID: message.rawValue)
        try await client.post(RCPaths.recall, form: form.form)
    }

    // MARK: Deleting

    /// For everyone only: a recall with `isDelete=1`, which clients apply without the "recalled" notice
    /// (docs/adapters/rongcloud.md, "Deletion").
    public var deletionScopes: Set<DeletionScope> { capabilities.deletionScopes }

    /// `/message/recall.json` with `isDelete=1` (by the sender, as every recall); a message already
    /// recalled or deleted answers 200 again. One user's view cannot be deleted over the server API.
    public func delete(_ message: MessageID, in conversation: ConversationRef, by user: UserID, forUser: UserID?) async throws {
        guard forUser == nil else {
            throw IMError(.unsupported, "RongCloud's server API deletes a message for everyone only (a recall with isDelete=1), not from one user's view",
                          isRetryable: false)
        }
        try capabilities.require(.recall)
        let target = try RongCloudCodec.target(of: conversation, for: user)
        let form = RCRecallForm(fromUserId: user.rawValue, conversationType: target.type.rawValue, targetId: target.targetId,
                                messageUID: message.rawValue, isDelete: true)
        try await client.post(RCPaths.recall, form: form.form)
    }

    // MARK: UserProvisioning

    /// `/user/getToken.json` with the profile as RongCloud takes it (`RongCloudCodec.fitted`): a name over 64
    /// characters cut to 64, a portrait over 1024 bytes left out; an id over 64 bytes is refused before any call.
    public func ensureUser(_ profile: UserProfile) async throws {
        try RongCloudCodec.checkId(profile.id.rawValue, "userId")
        let fitted = RongCloudCodec.fitted(profile)
        var form = FormBody()
        form.append("userId", profile.id.rawValue)
        form.append("name", fitted.name ?? profile.id.rawValue)
        form.append("portraitUri", fitted.avatar)
        _ = try await client.post(RCPaths.getToken, form: form, as: RCTokenResponse.self)
    }
}
