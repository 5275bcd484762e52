import Foundation
import IMAdapterKit
import IMCore
import IMHTTP
import IMSandbox
import NIM
import Synchronization

/// The NIM server API v1, emulated over real HTTP with in-memory state (docs/adapters/nim.md).
///
/// Served paths: `servedPaths` (POST, form-encoded, field names matched case-insensitively, JSON fields
/// read leniently by `NIMLenientJSON`, trailing slashes and an optional `/nimserver` prefix accepted).
/// Uploaded media are served at `GET /_sandbox/media/<n>.<ext>`, broadcasts listed at
/// `GET /_sandbox/broadcasts`.
///
/// Rules: every call is authenticated like NIM (AppKey, Nonce ≤ 128, CurTime within 5 minutes,
/// CheckSum = SHA1(secret + Nonce + CurTime)); every answer is HTTP 200 with `{"code":200,…}` or
/// `{"code":<4xx/5xx>,"desc":…}`. Senders must exist (create them first); teams created through
/// `/team/create.action` are kept (tid assigned here) or seeded under a chosen tid (`POST /_sandbox/groups`),
/// and a team message needs a team that exists (803) and a sender in it (804). Recall: by the original sender within `recallWindowMs` (default 2 min,
/// `ignoreTime=1` → 30 days); a recalled message leaves history. Message copies (eventType 1, 7/8,
/// custom notifications) go to the callback URL in order, signed with MD5 + CheckSum, retried (`vendorPolicy`)
/// until answered 200 (or 500: `deliveredStatuses`).
public final class NIMSandbox: SandboxVendor {
    public let appKey: String
    public let appSecret: String
    public let clock: SandboxClock
    public let recallWindowMs: Int64
    let state = Mutex(NIMSandboxState())
    let deliverer: CallbackDeliverer<NIMCopyEvent>?
    let rateLimiter: NIMSandboxRateLimiter?

    public static let thirtyDaysMs: Int64 = 30 * 86_400_000
    static let signatureWindowMs: Int64 = 5 * 60_000

    /// The message copy's default delivery: NetEase does not publish how often it retries a copy that
    /// was not answered 200 (docs/adapters/nim.md, "Callback delivery and catch-up"), so the sandbox gives up like the
    /// other vendors, after 3 attempts in total 1 s apart. `--option callback_attempts=0` retries until the
    /// copy is delivered (`deliveredStatuses`).
    public static let vendorPolicy = CallbackPolicy(maxAttempts: 3, retryMs: 1000)

    /// The answers NIM counts as a delivered copy: exactly HTTP 200, and (as its Data Sync overview says)
    /// 500; any other status, 2xx included, is a failure and the copy is sent again
    /// (docs/adapters/nim.md, "Callback delivery and catch-up").
    public static let deliveredStatuses: Set<Int> = [200, 500]

    public init(appKey: String, appSecret: String, callbackURL: String?, clock: SandboxClock,
                recallWindowMs: Int64 = 120_000, rateLimits: [RateLimit]? = nil, callbackPolicy: CallbackPolicy = NIMSandbox.vendorPolicy) {
        self.rateLimiter = rateLimits.map(NIMSandboxRateLimiter.init(limits:))
        self.appKey = appKey
        self.appSecret = appSecret
        self.clock = clock
        self.recallWindowMs = recallWindowMs
        if let callbackURL {
            self.deliverer = CallbackDeliverer<NIMCopyEvent>(policy: callbackPolicy,
                                                             isSuccess: { NIMSandbox.deliveredStatuses.contains($0) }) { [appKey, appSecret, clock] batch in
                let body = batch[0].jsonData
                let headers = NIMSignature.callbackHeaders(appKey: appKey, appSecret: appSecret, body: body, curTimeMs: clock.nowMs())
                return OutboundRequest(url: callbackURL,
                                       headers: headers.map { (name: $0.0, value: $0.1) } + [("Content-Type", "application/json")],
                                       body: body)
            }
        } else {
            self.deliverer = nil
        }
    }

