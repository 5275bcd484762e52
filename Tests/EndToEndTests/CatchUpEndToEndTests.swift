import BridgeTestSupport
import Foundation
import IMBridgeApp
import IMCore
import IMHTTP
import IMLab
import IMRelay
import IMSandbox
import IMStore
import NIMSandbox
import RongCloudSandbox
import SandboxTestSupport
import Testing
import WuKongSandbox

/// Catch-up from history (docs/architecture.md, "Catch-up") with a real `imbridge run` process: the
/// sandboxes deliver like their vendors (they give up after a few attempts), so what was sent while the
/// bridge was down is lost to the callbacks and must come back from history, once, in order.
extension CrashTests {
    @Suite(.serialized) struct CatchUpEndToEndTests {
        struct Source: CustomTestStringConvertible, Sendable {
            var name: BackendID
            var vendor: String
            var target: BackendID
            var targetVendor: String
            var testDescription: String { vendor }
        }

        static let sources = [
            Source(name: "wk", vendor: "wukong", target: "rc", targetVendor: "rongcloud"),
            Source(name: "rc", vendor: "rongcloud", target: "wk", targetVendor: "wukong"),
            Source(name: "yx", vendor: "nim", target: "wk", targetVendor: "wukong"),
        ]
        static let conversations = ["cu1", "cu2", "cu3"]

        /// A conversation's group on the source. NIM refuses a team message into a team it does not have or
        /// from a non-member (docs/adapters/nim.md, "Conversations"), and tids are numbers: there each
        /// conversation is a team made beforehand with the senders (`Rig.start`).
        static func groupID(_ conversation: String, vendor: String) -> String {
            guard vendor == "nim", let index = conversations.firstIndex(of: conversation) else { return conversation }
            return String(1_300_000_701 + index)
        }
        static let senders: [UserID] = ["ann", "bob"]
        /// `catch_up.interval` of these bridges; everything must be back within it.
        static let intervalSeconds = 30.0

        /// A lab whose source sandbox gives up like its vendor (the lab's short spacing keeps it quick),
        /// and the config of a bridge relaying the source's groups to the target.
        struct Rig {
            let bridgeRig: BridgeRig
            let source: Source
            var lab: BridgeLab { bridgeRig.lab }
            var port: Int { bridgeRig.port }

            static func start(_ source: Source) async throws -> Rig {
                let routes = "  - from: \"\(source.name):group:*\"\n    to: \"\(source.target):group:*\"\n    direction: forward\n    group_ids: same\n"
                let rig = try await BridgeRig.make([BridgeLab.Member(source.name, source.vendor), BridgeLab.Member(source.target, source.targetVendor)],
                                                   routes: routes, extra: "catch_up:\n  interval: \(Int(intervalSeconds))s\n  max_age: 1h\n")
                for conversation in conversations where groupID(conversation, vendor: source.vendor) != conversation {
                    try await rig.lab.seedGroup(source.name, groupID(conversation, vendor: source.vendor), owner: "ann", members: ["bob"])
                }
                return Rig(bridgeRig: rig, source: source)
            }

            /// `imbridge run`, logging to its own file (`run`: 1, 2 …) so a restart keeps the earlier log.
            func bridge(run: Int) async throws -> BridgeProcess {
                try await bridgeRig.start(log: "bridge-\(run).log")
            }

            /// While the bridge is down its port answers 503, so that no other test's server that takes the
            /// freed port (another bridge with the lab's webhook secret) accepts the sandbox's callbacks.
            func standIn() async throws -> HTTPServer { try await Self.standIn(port: port) }

            /// A server answering 503 on `port`, bound as soon as the port is free (within 5 s).
            static func standIn(port: Int) async throws -> HTTPServer {
                var lastError: (any Error)?
                for _ in 0..<50 {
                    let server = HTTPServer(port: port) { _ in HTTPResponseData(status: 503, headers: [], body: Array("down".utf8)) }
                    do {
                        _ = try await server.start()
                        return server
                    } catch {
                        lastError = error
                        try await Task.sleep(nanoseconds: 100_000_000)
                    }
                }
                throw lastError ?? IMError(.unavailable, "cannot bind the bridge's port")
            }

