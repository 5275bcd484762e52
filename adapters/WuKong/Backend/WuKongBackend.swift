import Foundation
import IMAdapterKit
import IMCore
import IMMapping
import IMHTTP
import Synchronization

/// `IMBackend` over WuKongIM (messages, history, conversations, webhook) and its companion business
/// server (revoke, edit, read receipts, reactions, the remote `extra` dictionary = expansion).
///
/// Inbound: the webhook enters through `handle(_:sink:)` (`InboundHandling`, in `Inbound/`); events
/// the sink accepted are also published on `events()`.
///
/// Business-server calls act as a user: the session token is `sessionToken(uid)` — by default
/// derived as `sha1(tokenSecret:uid)` and registered with `/user/token` on device flag 99 (system) on
/// first use, which is what IMBridge's sandbox (and a business server that accepts WuKongIM tokens)
/// authenticates. Deployments whose business server has its own logins pass `sessionTokens`.
public final class WuKongBackend: IMBackend, Sendable {
    public let id: BackendID
    public let capabilities: Capabilities
    public let settings: WuKongSettings
    public let client: WuKongClient
    public let codec: WuKongMessageCodec
    let inbound: WuKongInbound
    let mapper: WuKongInboundMapper
    let extrasCodec: WuKongExtrasCodec
    let hub = EventFanout()
    let sync = WuKongSyncState()
    let clock: any IMClock
    private let registeredTokens = Mutex<Set<String>>([])

    public init(id: BackendID = "wukong", settings: WuKongSettings, registry: ContentRegistry = ContentRegistry(),
                clock: any IMClock = SystemClock(), mapping: VendorTable = MappingSet.shipped.table("wukong"),
                secrets: SecretMask = SecretMask()) {
        self.id = id
        self.settings = settings
        self.clock = clock
        self.capabilities = Capabilities.wukong.carrying(mapping)
        var client = WuKongClient(imURL: settings.imURL, businessURL: settings.businessBaseURL,
                                  managerToken: settings.managerToken, timeoutSeconds: settings.timeout.secondsRoundedUp)
        client.http.secrets.merge(SecretMask(Array(settings.sessionTokens.values) + [settings.webhookSecret].compactMap { $0 }
                                             + [settings.tokenSecret]).merging(secrets))
        self.client = client
        let content = WuKongContentCodec(registry: registry, customTypes: settings.customTypes, mapping: mapping)
        self.codec = WuKongMessageCodec(content: content)
        self.inbound = WuKongInbound(secret: settings.webhookSecret)
        self.mapper = WuKongInboundMapper(backend: id, codec: codec)
        self.extrasCodec = WuKongExtrasCodec(backend: id, content: content)
    }

    public func events() -> AsyncStream<IMEvent> { hub.subscribe() }

    // MARK: sessions

    /// The business-server session token of `uid`, registered with WuKongIM on first use when derived.
    func session(_ uid: UserID) async throws -> String {
        if let explicit = settings.sessionTokens[uid.rawValue] { return explicit }
        let token = Hashing.sha1Hex("\(settings.tokenSecret):\(uid.rawValue)")
        if !registeredTokens.withLock({ $0.contains(uid.rawValue) }) {
            try await client.updateToken(WKUserTokenRequest(uid: uid.rawValue, token: token, deviceFlag: 99, deviceLevel: 0))
            registeredTokens.withLock { _ = $0.insert(uid.rawValue) }
        }
        return token
    }

    /// The user whose session reads a conversation's extras: the first participant of a direct
    /// conversation, the service uid otherwise.
    func reader(of conversation: ConversationRef) -> UserID {
        conversation.participants.first ?? UserID(settings.serviceUID)
    }

    // MARK: sending

    /// Sends through `/message/send`. Commands go out as CMD messages (`sync_once` 1, `no_persist` 1);
    /// `persist: false` sets `no_persist`; `countUnread` sets `red_dot`. With `expansion` non-nil the
    /// initial dictionary is written to the business server right after (an empty one enables it).
    public func send(_ message: OutgoingMessage) async throws -> Message {
        try capabilities.check(message.content)
        if message.expansion != nil { try capabilities.require(.expansion) }
        if let initial = message.expansion, !initial.isEmpty {
            try (capabilities.expansionLimits ?? .rongCloud).validate(.set(initial), current: Expansion(),
                                                                      caller: capabilities.expansionCaller)
        }
        let address = try WuKongChannel.address(message.conversation, sender: message.sender)
        let payload = try codec.payload(for: message.content, mentions: message.mentions, reply: message.reply,
                                        vendorExtras: message.vendorExtras)
        let isCommand = message.content.kind == .command
        let header = WKHeader(noPersist: message.options.persist && !isCommand ? 0 : 1,
                              redDot: message.options.countUnread && !isCommand ? 1 : 0, syncOnce: isCommand ? 1 : 0)
        let from = message.sender.rawValue == WuKongChannel.systemUID ? "" : message.sender.rawValue
        let result = try await client.send(WKSendRequest(header: header, clientMsgNo: message.clientMessageID?.rawValue, fromUID: from,
                                                         channelID: address.id, channelType: address.type, payload: payload))
        let id = MessageID(String(result.messageID))
        if let initial = message.expansion {
            await sync.seed(extra: initial, message: id, in: message.conversation)
            try await client.updateExtra(WKExtraUpdateRequest(messageID: id.rawValue, channelID: address.id, channelType: address.type,
                                                              extra: initial), session: try await session(message.sender))
        }
        return Message(id: id, clientMessageID: (result.clientMsgNo ?? message.clientMessageID?.rawValue).map(ClientMessageID.init),
                       conversation: message.conversation, sender: message.sender, sentAt: clock.nowMs(),
                       seq: result.messageSeq.map(Int64.init), content: message.content, mentions: message.mentions,
                       reply: message.reply, options: message.options,
                       expansion: message.expansion.map { Expansion(initial: $0) }, vendorExtras: message.vendorExtras)
    }
}
