import Foundation
import IMCore
import IMHTTP
import IMSandbox
import SandboxTestSupport
import WuKong
import WuKongSandbox

/// WuKong's own helpers over the shared `SandboxRig`: a sandbox with a given configuration, a text
/// sent through `/message/send` by hand, `/channel/messagesync`, and WuKong's base64 payloads.
extension SandboxRig {
    static func wukong(managerToken: String? = nil, callbackURL: String? = nil, secret: String? = nil,
                       intervalMs: Int64 = 20, statePath: String? = nil) async throws -> SandboxRig {
        let clock = SandboxClock()
        let sandbox = try WuKongSandbox(configuration: .init(managerToken: managerToken, callbackURL: callbackURL, webhookSecret: secret,
                                                             notifyIntervalMs: intervalMs, retryBaseMs: 20), clock: clock,
                                        stateFile: try statePath.map(SandboxStateFile.init(path:)))
        return try await SandboxRig.start(SandboxServer(vendor: sandbox, clock: clock))
    }

    static func b64(_ json: String) -> String { Data(json.utf8).base64EncodedString() }

    /// Sends a text message through `/message/send`; returns the message id.
    @discardableResult
    func sendText(_ text: String, from: String, to channel: String, type: Int = 1, header: String = #"{"red_dot":1}"#) async throws -> Int64 {
        let reply = try await postJSON("/message/send", """
        {"header":\(header),"from_uid":"\(from)","channel_id":"\(channel)","channel_type":\(type),
         "payload":"\(Self.b64(#"{"type":1,"content":"\#(text)"}"#))"}
        """)
        guard let id = reply.json["data"]?["message_id"]?.int64Value else { throw IMError(.malformedPayload, "send reply \(reply.text)") }
        return id
    }

    /// `/channel/messagesync` with a hand-built body: the seqs, `more`, and the rendered messages.
    func sync(_ body: String) async throws -> (seqs: [Int64], more: Int64, messages: [JSONValue]) {
        let reply = try await postJSON("/channel/messagesync", body)
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