            /// Texts relayed to the target, per conversation, in the target's order.
            func relayed() async throws -> [String: [String]] {
                var texts: [String: [String]] = [:]
                for record in try await lab.messages(source.target) where record["kind"] == "text" {
                    guard let group = record["conversation_id"]?.stringValue, let text = record["text"]?.stringValue else { continue }
                    let id = conversations.first { groupID($0, vendor: source.vendor) == group } ?? group
                    texts[id, default: []].append(text)
                }
                return texts
            }

            /// Waits until the source sandbox has nothing left to try (every callback delivered or
            /// dropped) and has dropped at least `minimumDropped`; returns how many it dropped.
            func callbacksSettled(minimumDropped: Int) async throws -> Int {
                let vendor = try #require(lab.sandboxes[source.name]?.vendor)
                let deadline = Date().addingTimeInterval(90)
                while Date() < deadline {
                    let (pending, dropped) = await Self.deliveryState(vendor)
                    if pending == 0 && dropped >= minimumDropped { return dropped }
                    try await Task.sleep(nanoseconds: 50_000_000)
                }
                let (pending, dropped) = await Self.deliveryState(vendor)
                throw IMError(.timeout, "the \(source.vendor) sandbox: \(pending) callbacks pending, \(dropped) dropped")
            }

            static func deliveryState(_ vendor: any SandboxVendor) async -> (pending: Int, dropped: Int) {
                if let wk = vendor as? WuKongSandbox, let stats = await wk.notifier?.currentStats { return (stats.pending, stats.dropped) }
                if let rc = vendor as? RongCloudSandbox, let stats = await rc.deliveryStats() { return (stats.pending, stats.dropped) }
                if let nim = vendor as? NIMSandbox, let stats = await nim.deliveryStats() { return (stats.pending, stats.dropped) }
                return (0, 0)
            }
        }

        /// Sends `count` texts spread over the conversations (`cu1-1`, `cu2-1`, `cu3-1`, `cu1-2` …), in
        /// order per conversation; returns the texts per conversation.
        static func send(_ count: Int, on source: any IMBackend, startingAt first: [String: Int] = [:]) async throws -> [String: [String]] {
            var sent: [String: [String]] = [:]
            var next = first
            for n in 0..<count {
                let id = conversations[n % conversations.count]
                let number = next[id, default: 1]
                next[id] = number + 1
                let text = "\(id)-\(number)"
                let group = GroupID(groupID(id, vendor: source.capabilities.vendor))
                _ = try await source.send(OutgoingMessage(conversation: .group(group), sender: senders[n % senders.count], content: .text(text)))
                sent[id, default: []].append(text)
            }
            return sent
        }

        /// Bridge stopped, 200 messages sent in 3 conversations, the sandbox's retries used up (dropped),
        /// bridge started: all 200 arrive on the target once, in order per conversation, within the
        /// catch-up interval. One message per conversation is relayed live first, so the conversations
        /// are known to the store (RongCloud and NIM cannot list them for the bridge without the groups of
        /// known users).
        @Test(arguments: sources) func downtimeIsRecoveredFromHistory(_ source: Source) async throws {
            let rig = try await Rig.start(source)
            defer { Task { await rig.bridgeRig.stop() } }
            let users = try await rig.lab.userBackend(source.name, registry: ContentRegistry())
            var bridge = try await rig.bridge(run: 1)
            let warmUp = try await Self.send(3, on: users)
            // A wait, not a timing assertion: a full `make test` on two cores once took over 30 s here.
            #expect(try await eventually(90) { try await rig.relayed() == warmUp }, "warm-up relayed live:\n\(bridge.output)")
            #expect(await bridge.terminate() == 0)
            let standIn = try await rig.standIn()

            let down = try await Self.send(200, on: users, startingAt: Dictionary(uniqueKeysWithValues: Self.conversations.map { ($0, 2) }))
            let dropped = try await rig.callbacksSettled(minimumDropped: 200)
            #expect(dropped >= 200, "the sandbox gave up on every message sent while the bridge was down (\(dropped) dropped)")

            await standIn.stop()
            let restarted = Date()
            bridge = try await rig.bridge(run: 2)
            defer { bridge.killWithoutWaiting() }
            let expected = Dictionary(uniqueKeysWithValues: Self.conversations.map { ($0, (warmUp[$0] ?? []) + (down[$0] ?? [])) })
            let recovered = try await eventually(Self.intervalSeconds) { try await rig.relayed() == expected }
            let relayed = try await rig.relayed()
            #expect(recovered, "every message once, in order, within \(Self.intervalSeconds) s; got \(relayed.mapValues(\.count)):\n\(bridge.output)")
            #expect(Date().timeIntervalSince(restarted) < Self.intervalSeconds)
            #expect(bridge.output.contains("caught up from history"), "catch-up logs what it recovered")
        }

