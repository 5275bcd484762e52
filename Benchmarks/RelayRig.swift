import Foundation
import IMBridgeApp
import IMLab
import IMServer
import IMVendors
import IMCore
import IMHTTP
import IMRelay
import IMStore
import Synchronization

/// The relay set-up: a WuKong sandbox and a RongCloud sandbox in child processes, and the bridge (engine,
/// listener, durable SQLite store in a temporary directory) in this process, relaying `wk:group:*` →
/// `rc:group:*` with puppet users. WuKong's webhook posts to the bridge every `notifyIntervalMs`.
/// `--store postgres://…` puts the store in a fresh schema of that database instead; `--instances 2`
/// runs two bridges (engines + listeners) on it, WuKong's webhooks alternating between them through a
/// round-robin forwarder (docs/high-availability.md).
final class RelayRig: @unchecked Sendable {
    let wk: SandboxProcess
    let rc: SandboxProcess
    let listener: BridgeListener
    let bridge: Bridge
    let bridges: [Bridge]
    let forwarder: BenchForwarder?
    let directory: String
    /// Whether RongCloud routes the bridge's publishes back to it (one echo callback event per relayed message).
    let routeEchoes: Bool
    /// The RongCloud sandbox's stored messages, read incrementally.
    let rcStored: StoredMessages

    static let route = """
          - from: "wk:group:*"
            to: "rc:group:*"
            users: puppet

        """

