import Foundation
import IMCore
import IMHTTP
import IMSandbox

/// Where a sandbox started by a `SandboxHelper` sends its callbacks (webhooks, routing pushes, message copies).
public enum SandboxCallbacks: Sendable {
    /// Nowhere.
    case none
    /// To a new `CallbackRecorder` (the helper's `callbacks`) answering the vendor's success, at the
    /// vendor's callback path or at `path`.
    case recorded(path: String? = nil)
    /// To a URL of the test's own (a real receiver).
    case url(String)
}

/// What a test chooses when it starts a vendor's sandbox; `init()` is what most of the vendor's tests use.
public protocol SandboxHelperSettings: Sendable {
    init()
    var callbacks: SandboxCallbacks { get }
}

/// The body of a request built by hand.
public enum SandboxRequestBody: Sendable, ExpressibleByArrayLiteral {
    case empty
    /// JSON text, sent with the helper's `jsonContentType`.
    case json(String)
    /// Form fields, encoded here (an array literal of pairs is one).
    case form([(String, String)])
    /// A form body written by hand (`a=1&b=2`), sent as it is.
    case formText(String)
    case bytes([UInt8], contentType: String)

    public init(arrayLiteral elements: (String, String)...) { self = .form(elements) }
}

/// How a test starts one vendor's sandbox and reads and writes it: the one shape of every vendor's sandbox
/// helper (`Tests/<Vendor>Tests/<Vendor>SandboxHelper.swift`). A helper is a started sandbox (`rig`: its
/// server and the raw HTTP helpers) and, when asked for, the recorder its callbacks go to. What is the
/// vendor's own stays in the helper: its settings, how it signs a server-API request, how a text is sent,
/// and what it still has to deliver before it stops. Requests are built by hand (not with the adapter's
/// client), so the sandbox and the client cannot share a misunderstanding.
public protocol SandboxHelper: Sendable {
    associatedtype Vendor: SandboxVendor
    associatedtype Settings: SandboxHelperSettings
    /// What the vendor's send answers, as the tests read it (the message id, or the whole answer).
    associatedtype Sent: Sendable

    init(rig: SandboxRig, callbacks: CallbackRecorder?, settings: Settings)
    var rig: SandboxRig { get }
    /// The recorder the callbacks go to (`SandboxCallbacks.recorded`); nil otherwise.
    var callbacks: CallbackRecorder? { get }

    /// The sandbox's server (not started) for `settings`, its callbacks going to `callbackURL`.
    static func makeServer(_ settings: Settings, callbackURL: String?) throws -> SandboxServer
    /// Where the vendor posts its callbacks, below the receiver's base URL.
    static var callbackPath: String { get }
    /// The vendor's success answer to a callback (what a recorder answers).
    static func callbackAnswer(_ request: HTTPRequestData) async -> HTTPResponseData

    /// The headers that authenticate a server-API request the way the vendor documents it.
    func signedHeaders() -> [(name: String, value: String)]
    /// The `Content-Type` of a JSON body (`SandboxRequestBody.json`).
    var jsonContentType: String { get }
    /// Sends a text from `from` to `to` through the server API, with a hand-built request.
    func sendText(_ text: String, from: String, to: String) async throws -> Sent
    /// Waits (bounded) for what the sandbox still has to deliver; `stop` calls it first.
    func settle() async
    /// Puts a group on the sandbox under an id the test chose, with this owner and these members, as an
    /// operator who created it beforehand would have it (`POST /_sandbox/groups`, test-only control:
    /// docs/adapters/<vendor>.md). NIM tids and JMessage gids are numbers. Seeding again replaces the
    /// owner and the members. Users are not registered by it.
    func seedGroup(_ id: String, owner: String, members: [String], name: String?) async throws
}

