import Foundation
import IMCore
import IMHTTP
import IMSandbox
import Synchronization
@testable import WuKong

/// Records webhook requests; answers `failFirst` of them with HTTP 500, the rest with 200.
final class WebhookRecorder: Sendable {
    struct Received: Sendable {
        var query: String
        var secretHeader: String?
        var body: JSONValue
    }
    final class Store: Sendable {
        let state: Mutex<(received: [Received], failuresLeft: Int)>
        init(failFirst: Int) { state = Mutex(([], failFirst)) }
    }
    let store: Store
    let server: HTTPServer

    init(failFirst: Int = 0, failStatus: Int = 500, forward: (@Sendable (HTTPRequestData) async -> HTTPResponseData)? = nil) {
        let store = Store(failFirst: failFirst)
        self.store = store
        server = HTTPServer { request in
            let fail = store.state.withLock { state -> Bool in
                state.received.append(Received(query: request.rawQuery ?? "", secretHeader: request.header(WuKongInbound.secretHeader),
                                               body: (try? JSONValue.parse(Data(request.body))) ?? .null))
                guard state.failuresLeft > 0 else { return false }
                state.failuresLeft -= 1
                return true
            }
            if fail { return HTTPResponseData(status: failStatus) }
            if let forward { return await forward(request) }
            return .json(["status": 200])
        }
    }

    var all: [Received] { store.state.withLock { $0.received } }

    /// Waits (bounded) until `condition` holds for the received requests.
    func wait(timeout: Double = 5, _ condition: ([Received]) -> Bool) async -> [Received] {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            let now = all
            if condition(now) { return now }
            try? await Task.sleep(nanoseconds: 10_000_000)
        }
        return all
    }
}

/// A running sandbox plus a raw JSON poster (hand-built requests, independent of `WuKongClient`).
struct SandboxHarness {
    let server: SandboxServer
    let sandbox: WuKongSandbox
    let http = HTTPClientWrapper(timeoutSeconds: 10)
    var base: String { server.baseURL }

    static func start(managerToken: String? = nil, callbackURL: String? = nil, secret: String? = nil,
                      intervalMs: Int64 = 20, statePath: String? = nil) async throws -> SandboxHarness {
        let clock = SandboxClock()
        let sandbox = try WuKongSandbox(configuration: .init(managerToken: managerToken, callbackURL: callbackURL, webhookSecret: secret,
                                                             notifyIntervalMs: intervalMs, retryBaseMs: 20), clock: clock,
                                        stateFile: try statePath.map(SandboxStateFile.init(path:)))
        let server = SandboxServer(vendor: sandbox, clock: clock)
        try await server.start()
        return SandboxHarness(server: server, sandbox: sandbox)
    }

    @discardableResult
    func post(_ path: String, _ json: String, headers: [(name: String, value: String)] = []) async throws -> (status: Int, body: JSONValue, raw: String) {
        let response = try await http.send(OutboundRequest.json(base + path, Data(json.utf8), headers: headers))
        let raw = response.bodyString
        return (response.status, (try? JSONValue.parse(Data(response.body))) ?? .null, raw)
    }

    func get(_ path: String) async throws -> JSONValue {
        let response = try await http.send(OutboundRequest(method: "GET", url: base + path))
        return try JSONValue.parse(Data(response.body))
    }

    static func b64(_ json: String) -> String { Data(json.utf8).base64EncodedString() }

    /// Sends a text message through `/message/send`; returns the message id.
    @discardableResult
    func sendText(_ text: String, from: String, to channel: String, type: Int = 1, header: String = #"{"red_dot":1}"#) async throws -> Int64 {
        let reply = try await post("/message/send", """
        {"header":\(header),"from_uid":"\(from)","channel_id":"\(channel)","channel_type":\(type),
         "payload":"\(Self.b64(#"{"type":1,"content":"\#(text)"}"#))"}
        """)
        guard let id = reply.body["data"]?["message_id"]?.int64Value else { throw IMError(.malformedPayload, "send reply \(reply.raw)") }
        return id
    }

    func sync(_ body: String) async throws -> (seqs: [Int64], more: Int64, messages: [JSONValue]) {
        let reply = try await post("/channel/messagesync", body)
        let messages = reply.body["messages"]?.arrayValue ?? []
        return (messages.compactMap { $0["message_seq"]?.int64Value }, reply.body["more"]?.int64Value ?? -1, messages)
    }
}
