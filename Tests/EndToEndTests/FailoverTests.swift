import BridgeTestSupport
import Foundation
import IMBridgeApp
import IMLab
import IMVendors
import IMCore
import IMHTTP
import IMRelay
import PostgresTestSupport
import SandboxTestSupport
import Synchronization
import Testing
import IMMigration

/// Nested in `CrashTests` (a `.serialized` suite): the process-level crash and failover tests run one
/// after the other, not beside each other — on two shared cores, side by side they starve each other
/// past their deadlines.
extension CrashTests {
    /// Several `imbridge run` processes on one PostgreSQL store (docs/high-availability.md).
    ///
    /// The sandboxes post their callbacks to one URL, so a small round-robin forwarder stands in for the
    /// load balancer: each callback goes to the next instance; one that does not answer (killed) is passed
    /// over, as a load balancer's health check would. The RongCloud sandbox (source) is set to redeliver a
    /// callback until it gets a 200 (`callback_attempts=0`); WuKong (target) lets a resumed send find its earlier copy by `client_msg_no`.
    @Suite(.serialized) struct FailoverTests {
        static let routes = "  - from: \"rc:group:*\"\n    to: \"wk:group:*\"\n    direction: forward\n    group_ids: same\n"
        static let members = [BridgeLab.Member("rc", "rongcloud", options: ["callback_attempts": "0"]), BridgeLab.Member("wk", "wukong")]

        @Test func twoInstancesOneKilledEveryMessageOnceInOrder() async throws {
            let pair = try await InstancePair.start("failover", routes: Self.routes)
            defer { pair.stop() }
            let (lab, forwarder, bridges) = (pair.lab, pair.forwarder, pair.bridges)
            #expect(try await pair.healthy())

            let conversations = (1...10).map { "f\($0)" }, perConversation = 200
            let senders = try await sendAll(lab, conversations, perConversation)
            func relayed() async throws -> [JSONValue] { try await lab.messages("wk").filter { $0["kind"] == "text" } }
            #expect(try await eventually(120) { try await relayed().count >= 500 }, "bridge logs:\n\(bridges[0].output)\n\(bridges[1].output)")
            let beforeKill = forwarder.counts
            await bridges[0].kill()
            let killedAt = Date()
            let atKill = try await relayed()
            // Every conversation not finished at the kill moves again within the lease (8 s) + one scan (1 s),
            // with slack for the 2 shared cores.
            let unfinished = conversations.filter { id in atKill.filter { $0["conversation_id"]?.stringValue == id }.count < perConversation }
            var resumed: [String: Double] = [:]
            #expect(try await eventually(60) {
                let now = try await relayed()
                for id in unfinished where resumed[id] == nil {
                    if now.filter({ $0["conversation_id"]?.stringValue == id }).count > atKill.filter({ $0["conversation_id"]?.stringValue == id }).count {
                        resumed[id] = Date().timeIntervalSince(killedAt)
                    }
                }
                return resumed.count == unfinished.count
            }, "conversations resumed after the kill: \(resumed); callbacks per instance \(forwarder.counts); survivor log:\n\(bridges[1].output.suffix(3000))")
            // The bound is lease_ms (8 s) + one scan (1 s); the rest is slack for relaying on 2 shared cores.
            let takeover = resumed.values.max() ?? 0
            print("failover: the survivor resumed the dead instance's \(unfinished.count) lanes within \(String(format: "%.1f", takeover)) s")
            #expect(takeover < 14, "takeover took \(takeover) s")

