import Foundation
import IMCore
import IMHTTP
import IMSandbox
import SandboxTestSupport
import WuKong
import WuKongSandbox

/// WuKong's `SandboxHelper`: a sandbox with a given configuration, a text sent through `/message/send` by
/// hand, `/channel/messagesync`, and WuKong's base64 payloads. Its webhooks (`msg.notify` …) go where the
/// test says (a recorder answering 200 `{}` with `.recorded`).
struct WuKongSandboxHelper: SandboxHelper {
    typealias Vendor = WuKongSandbox

    struct Settings: SandboxHelperSettings {
        var callbacks: SandboxCallbacks = .none
        /// The manager token every WuKongIM route asks for (nil: none).
        var managerToken: String?
        /// The webhook secret header's value.
        var secret: String?
        /// How long `msg.notify` batches collect messages.
        var intervalMs: Int64 = 20
        var statePath: String?
        /// When set: the sandbox as `imbridge sandbox wukong` builds it (the vendor's delivery policy), with
        /// these `--option`s, instead of the quick test configuration above.
        var vendorOptions: [String: String]?
        init() {}
        init(callbacks: SandboxCallbacks = .none, managerToken: String? = nil, secret: String? = nil, intervalMs: Int64 = 20,
             statePath: String? = nil, vendorOptions: [String: String]? = nil) {
            self.callbacks = callbacks
            self.managerToken = managerToken
            self.secret = secret
            self.intervalMs = intervalMs
            self.statePath = statePath
            self.vendorOptions = vendorOptions
        }
    }

    let rig: SandboxRig
    let callbacks: CallbackRecorder?
    let settings: Settings

    /// The webhook URL is the receiver's base URL unless the test gives a path.
    static let callbackPath = ""

    static func makeServer(_ settings: Settings, callbackURL: String?) throws -> SandboxServer {
        if let options = settings.vendorOptions {
            return try WuKongSandbox.server(options: SandboxOptions(callbackURL: callbackURL, extra: options))
        }
        let clock = SandboxClock()
        let sandbox = try WuKongSandbox(configuration: .init(managerToken: settings.managerToken, callbackURL: callbackURL,
                                                             webhookSecret: settings.secret, notifyIntervalMs: settings.intervalMs, retryBaseMs: 20),
                                        clock: clock, stateFile: try settings.statePath.map(SandboxStateFile.init(path:)))
        return SandboxServer(vendor: sandbox, clock: clock)
    }

    /// WuKongIM's routes take the manager token, when one is configured, in the `token` header.
    func signedHeaders() -> [(name: String, value: String)] { settings.managerToken.map { [("token", $0)] } ?? [] }

    static func b64(_ json: String) -> String { Data(json.utf8).base64EncodedString() }

    @discardableResult
    func sendText(_ text: String, from: String, to: String) async throws -> Int64 {
        try await sendText(text, from: from, to: to, type: 1)
    }

    /// Sends a text message through `/message/send` to a channel of `type` (1 person, 2 group); returns the message id.
    @discardableResult
    func sendText(_ text: String, from: String, to channel: String, type: Int = 1, header: String = #"{"red_dot":1}"#) async throws -> Int64 {
        let reply = try await call("POST", "/message/send", .json("""
        {"header":\(header),"from_uid":"\(from)","channel_id":"\(channel)","channel_type":\(type),
         "payload":"\(Self.b64(#"{"type":1,"content":"\#(text)"}"#))"}
        """))
        guard let id = reply.json["data"]?["message_id"]?.int64Value else { throw IMError(.malformedPayload, "send reply \(reply.text)") }
        return id
    }

    /// `/channel/messagesync` with a hand-built body: the seqs, `more`, and the rendered messages.
    func sync(_ body: String) async throws -> (seqs: [Int64], more: Int64, messages: [JSONValue]) {
        let reply = try await call("POST", "/channel/messagesync", .json(body))
        let messages = reply.json["messages"]?.arrayValue ?? []
        return (messages.compactMap { $0["message_seq"]?.int64Value }, reply.json["more"]?.int64Value ?? -1, messages)
    }
}

extension HTTPRequestData {
    /// The webhook body as JSON (`.null` when it is not JSON).
    var jsonBody: JSONValue { (try? JSONValue.parse(Data(body))) ?? .null }
}

extension WuKongSettings {
    /// Settings that talk to `imURL`, with the few fields a test sets; every other field keeps its default.
    static func at(_ imURL: String, managerToken: String? = nil, webhookSecret: String? = nil, timeout: Duration? = nil) -> WuKongSettings {
        var settings = WuKongSettings(imURL: imURL)
        settings.managerToken = managerToken
        settings.webhookSecret = webhookSecret
        if let timeout { settings.timeout = timeout }
        return settings
    }
}
