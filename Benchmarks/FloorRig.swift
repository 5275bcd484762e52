import Foundation
import IMCore
import IMHTTP
import IMLab
import Synchronization

/// The HTTP floor of the relay set-up: the same WuKong and RongCloud sandboxes (child processes) and the
/// same HTTP stack in this process (`HTTPServer` in, `HTTPClientWrapper` out), but no bridge behind it —
/// each webhook is answered at once and its messages published to RongCloud one conversation at a time
/// (the batch parsed; no signature check, no store, no mapping), and the routed echoes are answered 200
/// and counted. Its CPU per message is what the three HTTP exchanges of a relayed message cost this
/// process before the bridge does anything, so the bridge's own share is the relay phase's figure less
/// this one (docs/performance.md, "The HTTP floor").
final class FloorRig: Sendable {
    let wk: SandboxProcess
    let rc: SandboxProcess
    private let server: HTTPServer
    private let calls = VendorCalls()
    private let echoes = Atomic<Int>(0)
    /// Messages handed to a lane so far (numbers their texts).
    private let queued = Atomic<Int>(0)
    private let webhooks = Atomic<Int>(0)
    /// Publishes RongCloud refused or that failed: each one's echo never comes.
    private let failures = Atomic<Int>(0)
    /// Publishes RongCloud accepted (the floor's "relayed").
    private let publishes = Atomic<Int>(0)
    var publishCount: Int { publishes.load(ordering: .relaxed) }
    private let rcBase = Mutex<String>("")
    private let lanes = Mutex<[String: AsyncStream<(from: String, text: String)>.Continuation]>([:])

    init(notifyIntervalMs: Int) async throws {
        let box = Box()
        server = HTTPServer(host: "127.0.0.1", port: 0) { request in await box.rig?.handle(request) ?? .text("", status: 503) }
        try await server.start()
        wk = try SandboxProcess(vendor: "wukong", callbackURL: "\(server.baseURL)/callbacks/wk",
                                options: ["webhook_secret": BridgeLab.webhookSecret, "notify_interval_ms": "\(notifyIntervalMs)",
                                          "retry_base_ms": "50"])
        rc = try SandboxProcess(vendor: "rongcloud", callbackURL: "\(server.baseURL)/callbacks/rc",
                                options: ["route_server_messages": "true"])
        rcBase.withLock { $0 = rc.baseURL }
        box.rig = self
    }

    final class Box: @unchecked Sendable { weak var rig: FloorRig? }

    var echoCount: Int { echoes.load(ordering: .relaxed) }
    /// Webhook requests so far (a batch carries one or more messages).
    var webhookCount: Int { webhooks.load(ordering: .relaxed) }

    func handle(_ request: HTTPRequestData) async -> HTTPResponseData {
        if request.path.hasSuffix("/rc") {
            echoes.add(1, ordering: .relaxed)
            return .text("", status: 200)
        }
        let batch = (try? JSONValue.parse(Data(request.body)))?.arrayValue ?? []
        webhooks.add(1, ordering: .relaxed)
        let base = rcBase.withLock { $0 }
        // Answered at once and published after, one conversation at a time, as the bridge answers once the
        // batch is recorded and then publishes in each conversation's lane, in order.
        for message in batch {
            let from = message["from_uid"]?.stringValue ?? "u0"
            let group = message["channel_id"]?.stringValue ?? "g0"
            let n = queued.add(1, ordering: .relaxed).oldValue
            lane(group, base: base).yield((from, "f\(n)"))
        }
        return .text("", status: 200)
    }

    /// The conversation's publisher: one task per group publishing its messages in turn.
    private func lane(_ group: String, base: String) -> AsyncStream<(from: String, text: String)>.Continuation {
        lanes.withLock { lanes in
            if let lane = lanes[group] { return lane }
            let (stream, lane) = AsyncStream<(from: String, text: String)>.makeStream()
            lanes[group] = lane
            Task { [calls] in
                for await item in stream {
                    do {
                        try await calls.rongCloudPublish(base, from: item.from, group: group, text: item.text)
                        self.publishes.add(1, ordering: .relaxed)
                    } catch {
                        self.failures.add(1, ordering: .relaxed)
                    }
                }
            }
            return lane
        }
    }

    var failureCount: Int { failures.load(ordering: .relaxed) }

    /// Waits until `count` echoes came back (or `timeout` seconds pass, or a publish failed: its echo
    /// would never come).
    func waitForEchoes(_ count: Int, timeout: Double) async -> Bool {
        let deadline = monotonicSeconds() + timeout
        while monotonicSeconds() < deadline, failureCount == 0 {
            if echoCount >= count { return true }
            try? await Task.sleep(nanoseconds: 2_000_000)
        }
        return echoCount >= count
    }

    func stop() async {
        lanes.withLock { lanes in lanes.values.forEach { $0.finish() } }
        await server.stop()
        wk.stop()
        rc.stop()
    }
}
