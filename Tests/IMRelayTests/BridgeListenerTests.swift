import Foundation
import IMAdapterKit
import IMCore
import IMHTTP
import IMRelay
import IMServer
@_spi(Testing) import IMStore
import IMTesting
import Testing
import IMOutbox

/// A memory backend whose "vendor" posts `{"text":…,"sender":…,"group":…,"id":…}` with header `X-Secret`.
final class HookedMemoryBackend: IMBackend, InboundHandling {
    let inner: MemoryBackend
    let secret: String
    init(_ inner: MemoryBackend, secret: String) {
        self.inner = inner
        self.secret = secret
    }
    var id: BackendID { inner.id }
    var capabilities: Capabilities { inner.capabilities }
    func send(_ message: OutgoingMessage) async throws -> Message { try await inner.send(message) }
    func events() -> AsyncStream<IMEvent> { inner.events() }
    func history(_ query: HistoryQuery) async throws -> HistoryPage { try await inner.history(query) }

    func handle(_ request: HTTPRequestData, sink: any EventSink) async -> HTTPResponseData {
        await CallbackExchange(backend: id, answers: CallbackAnswers(success: .json(["code": 200])))
            .run(request, sink: sink, batch: { InboundBatch(events: try parse($0)) })
    }

    func parse(_ request: HTTPRequestData) throws -> [IMEvent] {
        guard request.header("x-secret") == secret else { throw IMError(.authenticationFailed, "wrong secret") }
        guard let body = try? JSONValue.parse(Data(request.body)), let text = body["text"]?.stringValue,
              let id = body["id"]?.stringValue, let sender = body["sender"]?.stringValue, let group = body["group"]?.stringValue else {
            throw IMError(.malformedPayload, "expected text, id, sender, group")
        }
        let message = Message(id: MessageID(id), conversation: .group(GroupID(group)), sender: UserID(sender), sentAt: 1, content: .text(text))
        return [IMEvent(eventID: EventID("msg:\(id)"), backend: inner.id, kind: .message(message))]
    }
}

@Suite struct BridgeListenerTests {
    @Test func callbacksAreCommittedBeforeTheAnswerAndForgeriesRelayNothing() async throws {
        let h = try RelayHarness()
        let hooked = HookedMemoryBackend(h.wk, secret: "s")
        let engine = RelayEngine(store: h.store, backends: [hooked, h.rc], routes: h.routes, retry: RetryPolicy(baseMs: 5, maxMs: 50))
        let listener = BridgeListener(engine: engine, receivers: ["wk": hooked], host: "127.0.0.1", port: 0)
        try await listener.start()
        let http = HTTPClientWrapper()
        func post(_ body: String, secret: String) async throws -> HTTPResponseData {
            try await http.send(.json(listener.callbackURL(for: "wk"), Data(body.utf8), headers: [("X-Secret", secret)]))
        }
        let forged = try await post(#"{"text":"evil","id":"1","sender":"mallory","group":"g"}"#, secret: "wrong")
        #expect(forged.status == 401)
        let malformed = try await post(#"{"text":"no id"}"#, secret: "s")
        #expect(malformed.status == 400)
        #expect(try h.store.read { try $0.ledgerCount() } == 0, "refused callbacks record nothing")

        let good = try await post(#"{"text":"hello","id":"7","sender":"alice","group":"g"}"#, secret: "s")
        #expect(good.status == 200 && good.bodyString == #"{"code":200}"#)
        // The send, and the group set up ahead of it (the hooked source describes no group: its sender is its member).
        #expect(try h.store.read { try $0.count(state: .pending) } == 2, "committed before the answer")
        let again = try await post(#"{"text":"hello","id":"7","sender":"alice","group":"g"}"#, secret: "s")
        #expect(again.status == 200)
        #expect(try h.store.read { try $0.ledgerCount() } == 1)

        await engine.start()
        #expect(await engine.waitUntilIdle())
        #expect(try await h.history(h.rc, "g").map(\.content) == [.text("hello")])

        let health = try await http.send(OutboundRequest(method: "GET", url: listener.baseURL + "/healthz"))
        let healthBody = try JSONValue.parse(Data(health.body))
        #expect(health.status == 200 && healthBody["status"] == "ok" && healthBody["backends"]?["rc"]?["state"] == "ok")
        let metrics = try await http.send(OutboundRequest(method: "GET", url: listener.baseURL + "/metrics")).bodyString
        #expect(metrics.contains(#"imbridge_relayed_total{action="send",target="rc"} 1"#))
        #expect(metrics.contains(#"imbridge_callbacks_refused_total{backend="wk",code="authentication_failed"} 1"#))
        #expect(metrics.contains("imbridge_relay_latency_seconds_count 1"))
        #expect(try await http.send(OutboundRequest(method: "POST", url: listener.baseURL + "/callbacks/nope")).status == 404)
        await listener.stop()
        await engine.stop()
    }
}
