import IMCore
import IMHTTP

/// Settings every sandbox takes (`imbridge sandbox <vendor> …`). `extra` carries vendor-specific
/// `--option key=value` pairs (a WuKong manager token, a webhook secret …).
public struct SandboxOptions: Sendable {
    public var host: String
    public var port: Int
    public var appKey: String
    public var appSecret: String
    public var callbackURL: String?
    /// A SQLite file to keep state in; nil keeps it in memory.
    public var statePath: String?
    public var extra: [String: String]

    public init(host: String = "127.0.0.1", port: Int = 0, appKey: String = "sandbox-app-key",
                appSecret: String = "sandbox-app-secret", callbackURL: String? = nil, statePath: String? = nil,
                extra: [String: String] = [:]) {
        self.host = host
        self.port = port
        self.appKey = appKey
        self.appSecret = appSecret
        self.callbackURL = callbackURL
        self.statePath = statePath
        self.extra = extra
    }
}

/// One vendor's emulated server API. `SandboxServer` serves it and adds the `/_sandbox/` namespace
/// (introspection, faults, clock) in front of it, so a vendor only implements its own API.
public protocol SandboxVendor: Sendable {
    /// Handles a request to the vendor's API (never one under `/_sandbox/`).
    func handle(_ request: HTTPRequestData) async -> HTTPResponseData
    /// Every stored message in order (`GET /_sandbox/messages`).
    func messages() async -> [SandboxMessageRecord]
    /// Known users as JSON objects (`GET /_sandbox/users`).
    func users() async -> [JSONValue]
    /// Forgets all state (`POST /_sandbox/reset`).
    func reset() async
    /// The vendor's own error answer for an injected fault: the HTTP status and, if given, the vendor code
    /// in the vendor's envelope (RongCloud `{"code":1008,…}` with 429, NIM `{"code":416}` with 200 …).
    func faultResponse(status: Int, vendorCode: Int?) -> HTTPResponseData
    /// Vendor-specific introspection under `/_sandbox/` (nil: not found).
    func handleSandboxExtra(_ request: HTTPRequestData) async -> HTTPResponseData?
    /// Plants `drift` on a stored message (`POST /_sandbox/drift`, `SandboxDrift`); the id of the message
    /// it leaves (the new copy's for `double`).
    func plantDrift(_ drift: SandboxDrift) async throws(SandboxDrift.DriftError) -> String
    /// Puts a group under the id the test chose (`POST /_sandbox/groups`, `SandboxGroupSeed`):
    /// test-only control for the vendors that refuse group messages into groups they do not have.
    func seedGroup(_ seed: SandboxGroupSeed) async throws(SandboxGroupSeed.SeedError)
    /// The misbehaviour of the sandbox's callbacks (`POST /_sandbox/callbacks`); nil where it sends none.
    var callbackMisbehaviour: CallbackMisbehaviour? { get }
}

extension SandboxVendor {
    public func handleSandboxExtra(_ request: HTTPRequestData) async -> HTTPResponseData? { nil }
    public func plantDrift(_ drift: SandboxDrift) async throws(SandboxDrift.DriftError) -> String {
        throw .unsupported("this sandbox plants no drift")
    }
    public func seedGroup(_ seed: SandboxGroupSeed) async throws(SandboxGroupSeed.SeedError) {
        throw .unsupported("this sandbox keeps no groups")
    }
    public var callbackMisbehaviour: CallbackMisbehaviour? { nil }
}

/// A stored message as `GET /_sandbox/messages` shows it (docs/architecture.md, "Sandboxes"): the same fields for
/// every vendor, so tests and migration checks compare sandboxes without knowing their wire formats.
public struct SandboxMessageRecord: Codable, Hashable, Sendable {
    public var id: String
    /// `direct`, `group` or `chatroom`.
    public var conversationType: String
    /// For direct: the two users sorted and comma-joined (as `ConversationRef.direct`); else the group/room id.
    public var conversationID: String
    public var from: String
    public var to: String
    public var sentAtMs: Int64
    /// text, image, gif, voice, video, file, location, card, custom, notice, command.
    public var kind: String
    /// The text, or the digest for other kinds.
    public var text: String
    public var recalled: Bool
    public var edited: Bool
    public var expansion: [String: String]
    /// The vendor-shaped stored object.
    public var raw: JSONValue
    /// When the sandbox accepted the message, wall-clock microseconds (not the vendor's stamp, which a
    /// sandbox may keep strictly increasing); for latency measurements. Nil where a sandbox does not say.
    public var receivedAtUs: Int64?

    public init(id: String, conversationType: String, conversationID: String, from: String, to: String, sentAtMs: Int64,
                kind: String, text: String, recalled: Bool = false, edited: Bool = false, expansion: [String: String] = [:],
                raw: JSONValue, receivedAtUs: Int64? = nil) {
        self.receivedAtUs = receivedAtUs
        self.id = id
        self.conversationType = conversationType
        self.conversationID = conversationID
        self.from = from
        self.to = to
        self.sentAtMs = sentAtMs
        self.kind = kind
        self.text = text
        self.recalled = recalled
        self.edited = edited
        self.expansion = expansion
        self.raw = raw
    }

    enum CodingKeys: String, CodingKey {
        case id, from, to, kind, text, recalled, edited, expansion, raw
        case conversationType = "conversation_type"
        case conversationID = "conversation_id"
        case sentAtMs = "sent_at_ms"
        case receivedAtUs = "received_at_us"
    }
}
