import Foundation
import IMCore
import IMHTTP
import IMSandbox
import Synchronization
import WuKong

/// The WuKong sandbox: WuKongIM v2.2.5's HTTP API and the companion business server's message-extra
/// endpoints on one port, with in-memory state and WuKongIM's webhook.
///
/// - WuKongIM routes check the `token` manager header when `managerToken` is set (401, empty body).
///   Business routes (`/v1/…`) authenticate the caller by the `token` header = a token registered
///   with `/user/token` (401 `{"msg":…}` otherwise), which stands in for the business server's login
///   session.
/// - Webhook: `POST <callbackURL>?event=msg.notify` with a JSON array of rendered messages, delivered as
///   WuKongIM v2.2.5 does (docs/adapters/wukong.md, "Webhook delivery and catch-up"): batches of ≤ 100 every
///   `notifyIntervalMs` (default 500); a batch not answered exactly HTTP 200 is tried again 1 s later and
///   dropped after 5 attempts in total, and the messages behind it wait meanwhile; the retry state is in
///   memory, so a sandbox restart loses the batch being retried. `--option callback_attempts=0` retries
///   until delivered (tests that need redelivery), and the other `CallbackPolicy` keys change the
///   spacing. `no_persist` messages (the business server's sync CMDs) go out once
///   each as `msg.offline` (one object, `to_uids`, no retry), as WuKongIM does for users without a
///   master connection — nobody is connected to a sandbox.
/// - With `webhookSecret` set, every webhook request carries the header `X-IMBridge-Secret`.
public final class WuKongSandbox: SandboxVendor {
    public struct Configuration: Sendable {
        public var managerToken: String?
        public var callbackURL: String?
        public var webhookSecret: String?
        /// How `msg.notify` is delivered (WuKongIM's policy by default, see `vendorPolicy`).
        public var notify: CallbackPolicy

        /// WuKongIM v2.2.5's `msg.notify` delivery: `msgNotifyEventCountPerPush` 100,
        /// `msgNotifyEventPushInterval` 500 ms, `msgNotifyEventRetryMaxCount` 5 attempts in total, 1 s
        /// apart (docs/adapters/wukong.md, "Webhook delivery and catch-up").
        public static let vendorPolicy = CallbackPolicy(maxBatch: 100, intervalMs: 500, maxAttempts: 5, retryMs: 1000)

        /// `maxAttempts` nil retries until delivered.
        public init(managerToken: String? = nil, callbackURL: String? = nil, webhookSecret: String? = nil,
                    notifyIntervalMs: Int64 = 500, notifyBatchSize: Int = 100, retryBaseMs: Int64 = 1000, maxAttempts: Int? = 5) {
            self.managerToken = managerToken
            self.callbackURL = callbackURL
            self.webhookSecret = webhookSecret
            self.notify = CallbackPolicy(maxBatch: notifyBatchSize, intervalMs: notifyIntervalMs, maxAttempts: maxAttempts, retryMs: retryBaseMs)
        }

        /// From `imbridge sandbox wukong … --option manager_token=T --option webhook_secret=S
        /// --option notify_interval_ms=N --option retry_base_ms=N` and the `CallbackPolicy` keys
        /// (`callback_attempts`, `callback_retry_ms`, `callback_retry_max_ms`; `retry_base_ms` is the
        /// older name of `callback_retry_ms`). WuKongIM has no app key/secret; those flags are ignored.
        public init(options: SandboxOptions) throws {
            self.init(managerToken: options.extra["manager_token"], callbackURL: options.callbackURL,
                      webhookSecret: options.extra["webhook_secret"],
                      notifyIntervalMs: options.extra["notify_interval_ms"].flatMap { Int64($0) } ?? 500,
                      retryBaseMs: options.extra["retry_base_ms"].flatMap { Int64($0) } ?? 1000)
            notify = try notify.applying(options.extra)
        }
    }

