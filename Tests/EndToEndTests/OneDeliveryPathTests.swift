import BridgeTestSupport
import Foundation
import IMBridgeApp
import IMCore
import IMHTTP
import IMLab
import IMSandbox
import IMStore
import PostgresTestSupport
import Synchronization
import Testing

/// Every message once, in source order, through what a user's bridge meets: a SIGKILL while a sender keeps
/// going, a target refusing connections for seconds, the store gone for half a minute — with the
/// sandboxes giving up on callbacks the way their vendors do, and with the settings a new user leaves out
/// (no `history_viewer`, no `team_query_accid`).
extension CrashTests {
    @Suite(.serialized) struct OneDeliveryPathTests {
        struct Pair: CustomTestStringConvertible, Sendable {
            var source: BackendID
            var sourceVendor: String
            var target: BackendID
            var targetVendor: String
            var testDescription: String { "\(sourceVendor) → \(targetVendor)" }
        }

        /// The lab's config without the settings that name a member to read history as: a new user's.
        static func withoutViewerSettings(_ yaml: String) -> String {
            yaml.split(separator: "\n", omittingEmptySubsequences: false)
                .filter { !$0.contains("history_viewer:") && !$0.contains("team_query_accid:") }
                .joined(separator: "\n")
        }

        struct Rig {
            let bridgeRig: BridgeRig
            let pair: Pair
            var lab: BridgeLab { bridgeRig.lab }

            /// The group a test named `name` sends into. A NIM target refuses team messages into teams it
            /// does not have (docs/adapters/nim.md, "Conversations") and its tids are numbers: toward NIM the
            /// group gets a number, and `start` seeds the team of that tid with the sender's puppet, so the
            /// wildcard route relays into it.
            static func group(_ name: String, _ pair: Pair) -> String {
                guard pair.targetVendor == "nim" else { return name }
                return ["burst": "1300000500", "ops": "1300000501"][name] ?? name
            }

            /// `groups`: the groups the test sends into (`group(_:_:)`).
            static func start(_ pair: Pair, groups: [String] = [], store: String? = nil, targetURL: ((BridgeLab) async throws -> String)? = nil,
                              extra: String = "") async throws -> Rig {
                // The source gives up on a callback after 2 quick attempts (its vendor gives up too, later:
                // docs/operations.md, "When the bridge is down: catch-up"), so a burst sent while the bridge is down settles fast.
                let giveUp = ["callback_attempts": "2", "callback_retry_ms": "20"]
                let routes = "  - from: \"\(pair.source):group:*\"\n    to: \"\(pair.target):group:*\"\n    direction: forward\n    users: puppet\n    group_ids: same\n"
                let rig = try await BridgeRig.make([BridgeLab.Member(pair.source, pair.sourceVendor, options: giveUp),
                                                    BridgeLab.Member(pair.target, pair.targetVendor)],
                                                   routes: routes, store: store, extra: "catch_up:\n  interval: 10m\n  max_age: 1h\n" + extra, edit: { yaml, lab in
                    let yaml = withoutViewerSettings(yaml)
                    guard let targetURL else { return yaml }
                    return yaml.replacingOccurrences(of: "\"\(lab.url(of: pair.target))\"", with: "\"\(try await targetURL(lab))\"")
                })
                if pair.targetVendor == "nim" {
                    for tid in groups { try await rig.lab.seedGroup(pair.target, tid, owner: "\(pair.source)_ann", members: []) }
                }
                return Rig(bridgeRig: rig, pair: pair)
            }

            func bridge(run: Int) async throws -> BridgeProcess {
                try await bridgeRig.start(log: "bridge-\(run).log")
            }

            /// Texts on the target in `group`, in the target's order.
            func relayed(_ group: String) async throws -> [String] {
                try await lab.messages(pair.target).filter { $0["kind"] == "text" && $0["conversation_id"]?.stringValue == group }
                    .compactMap { $0["text"]?.stringValue }
            }

            func deadLetters() throws -> Int {
                try BridgeStore(path: "\(lab.directory)/bridge.sqlite").read { try $0.count(state: .dead) }
            }

            /// Waits until the source sandbox has no callback left to try.
            func callbacksSettled() async throws {
                let vendor = try #require(lab.sandboxes[pair.source]?.vendor)
                let deadline = Date().addingTimeInterval(120)
                while Date() < deadline {
                    if await CatchUpEndToEndTests.Rig.deliveryState(vendor).pending == 0 { return }
                    try await Task.sleep(nanoseconds: 50_000_000)
                }
                throw IMError(.timeout, "the \(pair.sourceVendor) sandbox still has callbacks pending")
            }
        }

