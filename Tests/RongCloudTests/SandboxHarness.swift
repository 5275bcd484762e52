import Foundation
import IMCore
import IMHTTP
import IMSandbox
import Synchronization
@testable import RongCloud

/// A RongCloud sandbox on a free port plus a callback receiver that records what the sandbox routes.
/// Requests are built by hand (signature computed here with `Hashing`, forms written as text), so the
/// sandbox is tested independently of `RongCloudClient`.
final class SandboxHarness: Sendable {
    static let appKey = "pvxdm17jxjaor"
    static let secret = "Y1W2MeFwwwRxa0"

    let server: SandboxServer
    let receiver: HTTPServer
    let received = Mutex<[HTTPRequestData]>([])
    /// How many callbacks to refuse with 500 before accepting (to watch retries).
    let refuseFirst = Mutex<Int>(0)
    let http = HTTPClientWrapper(timeoutSeconds: 5)

    var sandbox: RongCloudSandbox { server.vendor as! RongCloudSandbox }
    var base: String { server.baseURL }

    private init(server: SandboxServer, receiver: HTTPServer) {
        self.server = server
        self.receiver = receiver
    }

    static func start(extra: [String: String] = [:], statePath: String? = nil) async throws -> SandboxHarness {
        let box = Mutex<SandboxHarness?>(nil)
        let receiver = HTTPServer { request in
            guard let harness = box.withLock({ $0 }) else { return .text("not ready", status: 503) }
            let refuse = harness.refuseFirst.withLock { count -> Bool in
                defer { count = max(0, count - 1) }
                return count > 0
            }
            harness.received.withLock { $0.append(request) }
            return refuse ? .text("busy", status: 500) : .text("ok")
        }
        let port = try await receiver.start()
        let server = try RongCloudSandbox.server(SandboxOptions(appKey: appKey, appSecret: secret,
                                                            callbackURL: "http://127.0.0.1:\(port)/rc/route",
                                                                statePath: statePath, extra: extra))
        try await server.start()
        let harness = SandboxHarness(server: server, receiver: receiver)
        box.withLock { $0 = harness }
        return harness
    }

    /// Starts a harness, runs `body`, then stops it (after pending deliveries, so nothing is in flight).
    static func with(extra: [String: String] = [:], statePath: String? = nil,
                     _ body: (SandboxHarness) async throws -> Void) async throws {
        let harness = try await start(extra: extra, statePath: statePath)
        do {
            try await body(harness)
        } catch {
            await harness.stop()
            throw error
        }
        await harness.stop()
    }

    func stop() async {
        _ = await sandbox.waitForDeliveries(timeoutMs: 2000)
        await sandbox.stopDeliveries()
        await server.stop()
        await receiver.stop()
    }

    static func signedHeaders(nonce: String = "14314", timestamp: String = "1408710653000", key: String = appKey,
                              secret: String = secret, prefix: String = "") -> [(name: String, value: String)] {
        [(prefix + "App-Key", key), (prefix + "Nonce", nonce), (prefix + "Timestamp", timestamp),
         (prefix + "Signature", Hashing.sha1Hex(secret + nonce + timestamp))]
    }

    /// POSTs a form body written as text (`a=1&b=2`) with the given headers.
    func post(_ path: String, _ body: String, headers: [(name: String, value: String)] = signedHeaders()) async throws -> HTTPResponseData {
        try await http.send(OutboundRequest(url: base + path, headers: headers + [("Content-Type", "application/x-www-form-urlencoded")],
                                            body: Array(body.utf8)))
    }

    func postJSON(_ path: String, _ json: String) async throws -> HTTPResponseData {
        try await http.send(OutboundRequest(url: base + path, headers: Self.signedHeaders() + [("Content-Type", "application/json")],
                                            body: Array(json.utf8)))
    }

    func get(_ path: String) async throws -> JSONValue {
        try JSONValue.parse(Data(try await http.send(OutboundRequest(method: "GET", url: base + path)).body))
    }

    /// Waits (bounded) until at least `count` callbacks arrived; returns them in arrival order.
    func callbacks(atLeast count: Int, timeoutSeconds: Double = 5) async throws -> [HTTPRequestData] {
        let deadline = Date().addingTimeInterval(timeoutSeconds)
        while Date() < deadline {
            let now = received.withLock { $0 }
            if now.count >= count { return now }
            try await Task.sleep(nanoseconds: 20_000_000)
        }
        return received.withLock { $0 }
    }

    /// Form fields of a callback body, as a dictionary of first values.
    static func fields(_ request: HTTPRequestData) -> [String: String] {
        Dictionary(request.form.items.map { ($0.name, $0.value) }, uniquingKeysWith: { first, _ in first })
    }
}

extension HTTPResponseData {
    var json: JSONValue { (try? JSONValue.parse(Data(body))) ?? .null }
}
