import BridgeTestSupport
import Foundation
import IMCore
import IMHTTP
import IMLab
import IMStore

/// The fault kinds of the conversation workload (docs/reliability.md, "Fault kinds"): the source's
/// callbacks misbehaving, `imbridge verify --repair` and `imbridge migrate` beside the relaying bridge,
/// changes made while it is down, a restart past retention; and the final checks: the target's final
/// state (`ChaosFinalState`) and `imbridge verify` as a second oracle.
extension ChaosCampaign {
    static func runConversationFault(_ fault: Fault, _ parties: Parties) async throws -> [String] {
        let (plan, timeline) = (parties.plan, parties.timeline)
        var problems: [String] = []
        switch fault.kind {
        case .redeliver, .twice, .reorder:
            let key = fault.kind == .reorder ? "swap" : fault.kind.rawValue
            let answer = try await parties.http.send(.json(parties.lab.url(of: plan.source.name) + "/_sandbox/callbacks",
                                                           Data(#"{"\#(key)":\#(fault.count)}"#.utf8)))
            guard answer.status == 200 else { throw IMError(.unavailable, "POST /_sandbox/callbacks \(key): \(answer.status)") }
            timeline.note("source: next \(fault.count) callback batches " + ["redeliver": "delivered again after their success",
                                                                              "twice": "sent twice at once", "swap": "held behind the next"][key]!)
        case .lateCallbacks, .lateEchoes:
            let side = fault.kind == .lateEchoes ? plan.target : plan.source
            let request = OutboundRequest.json(parties.lab.url(of: side.name) + "/_sandbox/callbacks",
                                               Data(#"{"delay":\#(fault.count),"delay_ms":\#(fault.durationMs)}"#.utf8))
            // The target may be refusing connections (`refused`, its whole port): the lab's call waits for it.
            var attempt = 0
            var reply = try? await parties.http.send(request)
            while reply == nil, attempt < 100 {
                attempt += 1
                try await Task.sleep(nanoseconds: 100_000_000)
                reply = try? await parties.http.send(request)
            }
            let answer = try reply.orThrow("POST /_sandbox/callbacks delay: the \(side.name) sandbox did not answer for 10 s")
            guard answer.status == 200 else { throw IMError(.unavailable, "POST /_sandbox/callbacks delay: \(answer.status)") }
            timeline.note("\(fault.kind == .lateEchoes ? "target" : "source"): next \(fault.count) callback batches each held back \(fault.durationMs) ms")
            if fault.kind == .lateEchoes {
                let made = try await ChaosChanges.burst(plan: plan, spacingMs: fault.latencyMs, users: parties.users, log: parties.log)
                timeline.note("\(made) changes of one key of text 1, \(fault.latencyMs) ms apart in each group, on the source")
            }
        case .verifyRepair:
            timeline.note("verify --repair --settle \(fault.count) begins")
            let run = try await verify(parties.config, parties.lab, ["--repair", "--repair-timeout", "30", "--settle", "\(fault.count)"])
            timeline.note("verify --repair ended: status \(run.status), \(run.summary)")
            parties.log.repairedLate.withLock { $0.formUnion(run.repairedLate) }
            // 2: a conversation could not be read (the target refusing, the store full): what an operator meets
            // beside those faults, not a break; anything else is.
            if ![0, 1, 2].contains(run.status) {
                problems.append("verify --repair beside the bridge ended with status \(run.status): \(run.output.suffix(600))")
            }
        case .migrate:
            let groups = plan.groups.flatMap { conversation in
                ["--conversation", "group:\(plan.source.groupID(conversation, of: plan.groups))=group:\(plan.target.groupID(conversation, of: plan.groups))"]
            }
            // A run that fails (the store full, the target refusing) is run again, as an operator would: the
            // rerun continues where it stopped (docs/migration.md); the third failure is a violation. A run
            // the PostgreSQL outage (`postgres-down`) overlapped fails clearly (`cannot open store`) and is not
            // counted: the operator waits for the store and runs it again.
            let outages = plan.faults.filter { $0.kind == .postgresDown }.count
            var failures = 0
            for attempt in 1...(3 + outages) {
                let (wasDown, raised) = (parties.storeDown.withLock { $0 }, parties.storeDown.raised)
                timeline.note("migrate --history-only of \(plan.groups.count) groups begins" + (attempt > 1 ? " again" : ""))
                let (status, output) = try await IMBridgeCLI.run(["migrate", "--config", parties.config, "--from", plan.source.name.rawValue,
                                                                 "--to", plan.target.name.rawValue, "--history-only",
                                                                 "--user-prefix", "\(plan.source.name)_"] + groups, timeoutSeconds: 300)
                // Kept beside the bridges' logs (a failing seed's lab directory), at their level.
                try? output.write(toFile: "\(parties.lab.directory)/migrate-\(fault.atMs)-\(attempt).log", atomically: true, encoding: .utf8)
                let last = output.split(separator: "\n").filter { !$0.contains(" debug ") && !$0.contains(" trace ") }.suffix(2)
                    .joined(separator: " | ")
                timeline.note("migrate ended: status \(status): \(last.prefix(240))")
                if status == 0 { break }
                let overlapped = wasDown || parties.storeDown.raised != raised || parties.storeDown.withLock { $0 }
                if !overlapped { failures += 1 }
                if failures == 3 || attempt == 3 + outages {
                    problems.append("migrate beside the bridge ended with status \(status) \(failures) times"
                                    + " (and \(attempt - failures) times beside a store outage): \(output.suffix(800))")
                    break
                }
                while parties.storeDown.withLock({ $0 }) { try await Task.sleep(nanoseconds: 200_000_000) }
                try await Task.sleep(nanoseconds: 3_000_000_000)
            }
        case .changesWhileDown:
            let bridge = parties.bridge
            let began = Date()
            let status = await bridge.terminate()
            timeline.note("SIGTERM bridge run \(bridge.runs): " + (status.map { "exit \($0)" } ?? "did not end within 30 s, SIGKILLed"))
            if status != 0 { problems.append("bridge run \(bridge.runs) on SIGTERM: " + (status.map { "exit status \($0)" } ?? "did not end within 30 s")) }
            let index = plan.faults.filter { $0.kind == .changesWhileDown }.firstIndex { $0.atMs == fault.atMs } ?? 0
            let made = try await ChaosChanges.whileDown(index, plan: plan, users: parties.users, log: parties.log)
            timeline.note("\(made) changes to old messages made on the source while the bridge is down")
            let rest = Double(fault.durationMs) / 1000 - Date().timeIntervalSince(began)
            if rest > 0 { try await Task.sleep(nanoseconds: UInt64(rest * 1_000_000_000)) }
            try await bridge.start()
            timeline.note("bridge run \(bridge.runs) up")
        default: break
        }
        return problems
    }

    /// `restart-after-retention`: waits past retention, restarts every instance (the start prunes the
    /// ledger), then makes one more change per group.
    static func restartPastRetention(_ plan: ChaosPlan, bridges: [ChaosBridge], users: any IMBackend, log: WorkLog,
                                     timeline: Timeline) async throws -> [String] {
        var problems: [String] = []
        try await Task.sleep(nanoseconds: UInt64(ChaosPlan.retentionSeconds + 2) * 1_000_000_000)
        for instance in bridges {
            let status = await instance.terminate()
            if status != 0 { problems.append("the run before the restart past retention ended with status \(status.map(String.init) ?? "none") on SIGTERM") }
        }
        for instance in bridges { try await instance.start() }
        let bridge = bridges[0]
        let pruned = await poll(30) {
            guard let metrics = try? await HTTPClientWrapper().send(OutboundRequest(method: "GET", url: bridge.rig.baseURL(bridge.instance) + "/metrics")) else { return false }
            return String(decoding: metrics.body, as: UTF8.self).split(separator: "\n").contains { $0.hasPrefix(#"imbridge_pruned_total{table="ledger"}"#) }
        }
        timeline.note("restarted \(retentionSecondsText) after the last change" + (pruned ? "; ledger rows pruned" : "; no ledger row pruned (seen in /metrics)"))
        try await ChaosChanges.afterRetention(plan: plan, users: users, log: log)
        timeline.note("one more change per group made")
        return problems
    }

    static var retentionSecondsText: String { "past retention (\(ChaosPlan.retentionSeconds) s)" }

    /// Every problem of the target's final state, per relayed group (`ChaosFinalState.check`); the source's
    /// order is read from the source sandbox (a burst's texts are there only).
    /// `names`: a portals run's target groups → their conversations (`ChaosPortals.Names`).
    static func finalStateProblems(_ plan: ChaosPlan, lab: BridgeLab, log: WorkLog, names: [String: String] = [:]) async throws -> [String] {
        let entries = log.entries
        var byID: [String: WorkLog.Entry] = [:]
        for entry in entries { byID[entry.id.rawValue] = entry }
        let prefix = "s\(plan.seed)-"
        var sourceOrder: [String: [String]] = [:]
        for record in try await lab.messages(plan.source.name) where record["kind"] != "command" {
            guard let group = record["conversation_id"]?.stringValue,
                  let id = record["id"]?.stringValue ?? record["id"]?.int64Value.map(String.init) else { continue }
            let conversation = plan.source.conversation(ofGroup: group, in: plan.allGroups)
            if let entry = byID[id] {
                if !entry.deleted { sourceOrder[conversation, default: []].append(entry.original) }
            } else if let text = record["text"]?.stringValue, text.hasPrefix(prefix), record["recalled"] != true {
                sourceOrder[conversation, default: []].append(text)   // a burst's
            }
        }
        let target = try await lab.messages(plan.target.name).compactMap {
            ChaosFinalState.Record($0, conversationOf: { names[$0] ?? plan.target.conversation(ofGroup: $0, in: plan.allGroups) })
        }
        let traits = ChaosFinalState.TargetTraits.of(plan.target.vendor)
        let fed = plan.source.vendor == "wukong" ? try await editsFed(lab.url(of: plan.source.name)) : nil
        let reactionsFed = plan.source.vendor == "wukong" ? try await reactionsFed(lab.url(of: plan.source.name)) : nil
        let repaired = Set(log.repairedLate.withLock { $0 }.compactMap { byID[$0]?.original })
        return plan.allGroups.flatMap { conversation in
            ChaosFinalState.check(conversation: conversation, sourceOrder: sourceOrder[conversation] ?? [],
                                  entries: entries.filter { $0.conversation == conversation },
                                  target: target.filter { $0.conversation == conversation }, traits: traits, fed: fed,
                                  reactionsFed: reactionsFed, repairedLate: repaired)
        }
    }

    /// The store's converged expansion state against the source's final one (a third look, beside the
    /// target's state and `verify`): the workload changes keys on the source only, so every key the store
    /// holds a decided state for on a source message or its copy is the source's last value (nil: removed). A wrong
    /// converged state the target does not show yet is written there by the next write of the key — a
    /// migration's or a repair's (seed 946: an echo taken for a change of the copy).
    static func convergedStateProblems(_ store: BridgeStore, source: BackendID, target: BackendID, entries: [WorkLog.Entry]) throws -> [String] {
        var problems: [String] = []
        for entry in entries where !entry.ended {
            let (mine, copy) = try store.read { tx in
                let copy = try tx.mapped(entry.id, from: source, to: target)
                return (try tx.expansionKeys(of: entry.id, on: source), try copy.map { try tx.expansionKeys(of: $0.toMessage, on: target) } ?? [:])
            }
            for (side, records) in [("source's", mine), ("copy's", copy)] {
                for (key, record) in records.sorted(by: { $0.key < $1.key }) where record.isDecided && record.value != entry.expansion[key] {
                    problems.append("CONVERGED STATE \(entry.conversation) \(entry.original): the store's record of the \(side) \(key) is "
                                    + "\(record.value ?? "(removed)") from \(record.origin) at \(record.version); the source holds \(entry.expansion[key] ?? "(removed)")")
                }
            }
        }
        return problems
    }

    /// The edited texts a WuKong source's extras feed served, by message id: reads of fewer than 10,000
    /// rows, as the adapter's feed reads are (docs/adapters/wukong.md, "Changes while the bridge is
    /// down"); a history page's full read (10,000) fills a copy's current text and makes no event.
    static func editsFed(_ baseURL: String) async throws -> [String: Set<String>] {
        let answer = try await HTTPClientWrapper().send(OutboundRequest(method: "GET", url: baseURL + "/_sandbox/extras-served"))
        guard answer.status == 200 else { throw IMError(.unavailable, "GET /_sandbox/extras-served: \(answer.status)") }
        var fed: [String: Set<String>] = [:]
        for row in try JSONValue.parse(Data(answer.body))["served"]?.arrayValue ?? [] {
            guard let id = row["message_id"]?.stringValue, let text = row["text"]?.stringValue,
                  let limit = row["limit"]?.int64Value, limit < 10_000 else { continue }
            fed[id, default: []].insert(text)
        }
        return fed
    }

    /// The reaction toggles a WuKong source's feed reads served, as `message|user|emoji|n` (the row's n-th
    /// toggle; `GET /_sandbox/reactions-served`).
    static func reactionsFed(_ baseURL: String) async throws -> Set<String> {
        let answer = try await HTTPClientWrapper().send(OutboundRequest(method: "GET", url: baseURL + "/_sandbox/reactions-served"))
        guard answer.status == 200 else { throw IMError(.unavailable, "GET /_sandbox/reactions-served: \(answer.status)") }
        var fed: Set<String> = []
        for row in try JSONValue.parse(Data(answer.body))["served"]?.arrayValue ?? [] {
            guard let id = row["message_id"]?.stringValue, let uid = row["uid"]?.stringValue, let emoji = row["emoji"]?.stringValue,
                  let n = row["toggle"]?.int64Value else { continue }
            fed.insert("\(id)|\(uid)|\(emoji)|\(n)")
        }
        return fed
    }

    /// One `imbridge verify` run: its status, output, drift counts and a sample of its items.
    struct VerifyRun {
        var status: Int32
        var output: String
        var counts: [String: Int]
        var items: [String]
        /// Source messages whose missing copy this run sent (`--repair`).
        var repairedLate: Set<String> = []
        var summary: String {
            counts.isEmpty ? "no drift" : "drift " + counts.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", ")
        }
    }

    static func verify(_ config: String, _ lab: BridgeLab, _ arguments: [String]) async throws -> VerifyRun {
        let path = "\(lab.directory)/verify-\(UUID().uuidString).json"
        let (status, output) = try await IMBridgeCLI.run(["verify", "--config", config, "--report", path] + arguments, timeoutSeconds: 300)
        try? output.write(toFile: String(path.dropLast(5)) + ".log", atomically: true, encoding: .utf8)
        let report = (try? JSONValue.parse(Data(contentsOf: URL(fileURLWithPath: path)))) ?? .null
        var counts: [String: Int] = [:]
        if case .object(let values)? = report["counts"] {
            for (kind, count) in values { if let count = count.int64Value, count > 0 { counts[kind] = Int(count) } }
        }
        var items: [String] = []
        var repairedLate: Set<String> = []
        for conversation in report["conversations"]?.arrayValue ?? [] {
            for item in conversation["items"]?.arrayValue ?? [] {
                if item["kind"]?.stringValue == "missing", item["repair"]?.stringValue?.hasPrefix("repaired: sent as") == true,
                   let source = item["source_message"]?.stringValue {
                    repairedLate.insert(source)
                }
                items.append("\(conversation["source"]?.stringValue ?? "?"): \(item["kind"]?.stringValue ?? "?") "
                             + "\(item["source_message"]?.stringValue ?? "-") → \(item["target_message"]?.stringValue ?? "-") \(item["detail"]?.stringValue ?? "")")
            }
        }
        return VerifyRun(status: status, output: output, counts: counts, items: items, repairedLate: repairedLate)
    }

    /// `imbridge verify --settle 0` once the bridge has stopped, held against what the checker found
    /// (`checkerFound`), kind by kind: verify's `missing`, `doubled`, `out_of_order`, `expansion`, `recall`
    /// and `content` against the checker's LOST, DOUBLED, ORDER and final-state lines. A kind one oracle
    /// reports and the other does not is a finding. Verify compares no notices, and no carriers and no
    /// recall on a NIM target (`traits`): a final-state problem of those alone is not expected of it. (A
    /// NIM *source*'s carriers it does compare, against the copies' native values.)
    static func verifyOracle(_ config: String, lab: BridgeLab, checkerFound: [String], target: String) async throws -> (summary: String, disagreements: [String]) {
        let run = try await verify(config, lab, ["--settle", "0"])
        let summary = "verify (second oracle): status \(run.status), \(run.summary)" + (run.items.isEmpty ? "" : ": " + run.items.prefix(6).joined(separator: "; "))
        guard run.status == 0 || run.status == 1 else {
            return (summary, ["verify (second oracle) ended with status \(run.status): \(run.output.suffix(600))"])
        }
        return (summary, disagreements(counts: run.counts, sample: run.items, checkerFound: checkerFound, target: target))
    }

    /// The kinds on which the two oracles disagree (`verifyOracle`); plain values, tested on their own.
    static func disagreements(counts: [String: Int], sample: [String], checkerFound: [String], target: String) -> [String] {
        let nim = target == "nim"
        // verify's kind → (the checker's mark, whether verify compares it on this target)
        let pairs: [(String, String, Bool)] = [("missing", "LOST", true), ("doubled", "DOUBLED", true), ("out_of_order", "ORDER broken", true),
                                               ("expansion", ": expansion on the target", !nim), ("recall", "on the source,", !nim),
                                               ("content", ": the copy shows", true)]
        var found: [String] = []
        for (kind, mark, compared) in pairs {
            let byVerify = counts[kind] ?? 0
            let byChecker = checkerFound.filter { $0.contains(mark) }.count
            if byVerify > 0 && byChecker == 0 {
                let items = sample.filter { $0.contains(": \(kind) ") }.prefix(3).joined(separator: "; ")
                found.append("ORACLES DISAGREE: verify reports \(byVerify) \(kind), the checker none: \(items)")
            } else if byChecker > 0 && byVerify == 0 && compared {
                found.append("ORACLES DISAGREE: the checker found \(byChecker) \(mark.trimmingCharacters(in: CharacterSet(charactersIn: ":, ")))"
                             + " problems, verify no \(kind)")
            }
        }
        return found
    }
}
