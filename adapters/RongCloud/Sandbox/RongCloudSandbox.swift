import Foundation
import IMCore
import IMHTTP
import IMSandbox
import RongCloud
import Synchronization

/// The RongCloud Server API emulated over HTTP (served by `SandboxServer`, which adds `/_sandbox/`).
///
/// - Authentication exactly like the vendor: `App-Key`, `Nonce`, `Timestamp`, `Signature` or their
///   `RC-` names in any case; `Signature` = hex SHA1(secret + nonce + timestamp); timestamps in seconds
///   or milliseconds; any nonce characters. Missing or wrong → HTTP 401 `{"code":1004,…}`; an unknown
///   app key is answered the same way. No freshness window is enforced (UNCONFIRMED at the vendor).
/// - Endpoints: `servedPaths` — `/user/{getToken,info,refresh,checkOnline}.json`,
///   `/group/{create,join,quit,refresh,user/query}.json`, `/user/group/query.json`,
///   `/message/{private,group,system}/publish.json`, `/message/recall.json`,
///   `/message/expansion/{set,delete,query}.json`, `/message/history.json` (forms, lenient) and
///   `/v3/message/{private,group}/query.json` (JSON, typed or all-string values); trailing slashes are
///   ignored; anything else is 404 `{"code":404,…}`. Rules: see `RongCloudSandboxStore`.
/// - Errors: the vendor envelope `{"code","errorMessage"}` with the status of
///   `RongCloudErrors.table.status(for:)`.
/// - Rate limits (`--option rate_limits=true`): the documented per-endpoint rates, see `RongCloudRateLimiter`.
/// - Routing callback: with a callback URL, every routed message (published messages, `RC:RcCmd` on
///   recall, `RC:MsgExMsg` on expansion changes) is POSTed in order as a form to
///   `<url>?appKey=…&nonce=…&timestamp=<ms>&signature=…`, signed afresh on each attempt. RongCloud does
///   not publish its routing retry policy; the sandbox's default (`vendorPolicy`: 3 attempts in total,
///   1 s apart, then the message is dropped) follows the retries it documents for its other callbacks
///   (docs/adapters/rongcloud.md, "Callback delivery and catch-up"). `--option callback_attempts=0` retries until the
///   receiver answers 2xx; `callback_retry_ms` / `callback_retry_max_ms` change the spacing.
public final class RongCloudSandbox: SandboxVendor {
    public let appKey: String
    public let appSecret: String
    public let store: RongCloudSandboxStore
    let deliverer: CallbackDeliverer<RCRoutedMessage>?
    /// Held while a request runs against the store and hands its routed messages to the deliverer, so that
    /// callbacks leave in the order the store took the messages (their msgUID counter, their history
    /// order). Handing them over after an `await` let two concurrent publishes into one group be called
    /// back the other way round (docs/reliability.md, Finding 12).
    private let routing = Mutex(())
    /// Set by `--option rate_limits=true`.
    let rateLimiter: RongCloudRateLimiter?
    let codec = RongCloudContentCodec()

    /// The routing callback's default delivery (see the type's comment).
    public static let vendorPolicy = CallbackPolicy(maxAttempts: 3, retryMs: 1000)

    /// Throws when `options.statePath` names a state file that cannot be opened or read, or a
    /// `CallbackPolicy` option is not a number.
    public init(options: SandboxOptions, clock: any IMClock) throws {
        self.appKey = options.appKey
        self.appSecret = options.appSecret
        self.store = try RongCloudSandboxStore(clock: clock, routeServerMessages: Lenient.bool(options.extra["route_server_messages"]) ?? true,
                                               stateFile: options.statePath.map(SandboxStateFile.init(path:)))
        rateLimiter = Lenient.bool(options.extra["rate_limits"]) == true ? RongCloudRateLimiter(clock: clock) : nil
        if let url = options.callbackURL {
            let (key, secret) = (options.appKey, options.appSecret)
            let policy = try Self.vendorPolicy.applying(options.extra)
            deliverer = CallbackDeliverer(policy: policy) { batch in Self.callbackRequest(url: url, appKey: key, secret: secret, batch[0]) }
        } else {
            deliverer = nil
        }
    }

    /// A sandbox server for `imbridge sandbox rongcloud` and tests. `--option route_server_messages=false`
    /// stops routing messages sent through the Server API (the vendor's default).
    /// `--state FILE` keeps the state in that SQLite file across restarts.
    public static func server(_ options: SandboxOptions) throws -> SandboxServer {
        let clock = SandboxClock()
        return SandboxServer(vendor: try RongCloudSandbox(options: options, clock: clock), clock: clock,
                             host: options.host, port: options.port)
    }