        /// The first difference between what arrived and what was expected, for a failure message.
        static func firstDifference(_ got: [String], _ expected: [String]) -> String {
            let index = Array(zip(got, expected)).firstIndex { $0 != $1 } ?? min(got.count, expected.count)
            let counts = Dictionary(got.map { ($0, 1) }, uniquingKeysWith: +).filter { $0.value > 1 }
            return "\(got.count) arrived for \(expected.count); first difference at \(index): got \(index < got.count ? got[index] : "nothing"), "
                + "expected \(index < expected.count ? expected[index] : "nothing"); doubled: \(counts.keys.sorted().prefix(5))"
        }

        static let killPairs = [
            Pair(source: "wk", sourceVendor: "wukong", target: "rc", targetVendor: "rongcloud"),
            Pair(source: "rc", sourceVendor: "rongcloud", target: "yx", targetVendor: "nim"),
        ]

        /// One conversation: a stream relayed live, the bridge SIGKILLed part way, 1,500 more sent while it is
        /// down (their callbacks given up by the sandbox), the bridge restarted: each message exactly once,
        /// in order. Three rounds on the same store, so each restart also resumes from the last one's state.
        @Test(arguments: killPairs) func aBurstWhileKilledArrivesOnceInOrder(_ pair: Pair) async throws {
            let group = Rig.group("burst", pair)
            let rig = try await Rig.start(pair, groups: [group])
            defer { Task { await rig.bridgeRig.stop() } }
            let users = try await rig.lab.userBackend(pair.source, registry: ContentRegistry())
            var expected: [String] = []
            var next = 1
            func send(_ count: Int) async throws {
                for _ in 0..<count {
                    let text = String(format: "n%05d", next)
                    _ = try await users.send(OutgoingMessage(conversation: .group(GroupID(group)), sender: "ann", content: .text(text)))
                    expected.append(text)
                    next += 1
                }
            }
            for round in 1...3 {
                let bridge = try await rig.bridge(run: round)
                // A live stream, killed while it is being relayed.
                let before = expected.count
                let stream = Task { [next] in
                    var texts: [String] = []
                    for n in next..<(next + 200) {
                        let text = String(format: "n%05d", n)
                        _ = try await users.send(OutgoingMessage(conversation: .group(GroupID(group)), sender: "ann", content: .text(text)))
                        texts.append(text)
                    }
                    return texts
                }
                #expect(try await eventually(60) { try await rig.relayed(group).count >= before + 40 }, "round \(round): the stream is relayed live")
                await bridge.kill()
                let streamed = try await stream.value
                expected += streamed
                next += streamed.count
                try await send(1500)
                try await rig.callbacksSettled()
                let restarted = try await rig.bridge(run: round + 10)
                let arrived = try await eventually(120) { try await rig.relayed(group).count >= expected.count }
                try await Task.sleep(nanoseconds: 1_000_000_000)
                let got = try await rig.relayed(group)
                #expect(arrived && got == expected, "round \(round): \(Self.firstDifference(got, expected))\n\(restarted.output.suffix(3000))")
                #expect(try rig.deadLetters() == 0)
                #expect(await restarted.terminate() == 0)
                guard got == expected else { return }
            }
        }

        static let outagePairs = [
            Pair(source: "wk", sourceVendor: "wukong", target: "yx", targetVendor: "nim"),
            Pair(source: "wk", sourceVendor: "wukong", target: "rc", targetVendor: "rongcloud"),
        ]

        /// The target refuses connections for 10 s while messages keep coming (NIM without `team_query_accid`,
        /// RongCloud without `history_viewer`): nothing is dead-lettered — the retries' earlier-copy lookups
        /// that cannot run are retried too — and when it is back every message arrives once, in order.
        @Test(arguments: outagePairs) func aTargetRefusingConnectionsLosesAndDoublesNothing(_ pair: Pair) async throws {
            let proxy = Mutex<OutageProxy?>(nil)
            let ops = Rig.group("ops", pair)
            let rig = try await Rig.start(pair, groups: [ops], targetURL: { lab in
                let started = try await OutageProxy.start(forwardingTo: lab.url(of: pair.target))
                proxy.withLock { $0 = started }
                return started.baseURL
            })
            let outage = try #require(proxy.withLock { $0 })
            defer { Task { await rig.bridgeRig.stop(); await outage.stop() } }
            let users = try await rig.lab.userBackend(pair.source, registry: ContentRegistry())
            let bridge = try await rig.bridge(run: 1)
            defer { bridge.killWithoutWaiting() }
            var expected: [String] = []
            func send(_ range: ClosedRange<Int>) async throws {
                for n in range {
                    let text = "ops-\(n)"
                    _ = try await users.send(OutgoingMessage(conversation: .group(GroupID(ops)), sender: "ann", content: .text(text)))
                    expected.append(text)
                    try await Task.sleep(nanoseconds: 20_000_000)
                }
            }
            try await send(1...10)
            #expect(try await eventually(30) { try await rig.relayed(ops) == expected })
            await outage.down()
            let downAt = Date()
            try await send(11...60)
            let left = 10 - Date().timeIntervalSince(downAt)
            if left > 0 { try await Task.sleep(nanoseconds: UInt64(left * 1e9)) }
            #expect(try rig.deadLetters() == 0, "no dead letter while the target is down:\n\(bridge.output.suffix(3000))")
            try await outage.up()
            try await send(61...70)
            let arrived = try await eventually(90) { try await rig.relayed(ops).count >= expected.count }
            try await Task.sleep(nanoseconds: 1_000_000_000)
            let got = try await rig.relayed(ops)
            #expect(arrived && got == expected, "\(Self.firstDifference(got, expected))\n\(bridge.output.suffix(3000))")
            #expect(try rig.deadLetters() == 0)
        }

