import Foundation
import IMCore
import IMHTTP
import IMSandbox
import IMTesting
import NIM
import Synchronization

/// Records every callback request it receives and answers 200 (or 503 while `failuresToAnswer` > 0).
final class CallbackSink: Sendable {
    final class Store: Sendable {
        let received = Mutex<[HTTPRequestData]>([])
        let failuresToAnswer = Mutex(0)
    }
    let store = Store()
    let server: HTTPServer
    func failNext(_ count: Int) { store.failuresToAnswer.withLock { $0 = count } }

    init() {
        let store = self.store
        server = HTTPServer { request in
            let fail = store.failuresToAnswer.withLock { count -> Bool in
                guard count > 0 else { return false }
                count -= 1
                return true
            }
            store.received.withLock { $0.append(request) }
            return fail ? .text("busy", status: 503) : .json(JSONValue.object(["code": 200]).jsonData())
        }
    }

    var requests: [HTTPRequestData] { store.received.withLock { $0 } }

    /// Waits (bounded) until at least `count` requests arrived.
    func waitFor(_ count: Int, timeoutMs: Int = 5000) async -> [HTTPRequestData] {
        var waited = 0
        while requests.count < count && waited < timeoutMs {
            try? await Task.sleep(nanoseconds: 20_000_000)
            waited += 20
        }
        return requests
    }
}

/// A NIM sandbox on a free port whose callbacks go to a `CallbackSink`; requests are built by hand here
/// (not with `NIMClient`), so the sandbox and the client cannot share a misunderstanding.
struct SandboxHarness {
    static let appKey = "test-app-key"
    static let appSecret = "test-app-secret"
    let sink: CallbackSink
    let server: SandboxServer
    var vendor: NIMSandbox { server.vendor as! NIMSandbox }
    var baseURL: String { server.baseURL }

    /// `frozenClock`: the sandbox clock stands still unless advanced, so every message shares one millisecond.
    static func start(callbacks: Bool = true, frozenClock: Bool = false) async throws -> SandboxHarness {
        let sink = CallbackSink()
        let sinkPort = try await sink.server.start()
        let callbackURL = callbacks ? "http://127.0.0.1:\(sinkPort)/receiveMsg.action" : nil
        let server = try makeServer(appKey: appKey, appSecret: appSecret, callbackURL: callbackURL, frozenClock: frozenClock)
        try await server.start()
        return SandboxHarness(sink: sink, server: server)
    }

    /// Runs `body` against a fresh sandbox and always stops it (and its callback sink) afterwards.
    static func makeServer(appKey: String, appSecret: String, callbackURL: String?, frozenClock: Bool) throws -> SandboxServer {
        guard frozenClock else {
            return try NIMSandbox.server(SandboxOptions(appKey: appKey, appSecret: appSecret, callbackURL: callbackURL))
        }
        let clock = SandboxClock(base: TestClock())
        return SandboxServer(vendor: NIMSandbox(appKey: appKey, appSecret: appSecret, callbackURL: callbackURL, clock: clock), clock: clock)
    }

    static func with(callbacks: Bool = true, frozenClock: Bool = false, _ body: (SandboxHarness) async throws -> Void) async throws {
        let sandbox = try await start(callbacks: callbacks, frozenClock: frozenClock)
        do {
            try await body(sandbox)
        } catch {
            await sandbox.stop()
            throw error
        }
        await sandbox.stop()
    }

    func stop() async {
        _ = await vendor.waitForCallbacks(timeoutMs: 2000)
        await server.stop()
        await sink.server.stop()
    }

    /// POSTs a form signed like the vendor doc says (or with the given overrides) and returns the JSON answer.
    @discardableResult
    func call(_ path: String, _ fields: [(String, String)], appKey: String = appKey, secret: String = appSecret,
              curTime: String? = nil, nonce: String = "4tgggergigwow323t23t") async throws -> (status: Int, json: JSONValue) {
        let time = curTime ?? String(Int64(Date().timeIntervalSince1970))
        let checkSum = Hashing.sha1Hex(secret + nonce + time)
        let body = fields.map { "\(FormBody.escape($0.0))=\(FormBody.escape($0.1))" }.joined(separator: "&")
        let request = OutboundRequest(url: baseURL + path, headers: [
            ("AppKey", appKey), ("Nonce", nonce), ("CurTime", time), ("CheckSum", checkSum),
            ("Content-Type", "application/x-www-form-urlencoded;charset=utf-8"),
        ], body: Array(body.utf8))
        let response = try await HTTPClientWrapper().send(request)
        return (response.status, try JSONValue.parse(Data(response.body)))
    }

    func createUsers(_ accids: String...) async throws {
        for accid in accids { try await call("/user/create.action", [("accid", accid)]) }
    }

    func sendText(from: String, to: String, _ text: String, ope: Int = 0, option: String? = nil) async throws -> JSONValue {
        var fields = [("from", from), ("ope", String(ope)), ("to", to), ("type", "0"),
                      ("body", JSONValue.object(["msg": .string(text)]).jsonString())]
        if let option { fields.append(("option", option)) }
        return try await call("/msg/sendMsg.action", fields).json
    }

    func advanceClock(_ ms: Int64) { server.clock.advance(byMs: ms) }
}