    init(notifyIntervalMs: Int, routeEchoes: Bool = true, store: String? = nil, instances: Int = 1) async throws {
        self.routeEchoes = routeEchoes
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("imbridge-bench-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        listener = BridgeListener(host: "127.0.0.1", port: 0)
        try await listener.start()
        var listeners = [listener]
        for _ in 1..<max(1, instances) {
            let extra = BridgeListener(host: "127.0.0.1", port: 0)
            try await extra.start()
            listeners.append(extra)
        }
        if listeners.count > 1 {
            let forwarder = BenchForwarder(targets: listeners.map(\.baseURL))
            try await forwarder.start()
            self.forwarder = forwarder
        } else {
            forwarder = nil
        }
        wk = try SandboxProcess(vendor: "wukong", callbackURL: forwarder.map { "\($0.baseURL)/callbacks/wk" } ?? listener.callbackURL(for: "wk"),
                                options: ["webhook_secret": BridgeLab.webhookSecret, "notify_interval_ms": "\(notifyIntervalMs)",
                                          "retry_base_ms": "50"])
        // RongCloud routes every message the bridge publishes back to the bridge (an echo it records
        // and drops), as in a two-way deployment; `--no-echo` turns the routing off to show its cost.
        rc = try SandboxProcess(vendor: "rongcloud", callbackURL: listener.callbackURL(for: "rc"),
                                options: ["route_server_messages": routeEchoes ? "true" : "false"])
        let location = store.map { "\($0)\($0.contains("?") ? "&" : "?")schema=bench_\(UUID().uuidString.prefix(8).lowercased())" }
            ?? "\(directory)/bridge.sqlite"
        var bridges: [Bridge] = []
        for (index, listener) in listeners.enumerated() {
            let yaml = "store: \"\(location)\"\nlisten: 127.0.0.1:\(listener.port ?? 0)\nretry:\n  base: 50ms\n  max: 2s\n"
                + "ha:\n  instance: bench\(index)\n"
                + Self.backendsYAML(wk: wk.baseURL, rc: rc.baseURL) + "routes:\n" + Self.route
            let bridge = try await Bridge.open(config: try BridgeConfig.parse(yaml, file: "bench.yaml"), listener: listener)
            try await bridge.start()
            bridges.append(bridge)
        }
        self.bridges = bridges
        bridge = bridges[0]
        rcStored = StoredMessages(rc.baseURL)
    }

    func stop() async {
        for bridge in bridges {
            await bridge.stop()
            bridge.store.close()
        }
        await forwarder?.stop()
        wk.stop()
        rc.stop()
        // IMBRIDGE_BENCH_KEEP_STORE=1 keeps the store for a look at per-entry times (ledger/outbox).
        if ProcessInfo.processInfo.environment["IMBRIDGE_BENCH_KEEP_STORE"] == nil {
            try? FileManager.default.removeItem(atPath: directory)
        } else {
            FileHandle.standardError.write(Data("store kept: \(directory)/bridge.sqlite\n".utf8))
        }
    }

    /// Relays so far (the engine's own count, `imbridge_relayed_total` over every target and action; read
    /// from the activity log, not by rendering the registry, which would cost the bench process more than a
    /// relay each poll).
    var relayed: Double { Double(bridges.reduce(0) { $0 + $1.engine.metrics.activity.total(.relayed) }) }

    /// The echoes the bridges took so far (`imbridge_echoes_total`, read from the registry's rendering,
    /// which allocates: `waitForEchoes` reads it only once the cheap count says they are all in).
    var echoes: Double { bridges.reduce(0) { $0 + $1.engine.metrics.value("imbridge_echoes_total") } }
    /// Events taken so far (the activity log's running total: a lock and a read).
    var eventsIn: Int { bridges.reduce(0) { $0 + $1.engine.metrics.activity.total(.eventsIn) } }

    struct EchoMark {
        var echoes: Double
        var eventsIn: Int
    }
    var echoMark: EchoMark { EchoMark(echoes: echoes, eventsIn: eventsIn) }

    /// Waits until the `count` messages sent since `mark` came back as echoes (or `timeout` seconds pass).
    /// RongCloud calls the bridge back one message at a time, in order, so at full speed its echoes trail
    /// the relays by seconds: a measurement that stopped at the last relay would leave their cost out.
    /// Each message is one WuKong event in and one echo in, so the events-in total is polled until it
    /// shows both (polling the registry inside a measured window would count the bench's own
    /// allocations), then the echo count confirms.
    func waitForEchoes(_ count: Int, after mark: EchoMark, timeout: Double) async -> Bool {
        let deadline = monotonicSeconds() + timeout
        while monotonicSeconds() < deadline, eventsIn < mark.eventsIn + 2 * count {
            try? await Task.sleep(nanoseconds: 2_000_000)
        }
        while monotonicSeconds() < deadline {
            if echoes >= mark.echoes + Double(count) { return true }
            try? await Task.sleep(nanoseconds: 20_000_000)
        }
        return echoes >= mark.echoes + Double(count)
    }

    /// Waits until `count` sends were relayed (or `timeout` seconds pass); true when they were.
    func waitForRelayed(_ count: Int, timeout: Double) async -> Bool {
        let deadline = monotonicSeconds() + timeout
        while monotonicSeconds() < deadline {
            if relayed >= Double(count) { return true }
            try? await Task.sleep(nanoseconds: 2_000_000)
        }
        return relayed >= Double(count)
    }
}

/// Hand-built vendor REST calls (independent of the adapters): what a user's app server would send.
struct VendorCalls: Sendable {
    let client = HTTPClientWrapper(timeoutSeconds: 60, maxResponseBytes: 1 << 30)

