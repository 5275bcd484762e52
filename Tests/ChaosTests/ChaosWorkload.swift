import Foundation
import IMCore
import Synchronization

/// What the workload did to each message it sent, as it did it: the source's final state by the
/// workload's own account, which the checker holds the target to (`ChaosFinalState`).
final class WorkLog: Sendable {
    struct Entry: Sendable {
        var conversation: String
        var number: Int
        var original: String
        var id: MessageID
        var sender: UserID
        /// The texts of the edits, in order (the current text is the last).
        var edits: [String] = []
        var recalled = false
        var deleted = false
        var expansion: [String: String] = [:]
        /// The notices the target shows for the reactions where it has none (`👍 +1`, `👍 −1`), in order.
        var reactionNotices: [String] = []
        /// Each notice's reaction row, `user|emoji` (the business server keeps one row per message, user and emoji).
        var reactionRows: [String] = []
        /// Users holding each emoji.
        var reactions: [String: Set<String>] = [:]

        /// Every text a copy may show: the original, or a later edit (a copy sent after an edit —
        /// by `verify --repair` or `migrate` — carries the current text).
        var versions: [String] { [original] + edits }
        var ended: Bool { recalled || deleted }
    }

    private let state = Mutex<[String: Entry]>([:])

    static func key(_ conversation: String, _ number: Int) -> String { "\(conversation)#\(number)" }

    func record(_ entry: Entry) {
        state.withLock { $0[Self.key(entry.conversation, entry.number)] = entry }
        journal("sent \(entry.original) (\(entry.id))")
    }

    func entry(_ conversation: String, _ number: Int) -> Entry? { state.withLock { $0[Self.key(conversation, number)] } }

    func update(_ conversation: String, _ number: Int, _ change: (inout Entry) -> Void) {
        state.withLock { entries in
            let key = Self.key(conversation, number)
            guard var entry = entries[key] else { return }
            change(&entry)
            entries[key] = entry
        }
    }

    /// Every entry, by conversation and number.
    var entries: [Entry] { state.withLock { $0.values.sorted { ($0.conversation, $0.number) < ($1.conversation, $1.number) } } }

    /// Changes carried out, by kind.
    let carried = Mutex<[ChangeKind: Int]>([:])

    /// Source message ids `verify --repair` sent a missing copy of: such a copy lands after newer messages
    /// (docs/verify.md), so the checker judges its count, not its place.
    let repairedLate = Mutex<Set<String>>([])

    /// Each change with its wall-clock time (epoch ms) and the source's message id: kept with a failing
    /// seed's logs (`journal.txt`), to line them up with the bridge's logs and the store's rows.
    private let lines = Mutex<[String]>([])
    func journal(_ line: String) {
        let now = Int64(Date().timeIntervalSince1970 * 1000)
        lines.withLock { $0.append("\(now) \(line)") }
    }
    var journalText: String { lines.withLock { $0.joined(separator: "\n") } }

    /// One change of a message at a time (`ChaosChanges.make`). Two of the workload's writers can change
    /// one message at once (a burst of one key of text 1 while the changes-while-down fault changes old
    /// messages). An app's expansion change on WuKong reads the whole `extra` dictionary and writes it back
    /// (docs/adapters/wukong.md), so the later write put back a key the other had just removed. The source
    /// then held something else than this log's account, which the checker holds the target to, and the
    /// bridge's faithful copy of the source was reported as wrong (seed 82, docs/reliability.md).
    let turns = MessageTurns()
}

/// Turns per key: `begin` waits until no one holds the key, `end` hands it to the next waiter.
actor MessageTurns {
    private var busy: Set<String> = []
    private var waiting: [String: [CheckedContinuation<Void, Never>]] = [:]

    func begin(_ key: String) async {
        guard busy.contains(key) else {
            busy.insert(key)
            return
        }
        await withCheckedContinuation { waiting[key, default: []].append($0) }   // handed over by `end`
    }

    func end(_ key: String) {
        guard var queue = waiting[key], !queue.isEmpty else {
            busy.remove(key)
            return
        }
        let next = queue.removeFirst()
        waiting[key] = queue.isEmpty ? nil : queue
        next.resume()
    }
}

