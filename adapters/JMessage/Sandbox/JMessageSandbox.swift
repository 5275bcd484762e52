import JMessage
import Foundation
import IMAdapterKit
import IMCore
import IMHTTP
import IMSandbox

/// The JMessage server API emulated over real HTTP: REST v1 (`/v1/…`) and report v2 (`/v2/…`) on one
/// port (configure the adapter's `apiBaseURL` and `reportBaseURL` both to it), Basic auth with
/// appKey:masterSecret, the `{"error":{"code","message"}}` envelope, and — when a callback URL is
/// set — the routing push (`{"total","messages"}` with Basic auth, retried until 2xx, in order).
///
/// Auth refusals: no `Authorization` → 401 899007; not Basic / undecodable / wrong secret → 401
/// 899008; unknown appKey → 401 899009. Paths are matched without trailing slashes.
/// Media downloads are served outside the vendor namespace at `/_sandbox/media/<media_id>` (the
/// role of JMessage's CDN; no auth, like the vendor's signed links).
public final class JMessageSandbox: SandboxVendor {
    public let store: JMessageSandboxStore
    let appKey: String
    let masterSecret: String

    /// Throws when `options.statePath` names a state file that cannot be opened or read.
    public init(options: SandboxOptions, clock: SandboxClock) throws {
        self.appKey = options.appKey
        self.masterSecret = options.appSecret
        var push: CallbackDeliverer<JMHistoryMessage>?
        if let url = options.callbackURL {
            let authorization = JMessageSettings.authorization(appKey: options.appKey, masterSecret: options.appSecret)
            push = CallbackDeliverer<JMHistoryMessage>(maxBatch: 20, retryBaseMs: 100, retryMaxMs: 5000) { batch in
                let encoder = JSONEncoder()
                encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
                let body = (try? encoder.encode(JMRoutingPush(total: batch.count, messages: batch))) ?? Data()
                return OutboundRequest(url: url, headers: [("Authorization", authorization),
                                                           ("Content-Type", "application/json; charset=utf-8")], body: Array(body))
            }
        }
        self.store = try JMessageSandboxStore(appKey: options.appKey, clock: clock, push: push,
                                              stateFile: options.statePath.map(SandboxStateFile.init(path:)))
    }

    /// A server for `imbridge sandbox jmessage …` (not yet started). State is in memory, or in
    /// `--state FILE` (saved after every change; report cursors are not kept).
    public static func makeServer(_ options: SandboxOptions) async throws -> SandboxServer {
        let clock = SandboxClock()
        return SandboxServer(vendor: try JMessageSandbox(options: options, clock: clock), clock: clock, host: options.host, port: options.port)
    }

    /// Every route `handle` serves, as `METHOD /path` with `{placeholders}`, in the order of the table in
    /// docs/adapters/jmessage.md §5; a test checks the table, this list and the running sandbox agree.
    public static let servedRoutes: [String] = [
        "POST /v1/admins", "POST /v1/users", "GET /v1/users/{username}", "POST /v1/groups",
        "POST /v1/groups/{gid}/members", "GET /v1/groups/{gid}/members",
        "PUT /v1/users/{username}", "GET /v1/users", "GET /v1/users/{username}/groups", "GET /v1/groups/{gid}", "PUT /v1/groups/{gid}", "DELETE /v1/groups/{gid}",
        "GET /v1/groups", "POST /v1/messages",
        "POST /v1/messages/{username}/{msgid}/retract", "POST /v1/resource", "GET /v1/resource",
        "GET /v2/messages", "GET /v2/users/{username}/messages", "GET /v2/groups/{gid}/messages",
        "GET /v2/chatrooms/{id}/messages",
    ]