    /// `POST /message/send` on WuKongIM: a text message from `from` into group `group`.
    func wukongSend(_ base: String, from: String, group: String, text: String) async throws {
        let payload = Data(#"{"type":1,"content":"\#(text)"}"#.utf8).base64EncodedString()
        let body = #"{"header":{"no_persist":0,"red_dot":1,"sync_once":0},"from_uid":"\#(from)","channel_id":"\#(group)","channel_type":2,"payload":"\#(payload)"}"#
        let response = try await client.send(.json(base + "/message/send", Data(body.utf8)))
        guard response.status == 200 else { throw BenchError("wukong send: HTTP \(response.status) \(String(decoding: response.body, as: UTF8.self))") }
    }

    /// `POST /message/group/publish.json` on RongCloud, signed.
    func rongCloudPublish(_ base: String, from: String, group: String, text: String) async throws {
        let nonce = String(UInt64.random(in: 0...UInt64.max))
        let timestamp = String(Int64(Date().timeIntervalSince1970))
        let signature = Hashing.sha1Hex(BridgeLab.appSecret + nonce + timestamp)
        let content = #"{"content":"\#(text)"}"#.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? ""
        let form = "fromUserId=\(from)&toGroupId=\(group)&objectName=RC%3ATxtMsg&content=\(content)"
        let request = OutboundRequest(url: base + "/message/group/publish.json",
                                      headers: [("App-Key", BridgeLab.appKey), ("Nonce", nonce), ("Timestamp", timestamp), ("Signature", signature),
                                                ("Content-Type", "application/x-www-form-urlencoded")],
                                      body: Array(form.utf8))
        let response = try await client.send(request)
        guard response.status == 200 else { throw BenchError("rongcloud publish: HTTP \(response.status) \(String(decoding: response.body, as: UTF8.self))") }
    }

    /// `GET /_sandbox/messages`: (text, stored-at ms) of every stored message.
    /// Each stored message's text, vendor stamp (ms) and the sandbox's wall-clock receive time (µs, when given);
    /// `from`: leave out the first that many (`StoredMessages` reads only what is new).
    func storedMessages(_ base: String, from: Int = 0) async throws -> [(text: String, atMs: Int64, receivedUs: Int64?)] {
        let response = try await client.send(OutboundRequest(method: "GET", url: base + "/_sandbox/messages?from=\(from)"))
        let messages = try JSONValue.parse(Data(response.body))["messages"]?.arrayValue ?? []
        return messages.map { ($0["text"]?.stringValue ?? "", $0["sent_at_ms"]?.int64Value ?? 0, $0["received_at_us"]?.int64Value) }
    }
}

extension RelayRig {
    /// The `backends:` block for a WuKong and a RongCloud sandbox (the settings `BridgeLab` uses).
    static func backendsYAML(wk: String, rc: String) -> String {
        """
        backends:
          wk:
            adapter: wukong
            im_url: "\(wk)"
            webhook_secret: "\(BridgeLab.webhookSecret)"
            token_secret: "lab-tokens"
            service_uid: "imbridge"
          rc:
            adapter: rongcloud
            api_url: "\(rc)"
            app_key: "\(BridgeLab.appKey)"
            app_secret: "\(BridgeLab.appSecret)"
            history_viewer: "imbridge"

        """
    }
}

/// A sandbox's stored messages as read so far: each `read` asks only for those stored since the last
/// one, so that the bench process does not parse the whole store again on every poll (at 30,000
/// messages a full read was megabytes of JSON, which counted in the bridge process's peak RSS).
final class StoredMessages: @unchecked Sendable {
    let base: String
    private(set) var all: [(text: String, atMs: Int64, receivedUs: Int64?)] = []
    init(_ base: String) { self.base = base }

    func read() async throws -> [(text: String, atMs: Int64, receivedUs: Int64?)] {
        all += try await VendorCalls().storedMessages(base, from: all.count)
        return all
    }
}

/// The load balancer in front of `--instances N` bridges: request K goes to instance K mod N.
final class BenchForwarder: Sendable {
    let targets: [String]
    private let next = Atomic<Int>(0)
    private let server: HTTPServer
    private let client = HTTPClientWrapper(timeoutSeconds: 10)

    init(targets: [String]) {
        self.targets = targets
        let box = Box()
        server = HTTPServer(host: "127.0.0.1", port: 0) { request in await box.forwarder?.forward(request) ?? .text("", status: 503) }
        box.forwarder = self
    }

    final class Box: @unchecked Sendable { weak var forwarder: BenchForwarder? }

    func start() async throws { try await server.start() }
    func stop() async { await server.stop() }
    var baseURL: String { server.baseURL }

    func forward(_ request: HTTPRequestData) async -> HTTPResponseData {
        let index = next.add(1, ordering: .relaxed).oldValue % targets.count
        let headers = request.headers.filter { !["host", "content-length", "connection"].contains($0.name.lowercased()) }
        let query = request.rawQuery.map { "?\($0)" } ?? ""
        do {
            return try await client.send(OutboundRequest(method: request.method, url: targets[index] + request.path + query,
                                                         headers: headers, body: request.body))
        } catch {
            return .text("forwarding failed: \(error)", status: 502)
        }
    }
}