        /// The store's PostgreSQL server stopped for 30 s while WuKong gives up on its webhooks (5 attempts)
        /// and messages keep coming into 3 groups: after it is back every message arrives once, in order.
        @Test func aStoreOutageWhileTheSourceGivesUpLosesNothing() async throws {
            let cluster = try await TestPostgres.startPrivateCluster()
            defer { TestPostgres.destroy(cluster) }
            let pair = Pair(source: "wk", sourceVendor: "wukong", target: "rc", targetVendor: "rongcloud")
            let rig = try await Rig.start(pair, store: "\"\(cluster.url)\"")
            defer { Task { await rig.bridgeRig.stop() } }
            let users = try await rig.lab.userBackend(pair.source, registry: ContentRegistry())
            let bridge = try await rig.bridge(run: 1)
            defer { bridge.killWithoutWaiting() }
            let groups = ["s1", "s2", "s3"]
            let sent = Mutex<[String: [String]]>([:])
            let stop = Mutex(false)
            let sender = Task {
                var n = 0
                while !stop.withLock({ $0 }) {
                    n += 1
                    for group in groups {
                        let text = "\(group)-\(n)"
                        _ = try await users.send(OutgoingMessage(conversation: .group(GroupID(group)), sender: "ann", content: .text(text)))
                        sent.withLock { $0[group, default: []].append(text) }
                    }
                    try await Task.sleep(nanoseconds: 150_000_000)
                }
            }
            #expect(try await eventually(30) { try await rig.relayed("s1").count >= 10 })
            try await TestPostgres.stopServer(cluster)
            try await Task.sleep(nanoseconds: 30_000_000_000)
            try await TestPostgres.startServer(cluster)
            try await Task.sleep(nanoseconds: 5_000_000_000)
            stop.withLock { $0 = true }
            try await sender.value
            let expected = sent.withLock { $0 }
            let arrived = try await eventually(120) {
                for group in groups where try await rig.relayed(group).count < expected[group, default: []].count { return false }
                return true
            }
            try await Task.sleep(nanoseconds: 1_000_000_000)
            for group in groups {
                let got = try await rig.relayed(group)
                #expect(arrived && got == expected[group], "\(group): \(Self.firstDifference(got, expected[group] ?? []))\n\(bridge.output.suffix(4000))")
            }
        }
    }
}

/// An HTTP front for a sandbox that can refuse connections for a while (`down`: its listening socket
/// closed; `up`: open again on the same port), so a bridge meets a target that is away.
final class OutageProxy: Sendable {
    let port: Int
    let target: String
    private let server: Mutex<HTTPServer?>

    private init(port: Int, target: String) {
        self.port = port
        self.target = target
        server = Mutex(nil)
    }

    static func start(forwardingTo target: String) async throws -> OutageProxy {
        let proxy = OutageProxy(port: try await freePort(), target: target)
        try await proxy.up()
        return proxy
    }

    var baseURL: String { "http://127.0.0.1:\(port)" }

    func up() async throws {
        let target = self.target
        let server = HTTPServer(host: "127.0.0.1", port: port) { request in
            let headers = request.headers.filter { !["host", "content-length", "connection"].contains($0.name.lowercased()) }
            let query = request.rawQuery.map { "?\($0)" } ?? ""
            do {
                return try await HTTPClientWrapper(timeoutSeconds: 5).send(OutboundRequest(method: request.method, url: target + request.path + query,
                                                                                          headers: headers, body: request.body))
            } catch {
                return .text("proxy: \(error)", status: 502)
            }
        }
        _ = try await server.start()
        self.server.withLock { $0 = server }
    }

    func down() async {
        let running = server.withLock { server in
            defer { server = nil }
            return server
        }
        await running?.stop()
    }

    func stop() async { await down() }
}