    /// Waits until every routed message so far was delivered (tests).
    public func waitForDeliveries(timeoutMs: Int64 = 10_000) async -> Bool {
        await deliverer?.waitUntilIdle(timeoutMs: timeoutMs) ?? true
    }

    /// The callbacks' misbehaviour, armed by `POST /_sandbox/callbacks` (`CallbackMisbehaviour`).
    public var callbackMisbehaviour: CallbackMisbehaviour? { deliverer?.misbehaviour }

    /// How the routing callbacks fared so far (delivered, dropped, pending); nil without a callback URL.
    public func deliveryStats() async -> CallbackDeliverer<RCRoutedMessage>.Stats? {
        await deliverer?.currentStats
    }

    /// Stops delivering callbacks (undelivered ones are dropped); for shutting a sandbox down.
    public func stopDeliveries() async {
        await deliverer?.stop()
    }

    /// One signed routing POST. The signature's timestamp is wall-clock time, not the sandbox clock: a
    /// test that moves the sandbox clock forward (recall windows) must not make its callbacks look stale
    /// to the receiver; `msgTimestamp` in the body stays sandbox time.
    static func callbackRequest(url: String, appKey: String, secret: String, _ message: RCRoutedMessage) -> OutboundRequest {
        let nonce = String(UInt64.random(in: 0..<UInt64(1e12)))
        let timestamp = String(SystemClock().nowMs())
        let query = FormBody(items: [("appKey", appKey), ("nonce", nonce), ("timestamp", timestamp),
                                     ("signature", RongCloudSignature.sign(secret: secret, nonce: nonce, timestamp: timestamp))])
        return .form(url + (url.contains("?") ? "&" : "?") + query.encoded, message.form)
    }

    // MARK: SandboxVendor

    public func handle(_ request: HTTPRequestData) async -> HTTPResponseData {
        guard authenticated(request) else {
            return Self.error(RongCloudSandboxError(RongCloudErrors.signatureError))
        }
        if let rateLimiter,
           let waitMs = rateLimiter.admit(path: request.normalizedPath, cost: RongCloudRateLimiter.cost(path: request.normalizedPath, form: request.form)) {
            var response = Self.error(RongCloudSandboxError(RongCloudErrors.rateLimited))
            response.headers.removeAll { $0.name == "Retry-After" }
            response.headers.append(("Retry-After", String(max(1, (waitMs + 999) / 1000))))
            return response
        }
        do {
            let routed = try routing.withLock { _ in
                let result = try route(request)
                if let deliverer, !result.messages.isEmpty { deliverer.submit(result.messages) }
                return result
            }
            if let deliverer, !routed.messages.isEmpty { await deliverer.takeSubmitted() }
            return routed.response
        } catch let error as RongCloudSandboxError {
            return Self.error(error)
        } catch {
            return Self.error(.parameter("\(error)"))
        }
    }

    func authenticated(_ request: HTTPRequestData) -> Bool {
        func header(_ name: String) -> String? { request.header(anyOf: [name, "RC-" + name]) }
        guard let key = header("App-Key"), key == appKey, let nonce = header("Nonce"),
              let timestamp = header("Timestamp"), Lenient.epochMs(timestamp) != nil,
              let signature = header("Signature") else { return false }
        return RongCloudSignature.isValid(signature, secret: appSecret, nonce: nonce, timestamp: timestamp)
    }

    /// Every path the sandbox serves (all POST); docs/adapters/rongcloud.md §6 lists the same set and a
    /// test compares the two.
    public static let servedPaths: [String] = [
        RCPaths.getToken, RCPaths.userInfo, RCPaths.userRefresh, RCSandboxPaths.userCheckOnline,
        RCPaths.privatePublish, RCPaths.groupPublish, RCSandboxPaths.systemPublish,
        RCPaths.recall, RCPaths.expansionSet, RCPaths.expansionDelete, RCPaths.expansionQuery,
        RCPaths.privateHistory, RCPaths.groupHistory, RCSandboxPaths.historyLog,
    ] + RCPaths.groupPaths