        /// The same with the bridge SIGKILLed part way through a stream: the messages whose callbacks were
        /// dropped while it was dead come back from history, nothing is doubled, order holds.
        @Test(arguments: sources) func sigkillMidStreamIsRecoveredFromHistory(_ source: Source) async throws {
            let rig = try await Rig.start(source)
            defer { Task { await rig.bridgeRig.stop() } }
            let users = try await rig.lab.userBackend(source.name, registry: ContentRegistry())
            var bridge = try await rig.bridge(run: 1)
            let warmUp = try await Self.send(3, on: users)
            #expect(try await eventually(30) { try await rig.relayed() == warmUp })
            let stream = Task { try await Self.send(200, on: users, startingAt: Dictionary(uniqueKeysWithValues: Self.conversations.map { ($0, 2) })) }
            #expect(try await eventually(60) { try await rig.relayed().values.map(\.count).reduce(0, +) >= 40 })
            await bridge.kill()
            let standIn = try await rig.standIn()
            let sent = try await stream.value
            _ = try await rig.callbacksSettled(minimumDropped: 1)
            await standIn.stop()
            bridge = try await rig.bridge(run: 2)
            defer { bridge.killWithoutWaiting() }
            let expected = Dictionary(uniqueKeysWithValues: Self.conversations.map { ($0, (warmUp[$0] ?? []) + (sent[$0] ?? [])) })
            let recovered = try await eventually(Self.intervalSeconds) { try await rig.relayed() == expected }
            let relayed = try await rig.relayed()
            let checkpoints = try BridgeStore(path: "\(rig.lab.directory)/bridge.sqlite").read { try $0.checkpoints(prefix: "catchup/") }
            let killed = (try? String(contentsOfFile: "\(rig.lab.directory)/bridge-1.log", encoding: .utf8)) ?? ""
            #expect(recovered, "every message once, in order; got \(relayed.mapValues(\.count)), checkpoints \(checkpoints):\n\(killed)\n---\n\(bridge.output)")
        }

        /// History copied by `imbridge migrate` is not relayed again when the bridge starts on the same
        /// store and its start-up catch-up reads that history (the ledger does not know migrated messages;
        /// the id map does). Messages sent after the migration, while the bridge was still down, do come.
        @Test func historyAMigrationCopiedIsNotRelayedAgainByCatchUp() async throws {
            let rig = try await BridgeRig.make([BridgeLab.Member("wk", "wukong"), BridgeLab.Member("rc", "rongcloud")],
                                               routes: "  - from: \"wk:group:mig\"\n    to: \"rc:group:mig\"\n    direction: forward\n",
                                               extra: "catch_up:\n  interval: 10m\n  max_age: 1h\n")
            let (lab, config) = (rig.lab, rig.config)
            defer { Task { await rig.stop() } }
            let wk = try await lab.userBackend("wk", registry: ContentRegistry())
            func send(_ range: ClosedRange<Int>) async throws {
                for n in range { _ = try await wk.send(OutgoingMessage(conversation: .group("mig"), sender: "ann", content: .text("mig-\(n)"))) }
            }
            func relayed() async throws -> [String] {
                try await lab.messages("rc").filter { $0["kind"] == "text" && $0["conversation_id"] == "mig" }.compactMap { $0["text"]?.stringValue }
            }
            try await send(1...8)
            let migrated = try await IMBridgeCLI.run(["migrate", "--config", config, "--from", "wk", "--to", "rc", "--conversation", "group:mig"])
            #expect(migrated.status == 0, "\(migrated.output)")
            #expect(try await relayed() == (1...8).map { "mig-\($0)" }, "the migration copied the history")
            try await send(9...10)
            let vendor = try #require(lab.sandboxes["wk"]?.vendor as? WuKongSandbox)
            #expect(await eventually(60) { await vendor.notifier?.currentStats.pending == 0 }, "the sandbox gave up on the callbacks")

            let bridge = try rig.launch()
            defer { bridge.killWithoutWaiting() }
            let expected = (1...10).map { "mig-\($0)" }
            let arrived = try await eventually(30) { try await relayed().count >= 10 }
            try await Task.sleep(nanoseconds: 1_000_000_000)
            let got = try await relayed()
            #expect(arrived && got == expected, "each message once, in order: \(got)\n\(bridge.output)")
            #expect(bridge.output.contains("caught up from history"), "the start-up catch-up read the conversation")
        }

