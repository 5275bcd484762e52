import BridgeTestSupport
import Foundation
import IMCore
import IMHTTP
import IMLab
import IMSandbox
import PostgresTestSupport

extension ChaosCampaign {
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
        var lab: BridgeLab
        /// The first instance's configuration (what `verify` and `migrate` are given).
        var config: String
        var log: WorkLog
    }

    /// Carries out the schedule; returns violations seen while doing so (a restart that never came up).
    static func inject(_ plan: ChaosPlan, _ parties: Parties) async -> [String] {
        // The parties (`FaultKind.party`: the bridge's side, the target's, the cluster's …) run side by side,
        // each party's faults in order. A scheduled fault of no party is a violation, never a silent no-op.
        let byParty = Dictionary(grouping: plan.faults) { $0.kind.party ?? "" }
        if let orphans = byParty[""] {
            return ["faults scheduled that no party carries out: \(orphans.map(\.kind.rawValue))"]
        }
        return await withTaskGroup(of: [String].self) { group in
            for faults in byParty.values { group.addTask { await runFaults(faults, parties) } }
            var problems: [String] = []
            for await found in group { problems += found }
            return problems
        }
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
                case .flood, .clockSkew, .restartAfterRetention, .newGroups: break
                case .redeliver, .twice, .reorder, .verifyRepair, .migrate, .changesWhileDown, .lateCallbacks, .lateEchoes:
                    problems += try await runConversationFault(fault, parties)
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
                case .editRefused:
                    // Armed in the sandbox's injector itself, not over HTTP: the target may be refusing connections now.
                    target.faults.add(FaultInjector.Rule(status: fault.status, count: fault.count, pathPrefix: fault.pathPrefix,
                                                         retryAfter: fault.status == 429 ? 1 : nil, bodyContains: fault.bodyContains))
                    timeline.note("target: next \(fault.count) requests carrying an edit"
                                  + (fault.pathPrefix.map { " (to \($0))" } ?? fault.bodyContains.map { " (body holding \"\($0)\")" } ?? "")
                                  + " answered \(fault.status)")
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

}