    public func handle(_ request: HTTPRequestData) async -> HTTPResponseData {
        if let refusal = authenticate(request) { return refusal }
        let path = request.normalizedPath
        let segments = path.split(separator: "/").map { FormBody.parse("x=" + $0).first?.value ?? String($0) }
        switch (request.method, segments.count) {
        case ("POST", _) where path == "/v1/admins": return await store.persist(await store.registerAdmin(request))
        case ("POST", _) where path == "/v1/users": return await store.persist(await store.registerUsers(request))
        case ("GET", 3) where segments[1] == "users": return await store.user(segments[2])
        case ("POST", _) where path == "/v1/groups": return await store.persist(await store.createGroup(request))
        case ("POST", 4) where segments[1] == "groups" && segments[3] == "members": return await store.persist(await store.updateMembers(segments[2], request))
        case ("GET", 4) where segments[1] == "groups" && segments[3] == "members": return await store.members(segments[2])
        case ("POST", _) where path == "/v1/messages": return await store.persist(await store.send(request))
        case ("POST", 5) where segments[1] == "messages" && segments[4] == "retract":
            return await store.persist(await store.retract(username: segments[2], msgid: segments[3]))
        case ("POST", _) where path == "/v1/resource": return await store.persist(await store.upload(request))
        case ("GET", _) where path == "/v1/resource": return await store.resource(request)
        case ("GET", _) where segments.first == "v2" && segments.last == "messages": return await store.report(request, segments: segments)
        case ("PUT", 3) where path.hasPrefix("/v1/users/"): return await store.persist(await store.updateUser(segments[2], request))
        case ("GET", 2) where path == "/v1/users": return await store.listUsers(request)
        case ("GET", 4) where path.hasPrefix("/v1/users/") && segments[3] == "groups": return await store.groupsOf(segments[2])
        case ("GET", 3) where path.hasPrefix("/v1/groups/"): return await store.group(segments[2])
        case ("PUT", 3) where path.hasPrefix("/v1/groups/"): return await store.persist(await store.updateGroup(segments[2], request))
        case ("DELETE", 3) where path.hasPrefix("/v1/groups/"): return await store.persist(await store.deleteGroup(segments[2]))
        case ("GET", 2) where path == "/v1/groups": return await store.listGroups(request)
        default:
            return Self.error(JMessageErrors.invalidParameter, status: 404, "no such API: \(request.method) \(path)")
        }
    }

    func authenticate(_ request: HTTPRequestData) -> HTTPResponseData? {
        guard let header = request.header("Authorization") else { return Self.error(JMessageErrors.missingAuth, "Authen failed: missing Authorization") }
        let parts = header.split(separator: " ", maxSplits: 1)
        guard parts.count == 2, parts[0].lowercased() == "basic",
              let data = Data(base64Encoded: parts[1].trimmingCharacters(in: .whitespaces)),
              let text = String(data: data, encoding: .utf8), let colon = text.firstIndex(of: ":") else {
            return Self.error(JMessageErrors.basicAuthFailed, "Basic authentication failed")
        }
        guard text[..<colon].caseInsensitiveCompare(appKey) == .orderedSame else { return Self.error(JMessageErrors.unknownAppKey, "appkey not exist") }
        guard Hashing.constantTimeEquals(String(text[text.index(after: colon)...]), masterSecret) else {
            return Self.error(JMessageErrors.basicAuthFailed, "Basic authentication failed")
        }
        return nil
    }

    public func messages() async -> [SandboxMessageRecord] { await store.records() }
    public func users() async -> [JSONValue] { await store.userList() }
    public func reset() async { await store.reset() }

    public func faultResponse(status: Int, vendorCode: Int?) -> HTTPResponseData {
        let code = vendorCode ?? JMessageErrors.table.faultCode(for: status) ?? JMessageErrors.invalidParameter.code
        var response = Self.error(status, code, JMessageErrors.table.text(for: code))
        if status == 429 { response.headers.append(("X-Rate-Limit-Reset", "1")) }
        return response
    }

    public func seedGroup(_ seed: SandboxGroupSeed) async throws(SandboxGroupSeed.SeedError) {
        try await store.seed(seed)
    }

    /// The routing push's misbehaviour, armed by `POST /_sandbox/callbacks` (`CallbackMisbehaviour`).
    public var callbackMisbehaviour: CallbackMisbehaviour? { store.push?.misbehaviour }

    public func handleSandboxExtra(_ request: HTTPRequestData) async -> HTTPResponseData? {
        let prefix = "/_sandbox/media/"
        guard request.method == "GET", request.path.hasPrefix(prefix) else { return nil }
        let id = FormBody.parse("x=" + request.path.dropFirst(prefix.count)).first?.value ?? ""
        return await store.mediaBytes(id)
    }

    /// A refusal with an entry of `JMessageErrors.table`, with its HTTP status unless `status` is given.
    static func error(_ entry: VendorErrorTable.Entry, status: Int? = nil, _ message: String? = nil) -> HTTPResponseData {
        error(status ?? entry.status, entry.code, message ?? entry.text)
    }

    static func error(_ body: JMErrorEnvelope.Body) -> HTTPResponseData {
        error(JMessageErrors.table.status(for: body.code), body.code, body.message)
    }

    static func error(_ status: Int, _ code: Int, _ message: String) -> HTTPResponseData {
        .json(JMErrorEnvelope(code: code, message: message), status: status)
    }
}