/// The workload's changes, carried out through the source's users' backend (`IMBackend` and its opt-in
/// protocols, as an app would).
enum ChaosChanges {
    /// Makes `change` to text `change.target` of `conversation` and records it in `log`.
    static func make(_ change: Change, in conversation: String, plan: ChaosPlan, users: any IMBackend, log: WorkLog) async throws {
        let turn = WorkLog.key(conversation, change.target)
        await log.turns.begin(turn)
        do {
            try await apply(change, in: conversation, plan: plan, users: users, log: log)
        } catch {
            await log.turns.end(turn)
            throw error
        }
        await log.turns.end(turn)
    }

    private static func apply(_ change: Change, in conversation: String, plan: ChaosPlan, users: any IMBackend, log: WorkLog) async throws {
        guard let entry = log.entry(conversation, change.target), !entry.ended else { return }
        log.journal("\(change.kind) of \(entry.original) (\(entry.id)) begins")
        defer { log.journal("\(change.kind) of \(entry.original) (\(entry.id)) ended") }
        let ref = plan.sourceGroup(conversation)
        let other: UserID = entry.sender == ChaosCampaign.senders[0] ? ChaosCampaign.senders[1] : ChaosCampaign.senders[0]
        switch change.kind {
        case .edit:
            let text = "\(entry.original)-e\(entry.edits.count + 1)"
            try await capability(users, (any Editing).self).edit(entry.id, in: ref, by: entry.sender, content: .text(text))
            log.update(conversation, change.target) { $0.edits.append(text) }
        case .recall:
            try await capability(users, (any Recalling).self).recall(entry.id, in: ref, by: entry.sender)
            log.update(conversation, change.target) { $0.recalled = true }
        case .delete:
            try await capability(users, (any Deleting).self).delete(entry.id, in: ref, by: entry.sender, forUser: nil)
            log.update(conversation, change.target) { $0.deleted = true }
        case .expand:
            if let carrier = users as? any ExpansionChangeSending, !(users is any ExpansionUpdating) {
                let delta = change.value.map { ExpansionDelta(version: Int64(Date().timeIntervalSince1970 * 1000), set: [change.key: $0]) }
                    ?? ExpansionDelta(version: Int64(Date().timeIntervalSince1970 * 1000), removed: [change.key])
                try await carrier.sendExpansionChange(delta, of: entry.id, in: ref, by: other)
            } else {
                let expanding = try capability(users, (any ExpansionUpdating).self)
                _ = try await expanding.updateExpansion(of: entry.id, in: ref, by: other,
                                                        change.value.map { .set([change.key: $0]) } ?? .remove([change.key]))
            }
            log.update(conversation, change.target) { entry in
                if let value = change.value { entry.expansion[change.key] = value } else { entry.expansion[change.key] = nil }
            }
        case .react:
            let user = change.bySecond ? other : entry.sender
            let added = try await capability(users, (any Reacting).self).toggleReaction(change.emoji, on: entry.id, in: ref, by: user)
            log.update(conversation, change.target) { entry in
                if added { entry.reactions[change.emoji, default: []].insert(user.rawValue) } else { entry.reactions[change.emoji]?.remove(user.rawValue) }
                entry.reactionNotices.append(added ? "\(change.emoji) +1" : "\(change.emoji) −1")
                entry.reactionRows.append("\(user.rawValue)|\(change.emoji)")
            }
        }
        log.carried.withLock { $0[change.kind, default: 0] += 1 }
    }

    static func capability<T>(_ users: any IMBackend, _ type: T.Type) throws -> T {
        guard let found = users as? T else { throw IMError(.unsupported, "the source's backend has no \(type)") }
        return found
    }