    /// A ready-to-start server for `imbridge sandbox nim`: `--option recall_window_ms=N` sets the window,
    /// `--option rate_limits=on` enforces the documented rate limits (`Capabilities.nim.rateLimits`),
    /// the `CallbackPolicy` keys change how copies are retried.
    /// `--state` is refused: this sandbox keeps its state in memory only.
    public static func server(_ options: SandboxOptions) throws -> SandboxServer {
        if let path = options.statePath {
            throw IMError(.unsupported, "the NIM sandbox keeps state in memory only; --state \(path) is not supported")
        }
        let clock = SandboxClock()
        let window = options.extra["recall_window_ms"].flatMap { Int64($0) } ?? 120_000
        let limits = Lenient.bool(options.extra["rate_limits"]) == true ? Capabilities.nim.rateLimits : nil
        let vendor = NIMSandbox(appKey: options.appKey, appSecret: options.appSecret, callbackURL: options.callbackURL,
                                clock: clock, recallWindowMs: window, rateLimits: limits,
                                callbackPolicy: try vendorPolicy.applying(options.extra))
        return SandboxServer(vendor: vendor, clock: clock, host: options.host, port: options.port)
    }

    /// The callbacks' misbehaviour, armed by `POST /_sandbox/callbacks` (`CallbackMisbehaviour`).
    public var callbackMisbehaviour: CallbackMisbehaviour? { deliverer?.misbehaviour }

    /// How the message copies fared so far (delivered, dropped, pending); nil without a callback URL.
    public func deliveryStats() async -> CallbackDeliverer<NIMCopyEvent>.Stats? {
        await deliverer?.currentStats
    }

    /// Returns once every callback enqueued so far was delivered (tests).
    public func waitForCallbacks(timeoutMs: Int64 = 10_000) async -> Bool {
        await deliverer?.waitUntilIdle(timeoutMs: timeoutMs) ?? true
    }

    // MARK: envelopes

    static func ok(_ payload: [String: JSONValue] = [:]) -> HTTPResponseData {
        var object = payload
        object["code"] = 200
        return .json(JSONValue.object(object).jsonData())
    }

    /// A refusal with a code of `NIMErrors.table`, answered as the vendor does (HTTP 200 with the code).
    static func fail(_ entry: VendorErrorTable.Entry, _ desc: String? = nil) -> HTTPResponseData {
        fail(entry.code, desc ?? entry.text, status: entry.status)
    }

    static func fail(_ code: Int, _ desc: String, status: Int = 200) -> HTTPResponseData {
        .json(JSONValue.object(["code": .int(Int64(code)), "desc": .string(desc)]).jsonData(), status: status)
    }

    // MARK: SandboxVendor

    /// Every API path `handle` serves (without the `/nimserver` prefix), in the order of the table in
    /// docs/adapters/nim.md §4; a test keeps the two and the dispatch in step.
    public static let servedPaths: [String] = [
        "/user/create.action", "/user/refreshToken.action", "/user/updateUinfo.action", "/user/getUinfos.action",
        "/msg/sendMsg.action", "/msg/sendBatchMsg.action", "/msg/sendAttachMsg.action", "/msg/sendBatchAttachMsg.action",
        "/msg/broadcastMsg.action", "/msg/recall.action", "/msg/upload.action",
        "/history/querySessionMsg.action", "/history/queryTeamMsg.action",
        "/team/create.action", "/team/add.action", "/team/update.action", "/team/query.action", "/team/joinTeams.action", "/team/kick.action", "/team/remove.action",
    ]

    public func handle(_ request: HTTPRequestData) async -> HTTPResponseData {
        var path = request.normalizedPath
        if path.hasPrefix("/nimserver/") { path.removeFirst("/nimserver".count) }
        guard request.method == "POST" else { return Self.fail(NIMErrors.parameter, "method not allowed, use POST") }
        if let refusal = authenticate(request) { return refusal }
        if let rateLimiter, !rateLimiter.admit(path: path, now: clock.nowMs()) { return Self.fail(NIMErrors.frequencyControl, "frequency control") }
        let form = NIMForm(request.form)
        switch path {
        case "/user/create.action": return createUser(form)
        case "/user/refreshToken.action": return refreshToken(form)
        case "/user/updateUinfo.action": return updateUinfo(form)
        case "/user/getUinfos.action": return getUinfos(form)
        case "/msg/sendBatchAttachMsg.action": return await sendBatchAttach(form)
        case "/msg/broadcastMsg.action": return broadcast(form)
        case "/msg/sendMsg.action": return await sendMessage(form)
        case "/msg/sendBatchMsg.action": return await sendBatch(form)
        case "/msg/sendAttachMsg.action": return await sendAttach(form)
        case "/msg/recall.action": return await recall(form)
        case "/msg/upload.action": return upload(form, host: request.header("Host"))
        case "/history/querySessionMsg.action": return history(form, team: false)
        case "/history/queryTeamMsg.action": return history(form, team: true)
        case "/team/create.action": return createTeam(form)
        case "/team/add.action": return addTeamMembers(form)
        case "/team/update.action": return updateTeam(form)
        case "/team/query.action": return queryTeams(form)
        case "/team/joinTeams.action": return joinTeams(form)
        case "/team/kick.action": return kickTeamMembers(form)
        case "/team/remove.action": return await removeTeam(form)
        default: return Self.fail(NIMErrors.notFound, "no such api \(path)")
        }
    }

