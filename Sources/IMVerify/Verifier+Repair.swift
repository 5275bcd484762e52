import Foundation
import IMCore
import IMStore
import IMRelay
import IMOutbox

/// `imbridge verify --repair` (docs/verify.md, "Repair"): the fixes go through the outbox, the one
/// delivery path — never straight to a target.
///
/// - Each item's actions are queued in its target conversation's lane, in one transaction: a missing
///   copy as the relay's `.send` (it lands after newer messages: targets keep the order they store), a
///   double taken back with `.retract` (which never takes back the copy the id map names), a recall or
///   an edit re-applied with `.recall` / `.edit`, expansion values with `.expansion` after the store is
///   told that the copy does not hold them (so the convergence writes them), a copy whose content differs
///   on a target that cannot edit recalled and sent again. Items with no fix are listed, not queued.
/// - The entries run like every other: this process works their lanes as a guest
///   (`RelayEngine.start(lanes:)`) beside a bridge that may be running on the same store — whoever
///   holds a lane's lease runs it — and `repair` waits until they are done or dead, at most `timeoutMs`
///   (what is not done by then stays queued and is said so).
/// - Afterwards the store remembers copies sent late (`verify/late/…`: not out of order) and copies
///   taken back (`verify/recalled/…`: for targets whose history does not show recalls, JMessage).
extension Verifier {
    public func repair(_ report: inout VerifyReport, retry: RetryPolicy = RetryPolicy(), timeoutMs: Int64 = 300_000) async throws {
        report.repaired = true
        struct Queued {
            var conversation: Int
            var item: Int
            var ids: [Int64]
        }
        /// One item's entries, and the check its `.send` waits on (Verifier+Settle.swift).
        struct Fix: Sendable {
            var conversation: Int
            var item: Int
            var entries: [(payload: OutboxPayload, lane: LaneKey, source: BackendID, eventID: EventID)]
            var guarded: VerifyReport.Item.Guard?
        }
        var fixes: [Fix] = []
        var resets: [(copy: MessageID, target: BackendID, keys: [String])] = []
        for (c, conversation) in report.conversations.enumerated() {
            guard let pair = conversation.pair else { continue }
            let lane = pair.lane
            for (i, item) in conversation.items.enumerated() {
                guard !item.fix.isEmpty else {
                    report.conversations[c].items[i].repair = "not repairable: \(item.unfixable ?? "no fix")"
                    continue
                }
                var fix = Fix(conversation: c, item: i, entries: [], guarded: item.guarded)
                for action in item.fix {
                    var payload = OutboxPayload(action: action, route: pair.leg.route, eventTimeMs: clock.nowMs(),
                                                sourceConversation: pair.conversation)
                    // Checked again when it runs: the bridge may copy the message between the guard and then.
                    if item.guarded != nil, case .send = action { payload.firstCopyOnly = true }
                    fix.entries.append((payload, lane, pair.source, EventID("verify:\(report.startedAtMs):\(item.kind.rawValue):\(item.sourceMessage)")))
                    if case .expansion(_, _, let delta) = action, let copy = item.targetMessage {
                        resets.append((MessageID(copy), pair.leg.target, Array(delta.set.keys) + delta.removed))
                    }
                }
                fixes.append(fix)
            }
        }
        guard !fixes.isEmpty else { return }
        let now = clock.nowMs()
        let (draft, kept, ids) = try await store.groupedTransaction { [fixes, resets] tx in
            // What verify read: the copy does not hold these keys as the store believed.
            try tx.lockExpansionKeys(of: resets.map { ($0.copy, $0.target) })
            for reset in resets {
                let known = try tx.expansionKeys(of: reset.copy, on: reset.target)
                let records = reset.keys.map { key -> ExpansionKeyRecord in
                    var record = known[key] ?? ExpansionKeyRecord(key: key)
                    record.held = .unknown
                    return record
                }
                try tx.putExpansionKeys(records, of: reset.copy, on: reset.target)
            }
            // A missing copy is sent only when the bridge has not taken the message in meanwhile.
            var draft = OutboxDraft()
            var kept: [Int] = []
            for (n, fix) in fixes.enumerated() {
                if let guarded = fix.guarded, try !Self.repairGuardHolds(guarded, tx, at: now) { continue }
                for entry in fix.entries { try draft.add(entry.payload, lane: entry.lane, source: entry.source, eventID: entry.eventID) }
                kept.append(n)
            }
            return (draft, kept, try draft.write(tx, at: now))
        }
        var owners: [(conversation: Int, item: Int, count: Int)] = []
        for (n, fix) in fixes.enumerated() {
            guard kept.contains(n) else {
                report.conversations[fix.conversation].items[fix.item].repair = "not needed: the bridge relayed or queued it meanwhile"
                continue
            }
            owners.append((fix.conversation, fix.item, fix.entries.count))
        }
        guard !draft.isEmpty else { return }
        var queued: [Queued] = []
        var next = 0
        for owner in owners {
            queued.append(Queued(conversation: owner.conversation, item: owner.item, ids: Array(ids[next..<next + owner.count])))
            report.conversations[owner.conversation].items[owner.item].repair = "queued"
            next += owner.count
        }
        let entries = draft.entries
        let lanes = draft.lanes
        let engine = RelayEngine(store: store, backends: Array(backends.values), routes: routes.routes, clock: clock, retry: retry,
                                 retentionMs: nil, customFallbacks: customFallbacks)
        await engine.start(lanes: lanes)
        let last = Dictionary(zip(entries.map(\.lane), ids).map { ($0.0, $0.1) }, uniquingKeysWith: max)
        let deadline = clock.nowMs() + timeoutMs
        while clock.nowMs() < deadline {
            let open = try await store.reading { tx in try last.filter { lane, id in (try tx.head(of: lane)).map { $0.id <= id } ?? false } }
            if open.isEmpty { break }
            try await Task.sleep(nanoseconds: 50_000_000)
        }
        _ = await engine.stop()
        try settle(queued.map { ($0.conversation, $0.item, $0.ids) }, in: &report, timeoutMs: timeoutMs)
    }