            try await senders.value
            let total = conversations.count * perConversation
            #expect(try await eventually(180) { try await relayed().count >= total },
                    "callbacks per instance \(forwarder.counts), last refusals \(forwarder.refusals); survivor log:\n\(bridges[1].output.suffix(3000))")
            try await Task.sleep(nanoseconds: 500_000_000)
            let records = try await relayed()
            #expect(records.count == total, "\(records.count) copies for \(total) messages (killed at \(atKill.count))")
            for id in conversations {
                let texts = records.filter { $0["conversation_id"]?.stringValue == id }.compactMap { $0["text"]?.stringValue }
                #expect(texts == (1...perConversation).map { "\(id)-\($0)" }, "conversation \(id) is not exactly once, in order")
            }
            #expect(beforeKill.allSatisfy { $0 > 50 }, "callbacks were spread over both instances: \(beforeKill)")
            #expect(atKill.count < total, "the kill happened part way")
            #expect(await bridges[1].terminate() == 0, "SIGTERM ends the survivor cleanly")
        }

        /// The store's server goes away mid-stream and comes back: while it is down the bridge answers 503
        /// (vendors redeliver), then it reconnects and relays everything exactly once, in order.
        @Test func postgresRestartedMidStreamLosesNothing() async throws {
            // A cluster of its own: stopping the shared one would break the tests running beside this one.
            let cluster = try await TestPostgres.startPrivateCluster()
            defer { TestPostgres.destroy(cluster) }
            let rig = try await BridgeRig.make(Self.members, routes: Self.routes, store: "\"\(cluster.url)\"")
            let (lab, port) = (rig.lab, rig.port)
            defer { Task { await rig.stop() } }
            let bridge = try rig.launch()
            defer { bridge.killWithoutWaiting() }
            let http = HTTPClientWrapper(timeoutSeconds: 2)
            func health() async -> Int? { (try? await http.send(OutboundRequest(method: "GET", url: "http://127.0.0.1:\(port)/healthz")))?.status }
            #expect(await bridge.waitUntilUp())

            let conversations = (1...4).map { "r\($0)" }, perConversation = 150
            let senders = try await sendAll(lab, conversations, perConversation)
            func relayed() async throws -> [JSONValue] { try await lab.messages("wk").filter { $0["kind"] == "text" } }
            #expect(try await eventually(60) { try await relayed().count >= 100 }, "bridge log:\n\(bridge.output)")
            try await TestPostgres.stopServer(cluster)
            #expect(await eventually(10) { await health() == 503 }, "healthz answers 503 while the store is down")
            let metrics = { () async -> String in
                String(decoding: (try? await http.send(OutboundRequest(method: "GET", url: "http://127.0.0.1:\(port)/metrics")))?.body ?? [], as: UTF8.self)
            }
            #expect(await eventually(10) { await metrics().contains("imbridge_ingest_errors_total") },
                    "callbacks were refused (503) while the store was down")
            let duringOutage = try await relayed().count
            try await Task.sleep(nanoseconds: 2_000_000_000)
            #expect(try await relayed().count <= duringOutage + 5, "nothing is relayed without the store (at most the sends in hand)")
            try await TestPostgres.startServer(cluster)
            #expect(await eventually(30) { await health() == 200 }, "the bridge reconnects")

            try await senders.value
            let total = conversations.count * perConversation
            #expect(try await eventually(120) { try await relayed().count >= total }, "bridge log:\n\(bridge.output)")
            try await Task.sleep(nanoseconds: 500_000_000)
            let records = try await relayed()
            #expect(records.count == total, "\(records.count) copies for \(total) messages")
            for id in conversations {
                let texts = records.filter { $0["conversation_id"]?.stringValue == id }.compactMap { $0["text"]?.stringValue }
                #expect(texts == (1...perConversation).map { "\(id)-\($0)" }, "conversation \(id) is not exactly once, in order")
            }
            #expect(await bridge.terminate() == 0)
        }

        /// The store's server stops answering (its processes frozen: connections open, no reply) while
        /// callbacks and sends are under way, and the bridge is asked to stop. Every part of the shutdown
        /// is bounded by the drain deadline, so it exits 0 within seconds — not with swift-service-lifecycle's
        /// trap (status 4) for a service that did not return (docs/reliability.md, Finding 13).
        @Test func aStoreThatStopsAnsweringDoesNotHoldTheShutdown() async throws {
            let cluster = try await TestPostgres.startPrivateCluster()
            defer { TestPostgres.destroy(cluster) }
            let drainSeconds = 1
            let rig = try await BridgeRig.make(Self.members, routes: Self.routes, store: "\"\(cluster.url)\"",
                                               extra: "shutdown:\n  drain_seconds: \(drainSeconds)\n")
            let lab = rig.lab
            defer { Task { await rig.stop() } }
            let bridge = try rig.launch()
            defer { bridge.killWithoutWaiting() }
            #expect(await bridge.waitUntilUp())
            try await sendAll(lab, ["f1", "f2"], 20).value
            #expect(try await eventually(60) { try await lab.messages("wk").filter { $0["kind"] == "text" }.count >= 40 }, "bridge log:\n\(bridge.output)")

            // Freeze the server: the postmaster and every backend (their connections stay open, nothing answers).
            let pidFile = try String(contentsOfFile: "\(cluster.directory)/data/postmaster.pid", encoding: .utf8)
            let postmaster = try #require(pidFile.split(separator: "\n").first.flatMap { Int32($0.trimmingCharacters(in: .whitespaces)) })
            let frozen = [postmaster] + Self.children(of: postmaster)
            for pid in frozen { kill(pid, SIGSTOP) }
            defer { for pid in frozen { kill(pid, SIGCONT) } }
            let more = try await sendAll(lab, ["f1", "f2"], 5)   // callbacks and sends that now meet a store that does not answer
            try await Task.sleep(nanoseconds: 1_500_000_000)
            let signalled = Date()
            bridge.send(SIGTERM)
            let status = await bridge.waitForExit(seconds: 75)
            let seconds = Date().timeIntervalSince(signalled)
            for pid in frozen { kill(pid, SIGCONT) }
            more.cancel()
            #expect(status == 0, "exit status \(String(describing: status)) \(String(format: "%.1f", seconds)) s after SIGTERM; bridge log:\n\(bridge.output)")
            // Before every stop was bounded: status 4 after 33 s. With the stops bounded but the store's reads
            // made on the cooperative pool's threads (as many as cores), those threads waited for the store's
            // answer timeout (30 s) and no task ran meanwhile: 13–23 s, once over 40 s. The reads now wait on
            // the store's own queue (`BridgeStore.reading`); the services stop one after the other, each within
            // a second or two past the drain deadline (docs/reliability.md, Finding 13).
            print("aStoreThatStopsAnsweringDoesNotHoldTheShutdown: exit status \(String(describing: status)) \(String(format: "%.1f", seconds)) s after SIGTERM")
            #expect(seconds < 20, "stopped \(seconds) s after SIGTERM")
        }

        /// The processes whose parent is `pid` (from /proc).
        static func children(of pid: Int32) -> [Int32] {
            let entries = (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []
            return entries.compactMap(Int32.init).filter { child in
                guard let stat = try? String(contentsOfFile: "/proc/\(child)/stat", encoding: .utf8), let close = stat.lastIndex(of: ")") else { return false }
                let fields = stat[stat.index(after: close)...].split(separator: " ")
                return fields.count > 1 && Int32(fields[1]) == pid
            }
        }

        /// `imbridge deadletters` and `imbridge migrate`, run as their own processes against the store two
        /// running bridges share: the listed dead letter is the one the bridges set aside, a retried one is
        /// relayed by a running instance exactly once, and a migration beside the bridges copies what no
        /// route covers, skips what the bridges already relayed (the id map is shared), and a rerun adds nothing.
        @Test func deadLettersAndMigrateWorkOnTheSharedStoreWhileBridgesRun() async throws {
            // Only d1 is routed; h1's history is left for the migration.
            let pair = try await InstancePair.start("tools", routes: "  - from: \"rc:group:d1\"\n    to: \"wk:group:d1\"\n    direction: forward\n")
            defer { pair.stop() }
            let (lab, configs, bridges) = (pair.lab, pair.configs, pair.bridges)
            #expect(try await pair.healthy())
            let http = HTTPClientWrapper(timeoutSeconds: 2)
            // WuKong refuses the first relayed send for good (HTTP 400): it becomes a dead letter, the lane moves on.
            let fault = try await http.send(OutboundRequest(method: "POST", url: lab.url(of: "wk") + "/_sandbox/faults",
                                                            headers: [("Content-Type", "application/json")],
                                                            body: Array(#"{"status":400,"count":1,"path_prefix":"/message/send"}"#.utf8)))
            #expect(fault.status == 200)
            let rc = try await lab.userBackend("rc", registry: ContentRegistry())
            for n in 1...10 {
                _ = try await rc.send(OutgoingMessage(conversation: .group("h1"), sender: "u_h", content: .text("h1-\(n)")))
            }
            for n in 1...20 {
                _ = try await rc.send(OutgoingMessage(conversation: .group("d1"), sender: "u_d", content: .text("d1-\(n)")))
            }
            func texts(_ id: String) async throws -> [String] {
                try await lab.messages("wk").filter { $0["kind"] == "text" && $0["conversation_id"]?.stringValue == id }
                    .compactMap { $0["text"]?.stringValue }
            }
            #expect(try await eventually(60) { try await texts("d1").count >= 19 }, "bridge logs:\n\(bridges[0].output)\n\(bridges[1].output)")
            #expect(try await texts("d1") == (2...20).map { "d1-\($0)" }, "the refused first message was set aside, the rest relayed in order")

            let listed = try await IMBridgeCLI.run(["deadletters", "list", "--config", configs[0]])
            #expect(listed.status == 0, "\(listed.output)")
            #expect(listed.output.hasPrefix("1 outbound dead letter(s)") && listed.output.contains("0 inbound dead letter(s)"), "\(listed.output)")
            #expect(listed.output.contains("invalid_argument") || listed.output.contains("400"), "the reason is shown: \(listed.output)")
            let retried = try await IMBridgeCLI.run(["deadletters", "retry", "--config", configs[1]])
            #expect(retried.status == 0 && retried.output.hasPrefix("1 outbound dead letter(s) back"), "\(retried.output)")
            #expect(try await eventually(30) { try await texts("d1").count >= 20 }, "a running instance relays the retried letter")
            try await Task.sleep(nanoseconds: 500_000_000)
            #expect(try await texts("d1").sorted() == (1...20).map { "d1-\($0)" }.sorted(), "each message exactly once")
            #expect(try await IMBridgeCLI.run(["deadletters", "list", "--config", configs[0]]).output.hasPrefix("0 outbound dead letter(s)"))

            let reportPath = "\(lab.directory)/migrate.json"
            for conversation in ["group:h1", "group:d1"] {
                let run = try await IMBridgeCLI.run(["migrate", "--config", configs[0], "--from", "rc", "--to", "wk",
                                                     "--conversation", conversation, "--report", reportPath])
                #expect(run.status == 0, "\(run.output)")
                let report = try JSONDecoder().decode(MigrationReport.self, from: Data(contentsOf: URL(fileURLWithPath: reportPath)))
                if conversation == "group:h1" {
                    #expect(report.total.sentTotal == 10 && report.total.failedTotal == 0, "\(report.summary)")
                } else {
                    #expect(report.total.sentTotal == 0 && report.total.skipped["already_copied"] == 20,
                            "what the bridges relayed is in the shared id map: \(report.summary)")
                }
            }
            let again = try await IMBridgeCLI.run(["migrate", "--config", configs[1], "--from", "rc", "--to", "wk",
                                                   "--conversation", "group:h1", "--report", reportPath])
            #expect(again.status == 0, "\(again.output)")
            let rerun = try JSONDecoder().decode(MigrationReport.self, from: Data(contentsOf: URL(fileURLWithPath: reportPath)))
            #expect(rerun.total.sentTotal == 0 && rerun.total.failedTotal == 0, "\(rerun.summary)")
            #expect(try await texts("h1") == (1...10).map { "h1-\($0)" })
            #expect(try await texts("d1").count == 20)
            for bridge in bridges { #expect(await bridge.terminate() == 0) }
        }

        /// Users sending in every conversation at once, each conversation in order.
        func sendAll(_ lab: BridgeLab, _ conversations: [String], _ perConversation: Int) async throws -> Task<Void, any Error> {
            let rc = try await lab.userBackend("rc", registry: ContentRegistry())
            return Task {
                try await withThrowingTaskGroup(of: Void.self) { group in
                    for id in conversations {
                        group.addTask {
                            for n in 1...perConversation {
                                _ = try await rc.send(OutgoingMessage(conversation: .group(GroupID(id)), sender: UserID("u_\(id)"),
                                                                      content: .text("\(id)-\(n)")))
                            }
                        }
                    }
                    try await group.waitForAll()
                }
            }
        }
    }
}

/// Two `imbridge run` processes on one fresh PostgreSQL schema, behind a round-robin forwarder the RongCloud
/// and WuKong sandboxes post their callbacks to.
struct InstancePair {
    let rig: BridgeRig
    let bridges: [BridgeProcess]
    let store: String
    var lab: BridgeLab { rig.lab }
    var forwarder: RoundRobinForwarder { rig.forwarder! }
    var configs: [String] { rig.configs }
    var ports: [Int] { rig.ports }

    static func start(_ label: String, routes: String, ha: String = "",
                      members: [BridgeLab.Member] = CrashTests.FailoverTests.members) async throws -> InstancePair {
        let store = try TestPostgres.freshURL(label)
        let rig = try await BridgeRig.make(members, routes: routes, store: "\"\(store)\"", instances: 2,
                                           instanceYAML: { "ha:\n  instance: \(label)\($0)\n" + ha })
        let bridges = try rig.ports.indices.map { try rig.launch($0, log: "bridge-\($0).log") }
        return InstancePair(rig: rig, bridges: bridges, store: store)
    }

    /// Both instances answer `/healthz` (bounded wait).
    func healthy() async throws -> Bool {
        for bridge in bridges where !(await bridge.waitUntilUp()) { return false }
        return true
    }

    /// For a `defer`: both processes killed, the lab and the forwarder stopped behind.
    func stop() {
        for bridge in bridges { bridge.killWithoutWaiting() }
        let rig = rig
        Task { await rig.stop() }
    }
}