    public let configuration: Configuration
    public let clock: any IMClock
    let codec = WuKongMessageCodec()
    let state = Mutex(WuKongSandboxState())
    /// The business server's users and groups (`WuKongSandbox+Directory.swift`).
    let directory = Mutex(WuKongDirectoryState())
    /// Every edited content an extras read served, by message id, with the read's `limit`
    /// (`GET /_sandbox/extras-served`; not part of the saved state).
    let editsServed = Mutex<[Int64: [EditServed]]>([:])
    /// Every reaction toggle's `seq`, by row (`message|uid|emoji`), in order, and the rows a reaction read
    /// from a cursor past 0 served, as `message|uid|emoji|seq` (`GET /_sandbox/reactions-served`; not part
    /// of the saved state).
    let reactionsServed = Mutex<(toggles: [String: [Int64]], served: Set<String>)>(([:], []))
    private let notifyFeed: AsyncStream<WKMessage>.Continuation
    private let offlineFeed: AsyncStream<WKMessage>.Continuation
    public let notifier: CallbackDeliverer<WKMessage>?
    let stateFile: SandboxStateFile?
    static let stateName = "wukong"

    /// With a `stateFile`, the state is loaded from it and saved after every request that changes it.
    public init(configuration: Configuration, clock: any IMClock = SystemClock(), stateFile: SandboxStateFile? = nil) throws {
        self.configuration = configuration
        self.clock = clock
        self.stateFile = stateFile
        if let saved = try stateFile?.load(WuKongSandboxState.self, name: Self.stateName) {
            state.withLock { $0 = saved }
        }
        if let saved = try stateFile?.load(WuKongDirectoryState.self, name: Self.directoryStateName) {
            directory.withLock { $0 = saved }
        }
        let (notifyStream, notifyFeed) = AsyncStream<WKMessage>.makeStream()
        let (offlineStream, offlineFeed) = AsyncStream<WKMessage>.makeStream()
        self.notifyFeed = notifyFeed
        self.offlineFeed = offlineFeed
        guard let url = configuration.callbackURL else {
            notifier = nil
            return
        }
        let headers = configuration.webhookSecret.map { [(name: WuKongInbound.secretHeader, value: $0)] } ?? []
        let notifier = CallbackDeliverer<WKMessage>(policy: configuration.notify, timeoutSeconds: 30, isSuccess: { $0 == 200 }) { batch in
            let body = (try? WuKongJSON.encode(batch.map(WuKongSandboxState.render))) ?? Data("[]".utf8)
            return OutboundRequest.json("\(url)?event=msg.notify", body, headers: headers)
        }
        self.notifier = notifier
        Task {
            for await message in notifyStream { await notifier.enqueue(message) }
        }
        Task {
            let client = HTTPClientWrapper(timeoutSeconds: 30)
            for await message in offlineStream {
                // Sent once: while the notifier drops its batches (`drop_ms`), a push is lost the same way.
                if notifier.misbehaviour.dropping { continue }
                let body = (try? WuKongJSON.encode(WuKongSandboxState.render(message))) ?? Data("{}".utf8)
                _ = try? await client.send(OutboundRequest.json("\(url)?event=msg.offline", body, headers: headers))
            }
        }
    }

    deinit {
        notifyFeed.finish()
        offlineFeed.finish()
    }

    /// The `msg.notify` callbacks' misbehaviour, armed by `POST /_sandbox/callbacks` (`CallbackMisbehaviour`);
    /// the `msg.offline` pushes are sent once, as WuKongIM sends them: only `drop_ms` reaches them (lost
    /// while it lasts).
    public var callbackMisbehaviour: CallbackMisbehaviour? { notifier?.misbehaviour }

    public convenience init(options: SandboxOptions, clock: any IMClock) throws {
        try self.init(configuration: try Configuration(options: options), clock: clock,
                      stateFile: try options.statePath.map(SandboxStateFile.init(path:)))
    }

    /// A `SandboxServer` serving this vendor on `host:port` (port 0 = a free port).
    public static func server(options: SandboxOptions) throws -> SandboxServer {
        let clock = SandboxClock()
        return SandboxServer(vendor: try WuKongSandbox(options: options, clock: clock), clock: clock, host: options.host, port: options.port)
    }

    /// Saves the state when a state file is configured (under the lock, so saves keep their order).
    func persist() {
        guard let stateFile else { return }
        state.withLock { try? stateFile.save($0, name: Self.stateName) }
        directory.withLock { try? stateFile.save($0, name: Self.directoryStateName) }
    }

    /// Hands a message to the webhook: stored ones to `msg.notify`, `no_persist` ones to `msg.offline`
    /// (with `to_uids`). Called with the state lock held, so messages leave in store order.
    func publish(_ message: WKMessage, in state: WuKongSandboxState) {
        guard configuration.callbackURL != nil else { return }
        if message.header.noPersist == 0 {
            notifyFeed.yield(message)
        } else {
            var offline = message
            offline.toUIDs = state.members(of: .init(id: message.channelID, type: message.channelType))
                .filter { $0 != message.fromUID }
            offlineFeed.yield(offline)
        }
    }

