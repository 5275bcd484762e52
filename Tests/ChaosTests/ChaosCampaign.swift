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
import NIMSandbox
import RongCloudSandbox
import PostgresTestSupport
import SandboxTestSupport
import Synchronization
import WuKongSandbox

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
        let routes = plan.portals ? ChaosPortals.routes(plan) : plan.groups.map {
            "  - from: \"\(source.name):group:\(source.groupID($0, of: plan.groups))\"\n"
                + "    to: \"\(target.name):group:\(target.groupID($0, of: plan.groups))\"\n    direction: forward\n"
        }.joined()
        // With a flood, a cap the flood outgrows while the bridge is down (the default, 1,000, is more
        // than a seed sends into one group).
        let cap = plan.flood > 0 ? "  max_messages_per_conversation: \(ChaosPlan.floodCatchUpCap)\n" : ""
        // `restart-after-retention`: a retention the run outlasts (`max_age` may not exceed it).
        let retention = plan.restartAfterRetention ? "retention: \(ChaosPlan.retentionSeconds)s\n" : ""
        let maxAge = plan.restartAfterRetention ? "\(ChaosPlan.retentionSeconds)s" : "1h"
        // Two instances share the sources' callbacks through a round-robin forwarder (a load balancer).
        let rig = try await BridgeRig.make([BridgeLab.Member(source.name, source.vendor),
                                            BridgeLab.Member(target.name, target.vendor, settings: ["timeout": "2s"], port: targetPort)],
                                           routes: routes, store: cluster.map { "\"\($0.url)?schema=chaos\"" },
                                           extra: retention + ChaosBridge.logYAML + "catch_up:\n  interval: \(catchUpInterval)\n  max_age: \(maxAge)\n" + cap, instances: plan.instances,
                                           instanceYAML: { plan.postgres ? "ha:\n  instance: chaos\($0)\n  lease: \(ChaosPlan.leaseMs)ms\n" : "" })
        let lab = rig.lab
        try await seedGroups(plan, lab)
        let http = HTTPClientWrapper(timeoutSeconds: 5)
        if let skew = plan.skewMs {
            for (side, ms) in [(source, skew.source), (target, skew.target)] where ms != 0 {
                let answer = try await http.send(.json(lab.url(of: side.name) + "/_sandbox/clock", Data(#"{"skew_ms":\#(ms)}"#.utf8)))
                guard answer.status == 200 else { throw IMError(.unavailable, "POST /_sandbox/clock skew_ms \(ms): \(answer.status)") }
            }
        }
        let storePath = cluster.map { $0.url + "?schema=chaos" } ?? rig.sqlitePath
        // A portals run (`new-groups`): the target groups' conversations, from the bridge's conversation map.
        let portalNames = ChaosPortals.Names(plan: plan, storePath: storePath)
        defer { portalNames.close() }
        let bridges = rig.ports.indices.map { ChaosBridge(rig: rig, instance: $0) }
        let bridge = bridges[0]
        let timeline = Timeline()
        var violations: [String] = []
        var notes: [String] = []
        let users = try await lab.userBackend(source.name, registry: ContentRegistry())
        let targetServer = try lab.sandboxes[target.name].orThrow("no target sandbox")
        let log = WorkLog()
        func problems() async throws -> [String] { try await finalStateProblems(plan, lab: lab, log: log, names: portalNames.current()) }

        do {
            for (index, instance) in bridges.enumerated() {
                try await instance.start()
                timeline.note(bridges.count > 1 ? "instance \(index) run 1 up" : "bridge run 1 up")
            }
            // Warm-up: one message per group relayed live, so the store knows each conversation and a
            // member to read its history as before anything goes wrong.
            for conversation in plan.groups { try await ChaosChanges.send(1, in: conversation, plan: plan, users: users, log: log) }
            let warm = await poll(60) { (try? await texts(lab, target, plan, names: portalNames.current())).map { got in plan.groups.allSatisfy { got[$0]?.isEmpty == false } } ?? false }
            if !warm { violations.append("the warm-up messages were not relayed within 60 s (before any fault)") }

            timeline.start()
            let workload = Task {
                try await Self.sendWorkload(plan, users: users, log: log) { group in
                    try await ChaosPortals.appear(group, plan: plan, lab: lab)
                    timeline.note("new-groups: group \(group) appears")
                }
            }
            let parties = Parties(plan: plan, bridge: bridge, bridges: bridges, target: targetServer, users: users, storePath: storePath, cluster: cluster,
                                  http: http, timeline: timeline, lab: lab, config: rig.config, log: log)
            let faults = Task { await Self.inject(plan, parties) }
            try await workload.value
            timeline.note("workload sent: \(plan.conversations.count * plan.perConversation + plan.flood + plan.newGroups.map(\.texts).reduce(0, +)) texts; changes made: "
                          + log.carried.withLock { $0 }.sorted { $0.key < $1.key }.map { "\($0.value) \($0.key.rawValue)" }.joined(separator: ", "))
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

            // The final state on the target: every message once, in order, as the source left it (the
            // bursts' texts are read from the source) — judged once the source has delivered every callback
            // it still had (a backlog behind a paused instance runs seconds behind): a change whose callback
            // is still on its way has not reached the bridge, which a production bridge, left running, meets.
            violations += await callbacksDelivered(lab, source: source.name, timeline: timeline)
            var converged = await poll(convergenceSeconds) { ((try? await problems()) ?? ["unreadable"]).isEmpty }
            timeline.note(converged ? "target holds the source's final state" : "target still differs after \(Int(convergenceSeconds)) s")
            if plan.restartAfterRetention && converged {
                violations += try await restartPastRetention(plan, bridges: bridges, users: users, log: log, timeline: timeline)
                violations += await callbacksDelivered(lab, source: source.name, timeline: timeline)
                converged = await poll(convergenceSeconds) { ((try? await problems()) ?? ["unreadable"]).isEmpty }
                timeline.note(converged ? "target holds the changes made after the restart" : "target still differs after \(Int(convergenceSeconds)) s")
            }
            // Late doubles (a retry of something already delivered) get a moment to show.
            try await Task.sleep(nanoseconds: 2_000_000_000)
            for instance in bridges {
                let stopped = await instance.terminate()
                if stopped != 0 {
                    violations.append(stopped.map { "the last bridge run ended with status \($0) on SIGTERM" } ?? "the last bridge run did not end within 30 s of SIGTERM")
                }
            }
            timeline.note("bridge stopped (SIGTERM)")

            let found = try await problems()
            violations += found
            // A portals run: exactly one target group per source group.
            violations += try await ChaosPortals.groupProblems(plan, lab: lab, names: portalNames.current())
            // The second oracle: `imbridge verify` on the same store and sandboxes; a disagreement is a finding.
            let oracle = try await verifyOracle(rig.config, lab: lab, checkerFound: found, target: target.vendor)
            timeline.note(oracle.summary)
            violations += oracle.disagreements
            let store = try BridgeStore(path: storePath)
            let (dead, inboundDead, pending) = try store.read { (try $0.deadLetters(limit: 20), try $0.inboundDeadLetters(limit: 20), try $0.count(state: .pending)) }
            let ended = Set(log.entries.filter(\.ended).map(\.id.rawValue))
            for entry in dead {
                let line = "dead letter \(entry.id) (\(entry.lane), \(entry.kind), \(entry.sourceEventID), \(entry.attempts) attempts): \(entry.lastError ?? "")"
                // A change to a message recalled or deleted on the source before the bridge relayed it (so never
                // relayed) waits, then becomes a dead letter, as docs/limits.md says; the final state is right.
                let never = entry.lastError.flatMap { $0.range(of: "has no counterpart") != nil ? $0 : nil }
                if let never, ended.contains(where: { never.contains("message \($0) on") }) {
                    notes.append(line + " (a change to a message ended on the source before it was relayed: docs/limits.md)")
                } else {
                    violations.append(line)
                }
            }
            for letter in inboundDead { violations.append("inbound dead letter \(letter.id) (\(letter.backend) \(letter.key)): \(letter.reason)") }
            violations += try Self.convergedStateProblems(store, source: source.name, target: target.name, entries: log.entries)
            if pending > 0 { notes.append("\(pending) outbox entries still pending at the end") }
        } catch {
            violations.append("the run could not be carried out: \(error)")
            for instance in bridges where instance.process?.isRunning == true { _ = await instance.terminate(seconds: 5) }
        }
        await rig.forwarder?.stop()

        violations += secretViolations(lab, logs: bridges.flatMap(\.logPaths))
        var kept: String?
        // `IMBRIDGE_CHAOS_KEEP=1`: a passing seed's lab directory is kept too (to see how a fault played out).
        if !violations.isEmpty || ProcessInfo.processInfo.environment["IMBRIDGE_CHAOS_KEEP"] == "1" {
            let directory = FileManager.default.temporaryDirectory.appendingPathComponent("imbridge-chaos-seed-\(plan.seed)-\(Int(Date().timeIntervalSince1970))").path
            try? FileManager.default.copyItem(atPath: lab.directory, toPath: directory)
            let carried = ["chaos \(plan)", "carried out:"] + timeline.lines.map { "  \($0)" } + ["violations:"] + violations.map { "  \($0)" }
            try? carried.joined(separator: "\n").write(toFile: "\(directory)/timeline.txt", atomically: true, encoding: .utf8)
            try? log.journalText.write(toFile: "\(directory)/journal.txt", atomically: true, encoding: .utf8)
            // What the target holds (with each copy's client id) and, on PostgreSQL, the store's rows: the
            // cluster is removed when the run ends.
            if let records = try? await lab.messages(target.name) {
                try? JSONValue.array(records).jsonString().write(toFile: "\(directory)/target-messages.json", atomically: true, encoding: .utf8)
            }
            if plan.postgres {
                for (name, sql) in [("outbox", "SELECT id, lane, source_event_id, kind, state, attempts, last_error, created_at, finished_at FROM outbox ORDER BY id"),
                                    ("ledger", "SELECT backend, event_id, kind, received_at, listener, instance FROM ledger ORDER BY received_at"),
                                    ("id_map", "SELECT * FROM id_map ORDER BY created_at"),
                                    ("checkpoints", "SELECT * FROM checkpoints ORDER BY name"),
                                    ("attempts", "SELECT * FROM attempts ORDER BY 1"),
                                    ("leases", "SELECT * FROM leases ORDER BY name"),
                                    ("expansion_keys", "SELECT * FROM expansion_keys ORDER BY backend, message, key")] {
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

    /// Waits (up to 60 s) until the source's sandbox has delivered (or given up on) every callback it has
    /// — queued, or on its way and being retried; a violation if it has not: callbacks the bridges do not
    /// take. JMessage is polled and sends none.
    static func callbacksDelivered(_ lab: BridgeLab, source: BackendID, timeline: Timeline) async -> [String] {
        guard let vendor = lab.sandboxes[source]?.vendor else { return [] }
        func idle(within ms: Int64) async -> Bool {
            if let wk = vendor as? WuKongSandbox { return await wk.notifier?.waitUntilIdle(timeoutMs: ms) ?? true }
            if let rc = vendor as? RongCloudSandbox { return await rc.waitForDeliveries(timeoutMs: ms) }
            if let nim = vendor as? NIMSandbox { return await nim.waitForCallbacks(timeoutMs: ms) }
            return true
        }
        func pending() async -> Int? {
            if let wk = vendor as? WuKongSandbox { return await wk.notifier?.currentStats.pending }
            if let rc = vendor as? RongCloudSandbox { return await rc.deliveryStats()?.pending }
            if let nim = vendor as? NIMSandbox { return await nim.deliveryStats()?.pending }
            return nil
        }
        if await idle(within: 0) { return [] }
        // A vendor delivers its callbacks in order and retries each before the next: an outage leaves a
        // backlog that drains at the vendor's pace (seed 229: 75 s behind). The wait goes on while it drains,
        // up to 5 minutes; a queue that stops moving for 60 s is a finding.
        var waited: Int64 = 0
        var before = await pending()
        while waited < 300_000 {
            if await idle(within: 60_000) {
                timeline.note("the source's callbacks all delivered")
                return []
            }
            waited += 60_000
            let now = await pending()
            let moved = now != nil && before != nil && now! < before!
            before = now
            if !moved { break }
        }
        timeline.note("the source still had callbacks to deliver after \(waited / 1000) s (\(before.map(String.init) ?? "?") pending)")
        return ["the source still had callbacks to deliver \(waited / 1000) s after the faults ended"]
    }

    /// Sends each group's texts in order, one every `spacingMs` (groups offset from each other), each
    /// followed by the changes and replies its script names (`ConversationScript`), and the flood group's
    /// back to back.
    /// A group of `new-groups` gets its texts from its moment on, one every `spacingMs`, after `appear`.
    static func sendWorkload(_ plan: ChaosPlan, users: any IMBackend, log: WorkLog,
                             appear: @escaping @Sendable (String) async throws -> Void = { _ in }) async throws {
        let start = Date()
        try await withThrowingTaskGroup(of: Void.self) { group in
            for (index, conversation) in plan.conversations.enumerated() {
                group.addTask {
                    let offset = plan.spacingMs * index / plan.conversations.count
                    for number in 2...(plan.perConversation + 1) {
                        let due = start.addingTimeInterval(Double(offset + (number - 2) * plan.spacingMs) / 1000)
                        let wait = due.timeIntervalSinceNow
                        if wait > 0 { try await Task.sleep(nanoseconds: UInt64(wait * 1_000_000_000)) }
                        try await ChaosChanges.send(number, in: conversation, plan: plan, users: users, log: log)
                        for change in plan.script[conversation]?.changes[number] ?? [] {
                            try await ChaosChanges.make(change, in: conversation, plan: plan, users: users, log: log)
                        }
                    }
                }
            }
            for newGroup in plan.newGroups {
                group.addTask {
                    for number in 1...newGroup.texts {
                        let wait = start.addingTimeInterval(Double(newGroup.atMs + (number - 1) * plan.spacingMs) / 1000).timeIntervalSinceNow
                        if wait > 0 { try await Task.sleep(nanoseconds: UInt64(wait * 1_000_000_000)) }
                        if number == 1 { try await appear(newGroup.name) }
                        try await ChaosChanges.send(number, in: newGroup.name, plan: plan, users: users, log: log)
                    }
                }
            }
            if plan.flood > 0 {
                group.addTask {
                    for number in 2...(plan.flood + 1) {
                        try await ChaosChanges.send(number, in: "flood", plan: plan, users: users, log: log)
                    }
                }
            }
            try await group.waitForAll()
        }
    }

    /// Text messages per conversation (the plan's names, `Side.conversation(ofGroup:in:)`), in the
    /// sandbox's order.
    static func texts(_ lab: BridgeLab, _ side: Side, _ plan: ChaosPlan, names: [String: String] = [:]) async throws -> [String: [String]] {
        var texts: [String: [String]] = [:]
        // A copy the bridge took back (a late double of a lane whose lease was taken over, recalled by the
        // lane: docs/high-availability.md) is not a delivery; were it the only copy, the text shows missing.
        for record in try await lab.messages(side.name) where record["kind"] == "text" && record["recalled"] != true {
            guard let id = record["conversation_id"]?.stringValue, let text = record["text"]?.stringValue else { continue }
            texts[names[id] ?? side.conversation(ofGroup: id, in: plan.allGroups), default: []].append(text)
        }
        return texts
    }

    /// The plan's groups on a NIM side, made before the run as an operator would (`POST /_sandbox/groups`):
    /// NIM refuses a team message into a team it does not have or from a non-member. On a NIM source the
    /// senders are in each team; on a NIM target their puppets (the routes' default `<source>_` prefix).
    static func seedGroups(_ plan: ChaosPlan, _ lab: BridgeLab) async throws {
        let people = [(plan.source, senders.map(\.rawValue)), (plan.target, senders.map { "\(plan.source.name)_\($0.rawValue)" })]
        // A portals run's target groups are the bridge's to set up.
        for (side, members) in people where side.groupID(plan.groups[0], of: plan.groups) != plan.groups[0] && !(plan.portals && side.name == plan.target.name) {
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
}