extension SandboxHelper {
    /// Builds the sandbox for `settings`, starts it, and starts the recorder its callbacks go to when asked.
    public static func start(_ settings: Settings = Settings()) async throws -> Self {
        var recorder: CallbackRecorder?
        var callbackURL: String?
        switch settings.callbacks {
        case .none: break
        case .url(let url): callbackURL = url
        case .recorded(let path):
            let started = CallbackRecorder(answer: { await Self.callbackAnswer($0) })
            callbackURL = try await started.start() + (path ?? callbackPath)
            recorder = started
        }
        let server = try makeServer(settings, callbackURL: callbackURL)
        do {
            return Self(rig: try await SandboxRig.start(server), callbacks: recorder, settings: settings)
        } catch {
            await recorder?.stop()
            throw error
        }
    }

    /// Runs `body` against a fresh sandbox and always stops it afterwards.
    public static func with(_ settings: Settings = Settings(), _ body: (Self) async throws -> Void) async throws {
        let helper = try await start(settings)
        do {
            try await body(helper)
        } catch {
            await helper.stop()
            throw error
        }
        await helper.stop()
    }

    /// Stops the sandbox once it has settled, then its recorder.
    public func stop() async {
        await settle()
        await rig.stop()
        await callbacks?.stop()
    }

    public func settle() async {}

    public func seedGroup(_ id: String, owner: String, members: [String], name: String? = nil) async throws {
        try await rig.seedGroup(id, owner: owner, members: members, name: name)
    }
    public var jsonContentType: String { "application/json" }
    public static func callbackAnswer(_ request: HTTPRequestData) async -> HTTPResponseData { .json(Data("{}".utf8)) }

    public var vendor: Vendor { rig.server.vendor as! Vendor }
    public var baseURL: String { rig.baseURL }
    public var http: HTTPClientWrapper { rig.http }
    public var clock: SandboxClock { rig.server.clock }

    /// One request to the vendor's server API, signed as the vendor documents it, or carrying `headers`
    /// instead of the signature (a forged or missing one).
    @discardableResult
    public func call(_ method: String, _ path: String, _ body: SandboxRequestBody = .empty,
                     headers: [(name: String, value: String)]? = nil) async throws -> SandboxRig.Reply {
        let bytes: [UInt8], contentType: String?
        switch body {
        case .empty: (bytes, contentType) = ([], nil)
        case .json(let text): (bytes, contentType) = (Array(text.utf8), jsonContentType)
        case .form(let fields):
            bytes = Array(fields.map { "\(FormBody.escape($0.0))=\(FormBody.escape($0.1))" }.joined(separator: "&").utf8)
            contentType = "application/x-www-form-urlencoded;charset=utf-8"
        case .formText(let text): (bytes, contentType) = (Array(text.utf8), "application/x-www-form-urlencoded")
        case .bytes(let raw, let type): (bytes, contentType) = (raw, type)
        }
        return try await rig.send(method, path, body: bytes, headers: (headers ?? signedHeaders()) + (contentType.map { [("Content-Type", $0)] } ?? []))
    }

    // The raw, unsigned requests of `SandboxRig`.

    @discardableResult
    public func send(_ method: String, _ path: String, body: [UInt8] = [], headers: [(name: String, value: String)] = []) async throws -> SandboxRig.Reply {
        try await rig.send(method, path, body: body, headers: headers)
    }

    @discardableResult
    public func postJSON(_ path: String, _ json: String, headers: [(name: String, value: String)] = []) async throws -> SandboxRig.Reply {
        try await rig.postJSON(path, json, headers: headers)
    }

    @discardableResult
    public func get(_ path: String, headers: [(name: String, value: String)] = []) async throws -> SandboxRig.Reply {
        try await rig.get(path, headers: headers)
    }

    /// `GET /_sandbox/messages`: every stored message in the shared record shape.
    public func messages() async throws -> [SandboxMessageRecord] { try await rig.messages() }

    /// Advances the sandbox clock.
    public func advanceClock(byMs ms: Int64) { rig.advanceClock(byMs: ms) }
}
