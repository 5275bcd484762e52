import BridgeTestSupport
import Foundation
import GRDB
import IMAdapterKit
import IMCore
import IMHTTP
import IMLab
import IMSandbox
import IMStore
import IMVendors
import PostgresTestSupport
import SandboxTestSupport
import Synchronization

/// What one seed's run saw: the schedule as carried out, and every violation of the guarantee.
struct ChaosOutcome: Sendable {
    var plan: ChaosPlan
    var timeline: [String]
    var violations: [String]
    var notes: [String]
    /// Where the bridge logs were kept (only when something was violated).
    var keptLogs: String?
    var seconds: Double

    var report: String {
        var lines = ["chaos \(plan)", "carried out:"] + timeline.map { "  \($0)" }
        lines += notes.map { "note: \($0)" }
        if violations.isEmpty {
            lines.append("every message once, in source order; no dead letter; no secret in the logs (\(String(format: "%.1f", seconds)) s)")
        } else {
            lines.append("VIOLATIONS (\(violations.count)):")
            lines += violations.map { "  \($0)" }
            if let keptLogs { lines.append("bridge logs and store kept in \(keptLogs)") }
        }
        return lines.joined(separator: "\n")
    }
}

/// Runs one `ChaosPlan` against real processes: the two sandboxes in this process (`BridgeLab`), one
/// `imbridge run` child on SQLite, the plan's workload through the source sandbox, its faults on the
/// bridge process and the target sandbox; then the strict check of docs/reliability.md.
enum ChaosCampaign {
    /// `catch_up.interval` of the bridge: RongCloud and NIM callbacks given up on while the bridge runs
    /// are only found by the interval pass (docs/architecture.md, "Catch-up").
    static let catchUpInterval = "3s"
    /// How long the target may take to show everything once the faults are over. NIM answers a
    /// rate-limited request with a 10 s block, and two bursts of 20 took 74 s to work off (default
    /// seed 24), so the bound leaves room for that twice over.
    static let convergenceSeconds = 180.0
    static let senders: [UserID] = ["ann", "bob"]

    static func text(_ seed: UInt64, _ conversation: String, _ number: Int) -> String { "s\(seed)-\(conversation)-\(number)" }