        /// A live WuKong stream where one `msg.notify` batch is refused until the sandbox drops it: the next
        /// message shows a `message_seq` jump, the bridge reads the missing one back and relays the stream
        /// in order, once, without a restart.
        @Test func aDroppedBatchInALiveStreamHealsByItself() async throws {
            let rig = try await BridgeRig.make([BridgeLab.Member("wk", "wukong"), BridgeLab.Member("rc", "rongcloud")],
                                               routes: "  - from: \"wk:group:*\"\n    to: \"rc:group:*\"\n    direction: forward\n",
                                               extra: "catch_up:\n  interval: 10m\n", forwarded: true)
            let (lab, port, forwarder) = (rig.lab, rig.port, try #require(rig.forwarder))
            defer { Task { await rig.stop() } }
            let bridge = try rig.launch()
            defer { bridge.killWithoutWaiting() }
            let http = HTTPClientWrapper(timeoutSeconds: 2)
            #expect(await bridge.waitUntilUp())
            let wk = try await lab.userBackend("wk", registry: ContentRegistry())
            func relayed() async throws -> [String] {
                try await lab.messages("rc").filter { $0["kind"] == "text" && $0["conversation_id"] == "gap" }.compactMap { $0["text"]?.stringValue }
            }
            func send(_ range: ClosedRange<Int>) async throws {
                for n in range { _ = try await wk.send(OutgoingMessage(conversation: .group("gap"), sender: "ann", content: .text("gap-\(n)"))) }
            }
            try await send(1...10)
            #expect(try await eventually(30) { try await relayed().count == 10 })
            forwarder.refuseNext(5, path: "/callbacks/wk")
            try await send(11...11)
            #expect(await eventually(30) { forwarder.refusedCount == 5 }, "the batch with gap-11 was refused 5 times")
            let vendor = try #require(lab.sandboxes["wk"]?.vendor as? WuKongSandbox)
            #expect(await eventually(30) { await vendor.notifier?.currentStats.dropped == 1 }, "and dropped by the sandbox")
            try await send(12...30)
            let expected = (1...30).map { "gap-\($0)" }
            let healed = try await eventually(30) { try await relayed() == expected }
            let got = try await relayed()
            #expect(healed, "got \(got):\n\(bridge.output)")
            let metrics = try await http.send(OutboundRequest(method: "GET", url: "http://127.0.0.1:\(port)/metrics"))
            let text = String(decoding: metrics.body, as: UTF8.self)
            func value(_ family: String, _ labels: [String]) -> Double {
                text.split(separator: "\n").filter { $0.hasPrefix(family + "{") && labels.allSatisfy($0.contains) }
                    .compactMap { Double($0.split(separator: " ").last ?? "") }.reduce(0, +)
            }
            #expect(value("imbridge_catch_up_runs_total", ["backend=\"wk\"", "reason=\"gap\""]) >= 1, "the gap started a catch-up:\n\(text)")
            #expect(value("imbridge_catch_up_recovered_total", ["backend=\"wk\""]) >= 1, "gap-11 came from history")
        }
    }
}