    /// Every route the sandbox serves, as `"METHOD /path"` (after `normalizedPath`, so a trailing `/` is
    /// ignored). `handleIM` / `handleBusiness` answer 404 `{"msg":"404 page not found"}` for anything not
    /// listed here. docs/adapters/wukong.md §5.1 tabulates it; `SandboxEndpointTableTests` checks both.
    public static let servedRoutes: [String] = [
        // WuKongIM v2.2.5
        "GET /health", "POST /user/token",
        "POST /channel", "POST /channel/info", "POST /channel/delete",
        "POST /channel/subscriber_add", "POST /channel/subscriber_remove",
        "POST /message/send", "POST /message/sendbatch",
        "POST /channel/messagesync", "POST /messages",
        "POST /conversation/sync", "POST /conversation/channels", "POST /conversations/clearUnread",
        "GET /cluster/channels/{channel_id}/{channel_type}/subscribers",
        // business server (`token` header = a token registered with `/user/token`)
        "POST /v1/message/extra/sync", "POST /v1/message/revoke", "POST /v1/message/edit", "POST /v1/message/readed",
        "POST /v1/message/extra", "POST /v1/reactions", "POST /v1/reaction/sync",
    ] + directoryRoutes

    /// A `{name}` segment of a route matches any one segment.
    static func serves(_ method: String, _ path: String) -> Bool {
        let asked = path.split(separator: "/", omittingEmptySubsequences: false)
        return servedRoutes.contains { route in
            let parts = route.split(separator: " ", maxSplits: 1)
            let segments = parts[1].split(separator: "/", omittingEmptySubsequences: false)
            return parts[0] == method && segments.count == asked.count
                && zip(segments, asked).allSatisfy { $0.hasPrefix("{") && $0.hasSuffix("}") ? !$1.isEmpty : $0 == $1 }
        }
    }

    static func notFound() -> HTTPResponseData { .json(["msg": "404 page not found"], status: 404) }

    // MARK: SandboxVendor

    public func handle(_ request: HTTPRequestData) async -> HTTPResponseData {
        let path = request.normalizedPath
        let response: HTTPResponseData
        if path.hasPrefix("/v1/") {
            response = handleBusiness(request, path: path)
        } else if let token = configuration.managerToken, !token.isEmpty, request.header("token") != token {
            return HTTPResponseData(status: 401)
        } else {
            response = handleIM(request, path: path)
        }
        if request.method != "GET" && response.status == 200 { persist() }
        return response
    }

    public func faultResponse(status: Int, vendorCode: Int?) -> HTTPResponseData {
        if status == 401 { return HTTPResponseData(status: 401) }
        let code = vendorCode ?? status
        return .json(WKStatus(status: code, msg: WuKongErrors.table[code]?.text ?? "sandbox fault"), status: status)
    }

    public func reset() async {
        state.withLock { $0 = WuKongSandboxState() }
        editsServed.withLock { $0 = [:] }
        directory.withLock { $0 = WuKongDirectoryState() }
        persist()
    }

    // MARK: envelopes

    static func ok() -> HTTPResponseData { .json(WKStatus.ok) }
    /// A refusal (`WuKongErrors.badRequest`) with the server's text.
    static func failure(_ message: String) -> HTTPResponseData {
        .json(WKStatus(status: WuKongErrors.badRequest.code, msg: message), status: WuKongErrors.badRequest.status)
    }
    static func statusOnly(_ status: Int) -> HTTPResponseData { .json(WKStatus(status: status)) }
    static func bare<T: Encodable>(_ value: T) -> HTTPResponseData {
        .json((try? WuKongJSON.encode(value)) ?? Data("{}".utf8))
    }

    static func decode<T: Decodable>(_ type: T.Type, _ request: HTTPRequestData) throws -> T {
        do {
            return try WuKongJSON.decode(type, from: Data(request.body))
        } catch {
            throw SandboxRefusal.badRequest("数据格式有误！")
        }
    }
}

/// A refusal inside a handler, turned into WuKong's 400 envelope.
enum SandboxRefusal: Error {
    case badRequest(String)
    case unauthorized
}