    static func run(_ plan: ChaosPlan) async throws -> ChaosOutcome {
        let began = Date()
        let cluster = plan.postgres ? try await TestPostgres.startPrivateCluster() : nil
        defer { if let cluster { TestPostgres.destroy(cluster) } }
        let source = plan.source, target = plan.target
        // The target answers within 2 s or the send's outcome is unknown (latency faults reach past it).
        // Its port is outside the ephemeral range: while it refuses connections, no client socket takes it.
        let targetPort = try await freePort()
        let routes = plan.groups.map {
            "  - from: \"\(source.name):group:\(source.groupID($0, of: plan.groups))\"\n"
                + "    to: \"\(target.name):group:\(target.groupID($0, of: plan.groups))\"\n    direction: forward\n"
        }.joined()
        // With a flood, a cap the flood outgrows while the bridge is down (the default, 1,000, is more
        // than a seed sends into one group).
        let cap = plan.flood > 0 ? "  max_messages_per_conversation: \(ChaosPlan.floodCatchUpCap)\n" : ""
        // Two instances share the sources' callbacks through a round-robin forwarder (a load balancer).
        let rig = try await BridgeRig.make([BridgeLab.Member(source.name, source.vendor),
                                            BridgeLab.Member(target.name, target.vendor, settings: ["timeout": "2s"], port: targetPort)],
                                           routes: routes, store: cluster.map { "\"\($0.url)?schema=chaos\"" },
                                           extra: "catch_up:\n  interval: \(catchUpInterval)\n  max_age: 1h\n" + cap, instances: plan.instances,
                                           instanceYAML: { plan.postgres ? "ha:\n  instance: chaos\($0)\n  lease: \(ChaosPlan.leaseMs)ms\n" : "" })
        let lab = rig.lab
        try await seedGroups(plan, lab)
        let storePath = cluster.map { $0.url + "?schema=chaos" } ?? rig.sqlitePath
        let bridges = rig.ports.indices.map { ChaosBridge(rig: rig, instance: $0) }
        let bridge = bridges[0]
        let timeline = Timeline()
        var violations: [String] = []
        var notes: [String] = []
        let users = try await lab.userBackend(source.name, registry: ContentRegistry())
        let targetServer = try lab.sandboxes[target.name].orThrow("no target sandbox")
        let http = HTTPClientWrapper(timeoutSeconds: 5)

        func relayed() async throws -> [String: [String]] { try await texts(lab, target, plan) }
        var expected: [String: [String]] = [:]
        for conversation in plan.conversations { expected[conversation] = (1...(plan.perConversation + 1)).map { text(plan.seed, conversation, $0) } }
        if plan.flood > 0 { expected["flood"] = (1...(plan.flood + 1)).map { text(plan.seed, "flood", $0) } }

        do {
            for (index, instance) in bridges.enumerated() {
                try await instance.start()
                timeline.note(bridges.count > 1 ? "instance \(index) run 1 up" : "bridge run 1 up")
            }
            // Warm-up: one message per group relayed live, so the store knows each conversation and a
            // member to read its history as before anything goes wrong.
            for (index, conversation) in plan.groups.enumerated() {
                _ = try await users.send(OutgoingMessage(conversation: plan.sourceGroup(conversation), sender: senders[index % senders.count],
                                                         content: .text(text(plan.seed, conversation, 1))))
            }
            let warm = await poll(60) { (try? await relayed()).map { got in plan.groups.allSatisfy { got[$0]?.isEmpty == false } } ?? false }
            if !warm { violations.append("the warm-up messages were not relayed within 60 s (before any fault)") }

            timeline.start()
            let workload = Task { try await Self.sendWorkload(plan, users: users) }
            let parties = Parties(plan: plan, bridge: bridge, bridges: bridges, target: targetServer, users: users, storePath: storePath, cluster: cluster,
                                  http: http, timeline: timeline)
            let faults = Task { await Self.inject(plan, parties) }
            try await workload.value
            timeline.note("workload sent: \(plan.conversations.count * plan.perConversation + plan.flood) texts")
            violations += await faults.value
            // Heal whatever is still in effect: the check is about the state after the faults.
            _ = try? await http.send(.json(lab.url(of: target.name) + "/_sandbox/faults", Data(#"{"latency_ms":0}"#.utf8)))
            try await targetServer.acceptConnections()
            if let cluster, parties.storeDown.withLock({ $0 }) { try await TestPostgres.startServer(cluster) }
            if !plan.postgres { try await StoreFull.set(false, storePath) }
            for instance in bridges {
                instance.resume()
                if instance.process == nil { try await instance.start() }
            }

            // What the source holds once the workload and the bursts are in (a burst's texts are not in `expected`).
            let sentNow = (try? await texts(lab, source, plan)) ?? expected
            let total = plan.groups.map { max(sentNow[$0]?.count ?? 0, expected[$0]!.count) }.reduce(0, +)
            let converged = await poll(convergenceSeconds) {
                guard let got = try? await relayed() else { return false }
                return plan.groups.allSatisfy { (got[$0]?.count ?? 0) >= max(sentNow[$0]?.count ?? 0, expected[$0]!.count) }
            }
            timeline.note(converged ? "target holds at least \(total) texts" : "target still short after \(Int(convergenceSeconds)) s")
            // Late doubles (a retry of something already delivered) get a moment to show.
            try await Task.sleep(nanoseconds: 2_000_000_000)
            for instance in bridges {
                let stopped = await instance.terminate()
                if stopped != 0 {
                    violations.append(stopped.map { "the last bridge run ended with status \($0) on SIGTERM" } ?? "the last bridge run did not end within 30 s of SIGTERM")
                }
            }
            timeline.note("bridge stopped (SIGTERM)")

            let sent = try await texts(lab, source, plan)
            let got = try await relayed()
            for conversation in plan.groups {
                let paced = (sent[conversation] ?? []).filter { !$0.contains("-b") }   // a burst's texts are not in `expected`
                if paced != expected[conversation]! {
                    notes.append("the source sandbox holds \(paced.count) paced texts in \(conversation), \(expected[conversation]!.count) were sent")
                }
                if let problem = ChaosChecker.compare(conversation: conversation, expected: sent[conversation] ?? [], got: got[conversation] ?? []) {
                    violations.append(problem)
                }
            }
            let store = try BridgeStore(path: storePath)
            let (dead, inboundDead, pending) = try store.read { (try $0.deadLetters(limit: 20), try $0.inboundDeadLetters(limit: 20), try $0.count(state: .pending)) }
            for entry in dead {
                violations.append("dead letter \(entry.id) (\(entry.lane), \(entry.kind), \(entry.sourceEventID), \(entry.attempts) attempts): \(entry.lastError ?? "")")
            }
            for letter in inboundDead { violations.append("inbound dead letter \(letter.id) (\(letter.backend) \(letter.key)): \(letter.reason)") }
            if pending > 0 { notes.append("\(pending) outbox entries still pending at the end") }
        } catch {
            violations.append("the run could not be carried out: \(error)")
            for instance in bridges where instance.process?.isRunning == true { _ = await instance.terminate(seconds: 5) }
        }
        await rig.forwarder?.stop()

        violations += secretViolations(lab, logs: bridges.flatMap(\.logPaths))
        var kept: String?
        if !violations.isEmpty {
            let directory = FileManager.default.temporaryDirectory.appendingPathComponent("imbridge-chaos-seed-\(plan.seed)-\(Int(Date().timeIntervalSince1970))").path
            try? FileManager.default.copyItem(atPath: lab.directory, toPath: directory)
            // What the target holds (with each copy's client id) and, on PostgreSQL, the store's rows: the
            // cluster is removed when the run ends.
            if let records = try? await lab.messages(target.name) {
                try? JSONValue.array(records).jsonString().write(toFile: "\(directory)/target-messages.json", atomically: true, encoding: .utf8)
            }
            if plan.postgres {
                for (name, sql) in [("outbox", "SELECT id, lane, source_event_id, kind, state, attempts, last_error, created_at, finished_at FROM outbox ORDER BY id"),
                                    ("ledger", "SELECT backend, event_id, kind, received_at FROM ledger ORDER BY received_at"),
                                    ("id_map", "SELECT * FROM id_map ORDER BY created_at")] {
                    let rows = (try? TestPostgres.query(storePath, sql)) ?? ["(could not be read)"]
                    try? rows.joined(separator: "\n").write(toFile: "\(directory)/store-\(name).txt", atomically: true, encoding: .utf8)
                }
            }
            kept = directory
        }
        await lab.stop()
        return ChaosOutcome(plan: plan, timeline: timeline.lines, violations: violations, notes: notes, keptLogs: kept,
                            seconds: Date().timeIntervalSince(began))
    }

    /// Sends each group's texts in order, one every `spacingMs` (groups offset from each other), and the
    /// flood group's back to back.
    static func sendWorkload(_ plan: ChaosPlan, users: any IMBackend) async throws {
        let start = Date()
        try await withThrowingTaskGroup(of: Void.self) { group in
            for (index, conversation) in plan.conversations.enumerated() {
                group.addTask {
                    let offset = plan.spacingMs * index / plan.conversations.count
                    for number in 2...(plan.perConversation + 1) {
                        let due = start.addingTimeInterval(Double(offset + (number - 2) * plan.spacingMs) / 1000)
                        let wait = due.timeIntervalSinceNow
                        if wait > 0 { try await Task.sleep(nanoseconds: UInt64(wait * 1_000_000_000)) }
                        _ = try await users.send(OutgoingMessage(conversation: plan.sourceGroup(conversation),
                                                                 sender: senders[number % senders.count],
                                                                 content: .text(text(plan.seed, conversation, number))))
                    }
                }
            }
            if plan.flood > 0 {
                group.addTask {
                    for number in 2...(plan.flood + 1) {
                        _ = try await users.send(OutgoingMessage(conversation: plan.sourceGroup("flood"), sender: senders[number % senders.count],
                                                                 content: .text(text(plan.seed, "flood", number))))
                    }
                }
            }
            try await group.waitForAll()
        }
    }

    /// What the faults act on.
    struct Parties: Sendable {
        var plan: ChaosPlan
        /// The instance the bridge faults hit (the first).
        var bridge: ChaosBridge
        var bridges: [ChaosBridge]
        var target: SandboxServer
        /// The source's users (a burst's sends).
        var users: any IMBackend
        /// The SQLite file, or the PostgreSQL URL.
        var storePath: String
        var cluster: TestPostgres.Cluster?
        /// Whether the PostgreSQL server is stopped now.
        let storeDown = SharedFlag()
        var http: HTTPClientWrapper
        var timeline: Timeline
    }

    /// Carries out the schedule; returns violations seen while doing so (a restart that never came up).
    static func inject(_ plan: ChaosPlan, _ parties: Parties) async -> [String] {
        // The bridge's side, the target's and the cluster's run side by side, each party's faults in order.
        async let bridgeSide = runFaults(plan.faults.filter(\.kind.hitsBridge), parties)
        async let targetSide = runFaults(plan.faults.filter(\.kind.hitsTarget), parties)
        async let clusterSide = runFaults(plan.faults.filter(\.kind.hitsCluster), parties)
        return await bridgeSide + targetSide + clusterSide
    }

    /// The instance holding the most unexpired lane leases (the first when none is held).
    static func laneHolder(_ parties: Parties) -> Int {
        let owners = (try? TestPostgres.query(parties.storePath, """
            SELECT owner FROM leases WHERE name LIKE 'lane:%' AND expires_at > (EXTRACT(EPOCH FROM clock_timestamp()) * 1000)::BIGINT
            """)) ?? []
        let counts = parties.bridges.indices.map { index in owners.filter { $0.hasPrefix("chaos\(index)-") }.count }
        return counts.indices.max { counts[$0] < counts[$1] } ?? 0
    }

    static func runFaults(_ faults: [Fault], _ parties: Parties) async -> [String] {
        let (bridge, target, http, timeline) = (parties.bridge, parties.target, parties.http, parties.timeline)
        var problems: [String] = []
        for fault in faults {
            await timeline.sleep(untilMs: fault.atMs)
            do {
                switch fault.kind {
                case .sigkill, .sigterm:
                    if fault.kind == .sigkill {
                        await bridge.kill()
                        timeline.note("SIGKILL bridge run \(bridge.runs)")
                    } else {
                        let status = await bridge.terminate()
                        timeline.note("SIGTERM bridge run \(bridge.runs): " + (status.map { "exit \($0)" } ?? "did not end within 30 s, SIGKILLed"))
                        if status != 0 { problems.append("bridge run \(bridge.runs) on SIGTERM: " + (status.map { "exit status \($0)" } ?? "did not end within 30 s")) }
                    }
                    try await Task.sleep(nanoseconds: UInt64(fault.durationMs) * 1_000_000)
                    try await bridge.start()
                    timeline.note("bridge run \(bridge.runs) up")
                case .sigstop:
                    bridge.pause()
                    timeline.note("SIGSTOP bridge run \(bridge.runs)")
                    try await Task.sleep(nanoseconds: UInt64(fault.durationMs) * 1_000_000)
                    bridge.resume()
                    timeline.note("SIGCONT bridge run \(bridge.runs)")
                case .storeFull:
                    try await StoreFull.set(true, parties.storePath)
                    timeline.note("store full: every write fails")
                    try await Task.sleep(nanoseconds: UInt64(fault.durationMs) * 1_000_000)
                    try await StoreFull.set(false, parties.storePath)
                    timeline.note("store writable again")
                case .refused:
                    await target.refuseConnections()
                    timeline.note("target refuses connections")
                    try await Task.sleep(nanoseconds: UInt64(fault.durationMs) * 1_000_000)
                    try await target.acceptConnections()
                    timeline.note("target accepts connections")
                case .latency:
                    try await post(target, #"{"latency_ms":\#(fault.latencyMs)}"#, http)
                    timeline.note("target latency \(fault.latencyMs) ms")
                    try await Task.sleep(nanoseconds: UInt64(fault.durationMs) * 1_000_000)
                    try await post(target, #"{"latency_ms":0}"#, http)
                    timeline.note("target latency off")
                case .flood: break
                case .pauseHolder:
                    // The burst makes the lanes busy; the pause falls 300 ms into it.
                    let burst = Task { try await sendBurst(fault, parties) }
                    timeline.note("burst of \(fault.count) texts begins")
                    try await Task.sleep(nanoseconds: 300_000_000)
                    let index = laneHolder(parties)
                    let holder = parties.bridges[index]
                    holder.pause()
                    timeline.note("SIGSTOP instance \(index) (holding the most lanes)")
                    try await Task.sleep(nanoseconds: UInt64(fault.durationMs) * 1_000_000)
                    holder.resume()
                    timeline.note("SIGCONT instance \(index)")
                    try await burst.value
                    timeline.note("burst sent")
                case .postgresDown:
                    guard let cluster = parties.cluster else { break }
                    try await TestPostgres.stopServer(cluster)
                    parties.storeDown.set(true)
                    timeline.note("PostgreSQL stopped")
                    try await Task.sleep(nanoseconds: UInt64(fault.durationMs) * 1_000_000)
                    try await TestPostgres.startServer(cluster)
                    parties.storeDown.set(false)
                    timeline.note("PostgreSQL started")
                case .serverErrors, .rateLimited, .rateLimitedNoWait, .lostAnswer:
                    var body: [String: JSONValue] = ["status": .int(Int64(fault.status)), "count": .int(Int64(fault.count))]
                    if let prefix = fault.pathPrefix { body["path_prefix"] = .string(prefix) }
                    if fault.kind == .lostAnswer { body["after_accept"] = .bool(true) }
                    if fault.kind == .rateLimited { body["retry_after"] = .int(1) }
                    if fault.kind == .rateLimitedNoWait { body["retry_after"] = .int(0) }
                    try await post(target, JSONValue.object(body).jsonString(), http)
                    timeline.note("target: next \(fault.count) requests\(fault.pathPrefix.map { " to \($0)" } ?? "") answered \(fault.status)"
                                  + (fault.kind == .lostAnswer ? " after being carried out" : ""))
                }
            } catch {
                problems.append("\(fault.kind.rawValue) at +\(fault.atMs) ms: \(error)")
                timeline.note("\(fault.kind.rawValue) failed: \(error)")
            }
        }
        return problems
    }

    /// A pause-holder's burst: `fault.count` texts over the paced groups, each group's in order, back to
    /// back (`s<seed>-<group>-b<fault's start>-<n>`, so that two bursts never repeat a text).
    static func sendBurst(_ fault: Fault, _ parties: Parties) async throws {
        let groups = parties.plan.conversations
        try await withThrowingTaskGroup(of: Void.self) { group in
            for (index, conversation) in groups.enumerated() {
                group.addTask {
                    for number in stride(from: index, to: fault.count, by: groups.count) {
                        _ = try await parties.users.send(OutgoingMessage(conversation: parties.plan.sourceGroup(conversation), sender: senders[number % senders.count],
                                                                         content: .text("s\(parties.plan.seed)-\(conversation)-b\(fault.atMs)-\(number)")))
                    }
                }
            }
            try await group.waitForAll()
        }
    }

    static func post(_ target: SandboxServer, _ body: String, _ http: HTTPClientWrapper) async throws {
        let response = try await http.send(.json(target.baseURL + "/_sandbox/faults", Data(body.utf8)))
        guard response.status == 200 else { throw IMError(.unavailable, "POST /_sandbox/faults \(body): \(response.status)") }
    }

    /// Text messages per conversation (the plan's names, `Side.conversation(ofGroup:in:)`), in the
    /// sandbox's order.
    static func texts(_ lab: BridgeLab, _ side: Side, _ plan: ChaosPlan) async throws -> [String: [String]] {
        var texts: [String: [String]] = [:]
        // A copy the bridge took back (a late double of a lane whose lease was taken over, recalled by the
        // lane: docs/high-availability.md) is not a delivery; were it the only copy, the text shows missing.
        for record in try await lab.messages(side.name) where record["kind"] == "text" && record["recalled"] != true {
            guard let id = record["conversation_id"]?.stringValue, let text = record["text"]?.stringValue else { continue }
            texts[side.conversation(ofGroup: id, in: plan.groups), default: []].append(text)
        }
        return texts
    }

    /// The plan's groups on a NIM side, made before the run as an operator would (`POST /_sandbox/groups`):
    /// NIM refuses a team message into a team it does not have or from a non-member. On a NIM source the
    /// senders are in each team; on a NIM target their puppets (the routes' default `<source>_` prefix).
    static func seedGroups(_ plan: ChaosPlan, _ lab: BridgeLab) async throws {
        let people = [(plan.source, senders.map(\.rawValue)), (plan.target, senders.map { "\(plan.source.name)_\($0.rawValue)" })]
        for (side, members) in people where side.groupID(plan.groups[0], of: plan.groups) != plan.groups[0] {
            for conversation in plan.groups {
                try await SandboxRig.seedGroup(at: lab.url(of: side.name), side.groupID(conversation, of: plan.groups),
                                               owner: members[0], members: Array(members.dropFirst()), name: conversation)
            }
        }
    }

    /// Every setting the adapters declare secret, looked for in every bridge log.
    static func secretViolations(_ lab: BridgeLab, logs: [String]) -> [String] {
        var secrets: [String: String] = [:]
        for member in lab.members {
            let specs = Vendors.named(member.vendor)?.adapter.settings ?? []
            for (key, value) in lab.settings(for: member) where specs.contains(where: { $0.key == key && $0.isSecret }) {
                secrets["backends.\(member.name).\(key)"] = value
            }
        }
        return logs.flatMap { path in
            ChaosChecker.secretsIn(log: (try? String(contentsOfFile: path, encoding: .utf8)) ?? "",
                                   file: URL(fileURLWithPath: path).lastPathComponent, secrets: secrets)
        }
    }

    static func poll(_ seconds: Double, _ condition: () async -> Bool) async -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline {
            if await condition() { return true }
            try? await Task.sleep(nanoseconds: 250_000_000)
        }
        return await condition()
    }
}

/// A full disk under the bridge's SQLite store, staged from outside the process: triggers that make
/// every insert, update and delete fail with the message SQLite gives for SQLITE_FULL (the same
/// staging as `UnknownOutcomeTests`, on every table). The bridge's connection sees them at its next
/// statement (the schema changed).
enum StoreFull {
    static let tables = ["ledger", "outbox", "id_map", "checkpoints", "leases", "inbound_dead_letters"]

    static func set(_ full: Bool, _ path: String) async throws {
        var configuration = Configuration()
        // The running bridge writes the same file: wait for its write lock as its store does.
        configuration.busyMode = .timeout(10)
        let database = try DatabaseQueue(path: path, configuration: configuration)
        defer { try? database.close() }
        try await database.write { db in
            for table in tables {
                for operation in ["INSERT", "UPDATE", "DELETE"] {
                    let name = "chaos_full_\(table)_\(operation.lowercased())"
                    if full {
                        try db.execute(sql: "CREATE TRIGGER IF NOT EXISTS \(name) BEFORE \(operation) ON \(table) BEGIN SELECT RAISE(ABORT, 'database or disk is full'); END")
                    } else {
                        try db.execute(sql: "DROP TRIGGER IF EXISTS \(name)")
                    }
                }
            }
        }
    }
}

/// A flag shared between the fault runner and the healing step.
final class SharedFlag: Sendable {
    private let value = Mutex(false)
    func set(_ on: Bool) { value.withLock { $0 = on } }
    func withLock<T>(_ body: (Bool) -> T) -> T { value.withLock { body($0) } }
}

/// The schedule as it was carried out, each line stamped with the time since the workload started.
final class Timeline: Sendable {
    private let state = Mutex<(start: Date?, lines: [String])>((nil, []))

    func start() { state.withLock { $0.start = Date() } }

    func note(_ line: String) {
        state.withLock { state in
            let stamp = state.start.map { String(format: "+%6.3fs", Date().timeIntervalSince($0)) } ?? "  setup "
            state.lines.append("\(stamp) \(line)")
        }
    }

    func sleep(untilMs ms: Int) async {
        guard let start = state.withLock({ $0.start }) else { return }
        let wait = start.addingTimeInterval(Double(ms) / 1000).timeIntervalSinceNow
        if wait > 0 { try? await Task.sleep(nanoseconds: UInt64(wait * 1_000_000_000)) }
    }

    var lines: [String] { state.withLock { $0.lines } }
}

extension Optional {
    func orThrow(_ message: String) throws -> Wrapped {
        guard let self else { throw IMError(.unavailable, message) }
        return self
    }
}