    /// NIM's request authentication; nil when the request passes.
    func authenticate(_ request: HTTPRequestData) -> HTTPResponseData? {
        guard let key = request.header("AppKey"), key == appKey else { return Self.fail(NIMErrors.parameter, "appkey") }
        guard let nonce = request.header("Nonce"), !nonce.isEmpty, nonce.count <= 128,
              let curTime = request.header("CurTime"), let seconds = Int64(curTime),
              let checkSum = request.header("CheckSum") else { return Self.fail(NIMErrors.parameter, "checksum") }
        let expected = NIMSignature.requestCheckSum(appSecret: appSecret, nonce: nonce, curTime: curTime)
        guard NIMSignature.equalHex(checkSum, expected) else { return Self.fail(NIMErrors.parameter, "checksum") }
        let signedMs = seconds * 1000
        let fresh = [clock.nowMs(), SystemClock().nowMs()].contains { abs($0 - signedMs) <= Self.signatureWindowMs }
        return fresh ? nil : Self.fail(NIMErrors.parameter, "CurTime is expired")
    }

    public func faultResponse(status: Int, vendorCode: Int?) -> HTTPResponseData {
        let code = vendorCode ?? NIMErrors.table.faultCode(for: status) ?? status
        let response = Self.fail(code, NIMErrors.table.text(for: code), status: NIMErrors.table.status(for: code))
        guard vendorCode == nil, status != 200, status != 429 else { return response }
        return HTTPResponseData(status: status, headers: response.headers, body: response.body)
    }

    public func reset() async {
        state.withLock { $0 = NIMSandboxState() }
        rateLimiter?.reset()
    }

    public func users() async -> [JSONValue] {
        state.withLock { state in
            state.userOrder.compactMap { state.users[$0] }.map { user in
                var object = user.uinfo.objectValue ?? [:]
                object["token"] = .string(user.token)
                object["valid"] = nil
                object["mute"] = nil
                return .object(object)
            }
        }
    }

    public func handleSandboxExtra(_ request: HTTPRequestData) async -> HTTPResponseData? {
        let path = request.normalizedPath
        if request.method == "GET", path == "/_sandbox/broadcasts" { return broadcastList() }
        guard request.method == "GET", path.hasPrefix("/_sandbox/media/") else { return nil }
        let name = String(path.dropFirst("/_sandbox/media/".count))
        guard let bytes = state.withLock({ $0.media[name] }) else { return .text("no media \(name)", status: 404) }
        let mime = NIMMediaTypes.fileExtension(ofName: name).flatMap(NIMMediaTypes.mime(forExtension:)) ?? "application/octet-stream"
        return HTTPResponseData(status: 200, headers: [("Content-Type", mime)], body: bytes)
    }

    func enqueue(_ copy: NIMCopyEvent) async {
        await deliverer?.enqueue(copy)
    }

    /// Hands copies to the deliverer under `state`'s lock, so that they are called back in the order the
    /// store took the messages (their msgid order); `queueSubmitted` (after the lock) queues them. An
    /// `enqueue` after the lock let two concurrent sends be called back the other way round
    /// (docs/reliability.md, Finding 12).
    func submit(_ copies: [NIMCopyEvent]) { deliverer?.submit(copies) }

    func queueSubmitted() async { await deliverer?.takeSubmitted() }
}

/// A received form with NIM's case-insensitive field names.
struct NIMForm {
    let form: FormBody
    init(_ form: FormBody) { self.form = form }
    subscript(name: String) -> String? { form.value(caseInsensitive: name) }
    func int(_ name: String) -> Int64? { Lenient.int64(self[name]) }
}