    /// The copy a `firstCopyOnly` send found made when it ran (and so did not send); nil when it sent.
    func skippedSend(_ id: Int64) throws -> String? {
        try store.read { try $0.checkpoint("\(OutboxPayload.skippedFirstCopyPrefix)\(id)") }
    }

    /// Says what became of each item's entries, and remembers the copies sent late and taken back.
    func settle(_ queued: [(conversation: Int, item: Int, ids: [Int64])], in report: inout VerifyReport, timeoutMs: Int64) throws {
        let all = try store.read { try $0.entries(ids: queued.flatMap(\.ids)) }
        let byID = Dictionary(all.map { ($0.id, $0) }, uniquingKeysWith: { first, _ in first })
        var marks: [(String, String)] = []
        for (c, i, ids) in queued {
            let item = report.conversations[c].items[i]
            guard let pair = report.conversations[c].pair else { continue }
            let states = ids.map { byID[$0] }
            if let dead = states.first(where: { $0?.state == .dead }) {
                report.conversations[c].items[i].repair = "failed: \(dead?.lastError ?? "dead letter") (see imbridge deadletters)"
                continue
            }
            guard states.allSatisfy({ $0?.state == .done }) else {
                report.conversations[c].items[i].repair = "queued (not carried out within \(timeoutMs / 1000) s; the outbox keeps it)"
                continue
            }
            let target = pair.leg.target.rawValue
            let sendAt = item.fix.firstIndex { if case .send = $0 { return true } else { return false } }
            let recallAt = item.fix.firstIndex { if case .recall = $0 { return true } else { return false } }
            let retracts = item.fix.contains { if case .retract = $0 { return true } else { return false } }
            var note = "repaired"
            if let sendAt, let skipped = try skippedSend(ids[sendAt]) {
                // The bridge copied it after the guard, in order: nothing late to remember.
                report.conversations[c].items[i].repair = "not needed: the bridge relayed it meanwhile as \(skipped)"
                continue
            }
            if let sendAt {
                let copy = try store.read { try $0.mapped(MessageID(item.sourceMessage), from: pair.source, to: pair.leg.target) }?.toMessage
                if let copy {
                    marks.append(("\(Self.latePrefix)\(target)/\(copy)", item.sourceMessage))
                    note = "repaired: sent as \(copy), after newer messages"
                    if let recallAt, recallAt > sendAt { marks.append(("\(Self.recalledPrefix)\(target)/\(copy)", item.sourceMessage)) }
                }
                if let recallAt, recallAt < sendAt, let old = item.targetMessage {
                    marks.append(("\(Self.recalledPrefix)\(target)/\(old)", item.sourceMessage))
                }
            } else if retracts || recallAt != nil, let old = item.targetMessage {
                marks.append(("\(Self.recalledPrefix)\(target)/\(old)", item.sourceMessage))
            }
            report.conversations[c].items[i].repair = note
        }
        guard !marks.isEmpty else { return }
        let now = clock.nowMs()
        try store.transaction { tx in for (name, value) in marks { try tx.setCheckpoint(name, value, at: now) } }
    }
}