    private func route(_ request: HTTPRequestData) throws -> (response: HTTPResponseData, messages: [RCRoutedMessage]) {
        let path = request.normalizedPath
        guard request.method == "POST" else {
            throw RongCloudSandboxError(404, "\(request.method) \(path) is not an API; every call is a POST")
        }
        if path == RCPaths.privateHistory || path == RCPaths.groupHistory {
            let query: RCHistoryQuery
            do {
                query = try JSONDecoder().decode(RCHistoryQuery.self, from: Data(request.body))
            } catch {
                throw RongCloudSandboxError.parameter("the body must be JSON with userId, targetId, startTime, endTime: \(error)")
            }
            return (.json(try store.history(query, group: path == RCPaths.groupHistory)), [])
        }
        guard Self.servedPaths.contains(path) else { throw RongCloudSandboxError(404, "no API at \(path)") }
        guard !request.body.isEmpty else { throw RongCloudSandboxError(RongCloudErrors.noPostData) }
        let form = request.form
        switch path {
        case RCPaths.getToken:
            return (.json(try store.getToken(userId: form["userId"], name: form["name"], portraitUri: form["portraitUri"])), [])
        case RCPaths.userInfo:
            return (.json(try store.userInfo(form)), [])
        case RCPaths.userRefresh:
            try store.refreshUser(form)
            return (Self.ok, [])
        case RCSandboxPaths.userCheckOnline:
            return (.json(try store.checkOnline(form)), [])
        case RCPaths.privatePublish, RCPaths.groupPublish, RCSandboxPaths.systemPublish:
            guard let publish = RCPublishForm(form: form) else {
                throw RongCloudSandboxError.parameter("fromUserId, objectName and content are required")
            }
            let type: RCConversationType = path == RCPaths.groupPublish ? .group : path == RCPaths.privatePublish ? .private : .system
            let result = try store.publish(publish, type: type)
            return (.json(RCPublishResponse(messageUIDs: result.entries)), result.routed)
        case RCPaths.recall:
            return (Self.ok, try store.recall(form).map { [$0] } ?? [])
        case RCPaths.expansionSet, RCPaths.expansionDelete:
            return (Self.ok, try store.updateExpansion(form, delete: path == RCPaths.expansionDelete).map { [$0] } ?? [])
        case RCPaths.expansionQuery:
            return (.json(try store.queryExpansion(form)), [])
        case _ where RCPaths.groupPaths.contains(path):
            return (try store.directory(path, form), [])
        case RCSandboxPaths.historyLog:
            return (.json(try store.historyLog(form)), [])
        default:
            throw RongCloudSandboxError(404, "no API at \(path)")
        }
    }

    static let ok = HTTPResponseData.json(RCErrorEnvelope(code: 200, errorMessage: nil))

    /// The vendor envelope with the code's HTTP status (or `status` when given); 429 adds `Retry-After: 1`.
    static func error(_ error: RongCloudSandboxError, status: Int? = nil) -> HTTPResponseData {
        let status = status ?? (error.code == 404 ? 404 : RongCloudErrors.table.status(for: error.code))
        var response = HTTPResponseData.json(RCErrorEnvelope(code: error.code, errorMessage: error.message), status: status)
        if status == 429 { response.headers.append(("Retry-After", "1")) }
        return response
    }

    /// An injected fault: the given status with `vendorCode`, or the code that status stands for.
    public func faultResponse(status: Int, vendorCode: Int?) -> HTTPResponseData {
        let code = vendorCode ?? RongCloudErrors.table.faultCode(for: status) ?? RongCloudErrors.parameterError.code
        return Self.error(RongCloudSandboxError(code, RongCloudErrors.table.text(for: code)), status: status)
    }

    public func messages() async -> [SandboxMessageRecord] { store.messages.map(record) }

    public func users() async -> [JSONValue] {
        store.users.map { user in
            var object: [String: JSONValue] = ["userId": .string(user.id), "name": .string(user.name)]
            if let portrait = user.portrait { object["portraitUri"] = .string(portrait) }
            return .object(object)
        }
    }

    public func reset() async { store.reset() }

    public func seedGroup(_ seed: SandboxGroupSeed) async throws(SandboxGroupSeed.SeedError) {
        do { try store.seed(seed) } catch { throw .badRequest(error.message) }
    }
}

/// Paths the sandbox serves beyond those the adapter calls (`RCPaths`).
public enum RCSandboxPaths {
    public static let userCheckOnline = "/user/checkOnline.json"
    public static let systemPublish = "/message/system/publish.json"
    public static let historyLog = "/message/history.json"
}