    /// Sends text `number` of `conversation` (with its reply and expansion as the script says) and records it.
    static func send(_ number: Int, in conversation: String, plan: ChaosPlan, users: any IMBackend, log: WorkLog) async throws {
        let script = plan.script[conversation] ?? ConversationScript()
        let text = ChaosCampaign.text(plan.seed, conversation, number)
        let sender = ChaosCampaign.senders[number % ChaosCampaign.senders.count]
        var reply: ReplyRef?
        if let quoted = script.replies[number], let entry = log.entry(conversation, quoted) {
            reply = ReplyRef(messageID: entry.id, sender: entry.sender, digest: entry.original)
        }
        // RongCloud extends only messages sent with an expansion (docs/expansions.md), and so does the WuKong
        // adapter (docs/adapters/wukong.md, "Expansion"); NIM's carriers may name any message.
        let expansion: [String: String]? = ["rongcloud", "wukong"].contains(plan.source.vendor) && script.extensible.contains(number) ? ["n": "\(number)"] : nil
        let sent = try await users.send(OutgoingMessage(conversation: plan.sourceGroup(conversation), sender: sender, content: .text(text),
                                                        reply: reply, expansion: expansion))
        log.record(WorkLog.Entry(conversation: conversation, number: number, original: text, id: sent.id, sender: sender,
                                 expansion: expansion ?? [:]))
    }

    /// `changes-while-down` number `index` (from 0): in every paced group, an expansion change to text 1
    /// (`down` → the index), on WuKong an edit of text 1 as well, and from the first one the recall of text
    /// 2 (on RongCloud its deletion) and, where text 1 was sent with an expansion, the removal of its key `n`.
    static func whileDown(_ index: Int, plan: ChaosPlan, users: any IMBackend, log: WorkLog) async throws -> Int {
        var made = 0
        let sentExtended = ["rongcloud", "wukong"].contains(plan.source.vendor)
        for conversation in plan.conversations {
            var changes = [Change(kind: .expand, target: 1, after: 0, key: "down", value: "d\(index)")]
            if plan.source.vendor == "wukong" { changes.append(Change(kind: .edit, target: 1, after: 0)) }
            if index == 0 { changes.append(Change(kind: plan.source.vendor == "rongcloud" ? .delete : .recall, target: 2, after: 0)) }
            if index == 0 && sentExtended { changes.append(Change(kind: .expand, target: 1, after: 0, key: "n", value: nil)) }
            for change in changes {
                try await make(change, in: conversation, plan: plan, users: users, log: log)
                made += 1
            }
        }
        return made
    }

    /// `late-echoes`: one key of text 1 changed three times `spacingMs` apart in each group (the groups at
    /// once), so that the bridge writes it again before the echo of its last write comes back.
    static func burst(plan: ChaosPlan, spacingMs: Int, users: any IMBackend, log: WorkLog) async throws -> Int {
        try await withThrowingTaskGroup(of: Int.self) { group in
            for conversation in plan.conversations {
                group.addTask {
                    for n in 1...3 {
                        if n > 1 { try await Task.sleep(nanoseconds: UInt64(spacingMs) * 1_000_000) }
                        try await make(Change(kind: .expand, target: 1, after: 0, key: "burst", value: "b\(n)"), in: conversation, plan: plan,
                                       users: users, log: log)
                    }
                    return 3
                }
            }
            return try await group.reduce(0, +)
        }
    }

    /// The change per group after a restart past retention: an edit on WuKong (whose extras feed would
    /// bring the earlier edits again), an expansion change elsewhere, to text 1.
    static func afterRetention(plan: ChaosPlan, users: any IMBackend, log: WorkLog) async throws {
        for conversation in plan.conversations {
            let change = plan.source.vendor == "wukong" ? Change(kind: .edit, target: 1, after: 0)
                : Change(kind: .expand, target: 1, after: 0, key: "late", value: "after-restart")
            try await make(change, in: conversation, plan: plan, users: users, log: log)
        }
    }
}
