import IMCore
import IMStore

/// Per-key convergence of message expansions across the copies of one message (docs/expansions.md,
/// "Convergence"). The store keeps, for every copy and key (`ExpansionKeyRecord`), the converged state —
/// value or removal, version, origin backend — and what the copy holds and was last written by the bridge.
///
/// - **Intake** (`intake`, in the ingest transaction): each key an event changes is observed as the
///   copy's held value. Unless it is the echo of one of the bridge's own writes (a value the bridge wrote
///   there and has not seen come back: its newest write, or an earlier one whose echo comes late), it is
///   a change with the event's version: the source's change time where the vendor gives one
///   (`Capabilities.expansionVersionIsChangeTime`), else the bridge's intake time. It wins when its
///   (version, origin backend) is higher than the converged state's; removals are versioned the same way,
///   so a late update does not bring a removed key back. The converged state is shared with every mapped
///   copy; a copy that does not hold it gets a write (its key is named in that target's action), and the
///   changed copy itself gets one when its change lost (a `repair`, through a route leg back into it).
/// - **Execution** (`plan` before the write, `wrote` after): the write carries the converged value *at
///   execution time*, never the queued one, and only for keys the copy does not already hold, so a stale
///   queued change writes nothing.
package struct ExpansionConvergence {
    package let routes: RouteTable

    package init(routes: RouteTable) { self.routes = routes }

    /// What intake decided for one expansion change.
    package struct Decision {
        /// For each target backend whose copy is mapped: the keys that copy does not hold converged.
        package var keys: [BackendID: Set<String>] = [:]
        package var repairs: [Repair] = []
    }

    /// A write back into the copy an event came from, sent through a leg from a counterpart into it.
    package struct Repair {
        package var leg: RouteLeg
        package var source: MessageMapping
        package var keys: [String]
    }

    /// The keys a delta changes, with their new value (nil: removed). A clear (or a first read that gives
    /// the message's whole state: `cleared` with every key set) removes every key this copy was seen to
    /// hold — not a key it was never seen to hold: that copy cannot have lost it, and a value the bridge
    /// has yet to write there (its write queued or cut short by a crash) must not lose to its absence
    /// (docs/expansions.md, "Convergence").
    package static func changes(_ delta: ExpansionDelta, known: [String: ExpansionKeyRecord]) -> [String: String?] {
        var changes: [String: String?] = [:]
        if delta.cleared {
            for (key, record) in known { if case .known(.some) = record.held { changes[key] = .some(nil) } }
        }
        for key in delta.removed { changes[key] = .some(nil) }
        for (key, value) in delta.set { changes[key] = .some(value) }
        return changes
    }

    /// The copies of `message` that a change of it converges with (one per route leg out of its
    /// conversation), with their records and its own locked (`StoreTransaction.lockExpansionKeys`) for the
    /// rest of the transaction. Call it before reading any of them; `intake` takes what it found.
    package func lockCopies(of message: MessageID, on backend: BackendID, in conversation: ConversationRef,
                            _ tx: StoreTransaction) throws -> [(leg: RouteLeg, copy: MessageMapping)] {
        var copies: [(leg: RouteLeg, copy: MessageMapping)] = []
        for leg in routes.legs(from: backend, conversation: conversation) {
            guard let copy = try tx.mapped(message, from: backend, to: leg.target) else { continue }
            copies.append((leg, copy))
        }
        try tx.lockExpansionKeys(of: [(message, backend)] + copies.map { ($0.copy.toMessage, $0.copy.toBackend) })
        return copies
    }

    /// `copies`: what `lockCopies` found, in the same transaction (nil: found and locked here).
    package func intake(_ delta: ExpansionDelta, of message: MessageID, on backend: BackendID, in conversation: ConversationRef,
                version: Int64, copies: [(leg: RouteLeg, copy: MessageMapping)]? = nil, _ tx: StoreTransaction) throws -> Decision {
        let copies = try copies ?? lockCopies(of: message, on: backend, in: conversation, tx)
        var own = try tx.expansionKeys(of: message, on: backend)
        var changes = Self.changes(delta, known: own)
        // A whole state (a read of the copy, not a change: WuKong's row after a restart) that restates what
        // the copy is known to hold says nothing new; taken as a change at the time it was read, it
        // outranked the source's changes made before that read (Finding 34, seed 198, docs/reliability.md).
        // Nor does one read before the copy was last seen holding a key say anything about that key: the
        // read may predate the bridge's write of it (asked on one instance, recorded after another took in
        // the write's echo). Taken as a change it removed the key, or restated an older value, at a version
        // past the converged one (seed 597, docs/reliability.md). A clear made later than that is not older.
        if delta.cleared {
            changes = changes.filter { key, value in own[key]?.held != .known(value) && (own[key]?.heldAt ?? .min) <= version }
        }
        guard !changes.isEmpty else { return Decision() }
        for (key, value) in changes {
            var record = own[key] ?? ExpansionKeyRecord(key: key)
            // A mark stays until its echo comes (an event of another value may be one the vendor applied
            // before the bridge's write, delivered first).
            let echo = record.takeEcho(of: value)
            // An older event (delivered late) does not say what the copy holds now; nor does the echo of a
            // write the bridge has made again since with another value (the copy holds, or will, the newer).
            if echo != .earlier, version >= record.heldAt {
                record.held = .known(value)
                record.heldAt = version
            }
            // An echo is no change, whatever its version: the vendor's time of the bridge's write is later
            // than the change it relayed, and would outrank the source's changes made since (seed 946).
            if echo == .none, record.isBeaten(by: version, origin: backend.rawValue) {
                (record.value, record.version, record.origin) = (value, version, backend.rawValue)
            }
            own[key] = record
        }
        var decision = Decision()
        var counterparts: [MessageMapping] = []
        for (leg, copy) in copies {
            counterparts.append(copy)
            var theirs = try tx.expansionKeys(of: copy.toMessage, on: copy.toBackend)
            var stale: Set<String> = []
            for key in changes.keys {
                var mine = own[key]!, other = theirs[key] ?? ExpansionKeyRecord(key: key)
                mine.adopt(other)
                other.adopt(mine)
                if other.needsWrite { stale.insert(key) }
                own[key] = mine
                theirs[key] = other
            }
            try tx.putExpansionKeys(changes.keys.compactMap { theirs[$0] }, of: copy.toMessage, on: copy.toBackend)
            decision.keys[leg.target] = stale
        }
        try tx.putExpansionKeys(changes.keys.compactMap { own[$0] }, of: message, on: backend)
        let lost = changes.keys.filter { own[$0]?.needsWrite ?? false }.sorted()
        if !lost.isEmpty {
            for copy in counterparts {
                let back = copy.toBackend
                guard let leg = routes.legs(from: back, conversation: copy.toConversation)
                    .first(where: { $0.target == backend && $0.targetConversation == conversation }) else { continue }
                let reverse = try tx.mapped(copy.toMessage, from: back, to: backend)
                guard reverse?.toMessage == message else { continue }
                decision.repairs.append(Repair(leg: leg, source: copy, keys: lost))
                break
            }
        }
        return decision
    }

    /// The write that brings the target's copy to the converged state of the keys `delta` names (read
    /// from both copies' records); empty when it holds them already. Marks the values as written (before
    /// the write, so its echo is known even when it comes back first). A key neither copy has a record
    /// of (a change queued before convergence was kept) is written as queued.
    package static func plan(_ delta: ExpansionDelta, source: MessageID, on sourceBackend: BackendID, copy: MessageID, on target: BackendID,
                     _ tx: StoreTransaction) throws -> ExpansionDelta {
        try tx.lockExpansionKeys(of: [(source, sourceBackend), (copy, target)])
        var mine = try tx.expansionKeys(of: source, on: sourceBackend)
        var theirs = try tx.expansionKeys(of: copy, on: target)
        var keys = Set(delta.set.keys).union(delta.removed)
        if delta.cleared { keys.formUnion(mine.keys); keys.formUnion(theirs.keys) }
        var write = ExpansionDelta(version: delta.version)
        var touched: [String] = []
        for key in keys.sorted() {
            var want: String?
            var record = ExpansionKeyRecord(key: key)
            if let other = mine[key] { record.adopt(other) }
            if let other = theirs[key] { record.adopt(other) }
            if record.isDecided {
                want = record.value
                var target = theirs[key] ?? ExpansionKeyRecord(key: key)
                target.adopt(record)
                if target.held == .known(want) {
                    theirs[key] = target
                    continue
                }
                target.markWritten(want)
                theirs[key] = target
                touched.append(key)
                var source = mine[key] ?? ExpansionKeyRecord(key: key)
                source.adopt(record)
                mine[key] = source
            } else {
                want = delta.set[key]
                var target = theirs[key] ?? ExpansionKeyRecord(key: key)
                // Written already (a second entry with the same values: a migration's initial values queued
                // beside the live relay's for one message): nothing to write. On NIM a second write is a
                // second carrier message.
                if target.held == .known(want) { continue }
                target.markWritten(want)
                theirs[key] = target
                touched.append(key)
            }
            if let want { write.set[key] = want } else { write.removed.append(key) }
        }
        write.removed.sort()
        if write.isEmpty, delta.cleared, keys.isEmpty { write.cleared = true }
        try tx.putExpansionKeys(touched.compactMap { theirs[$0] }, of: copy, on: target)
        try tx.putExpansionKeys(touched.compactMap { mine[$0] }, of: source, on: sourceBackend)
        return write
    }

    /// After the write went through: the copy holds what was written, unless an event about the key came
    /// in meanwhile (it cleared the written mark and said itself what the copy holds). `at`: when it was
    /// seen through, in the clock the target's changes are versioned in, where that is the bridge's (a
    /// vendor that gives no change time): a whole state of the copy read before then is not taken to say
    /// the key is gone.
    package static func wrote(_ write: ExpansionDelta, copy: MessageID, on target: BackendID, at: Int64?, _ tx: StoreTransaction) throws {
        try tx.lockExpansionKeys(of: [(copy, target)])
        var theirs = try tx.expansionKeys(of: copy, on: target)
        var changed: [ExpansionKeyRecord] = []
        var values: [String: String?] = [:]
        for key in write.removed { values[key] = .some(nil) }
        for (key, value) in write.set { values[key] = .some(value) }
        for (key, value) in values {
            guard var record = theirs[key], record.written == .known(value) else { continue }
            record.held = .known(value)
            if let at { record.heldAt = max(record.heldAt, at) }
            theirs[key] = record
            changed.append(record)
        }
        try tx.putExpansionKeys(changed, of: copy, on: target)
    }
}

extension ExpansionConvergence {
    /// Why a change cannot be written to `target` as it is (a value over the target's value limit), or nil.
    /// Such a change is dead-lettered at intake with this reason, not half written (docs/mappings.md).
    package static func refusal(_ delta: ExpansionDelta, target: any IMBackend) -> String? {
        guard target.capabilities.support(.expansion).isNative, let limits = target.capabilities.expansionLimits else { return nil }
        for (key, value) in delta.set.sorted(by: { $0.key < $1.key }) where value.count > limits.maxValueLength {
            return "expansion_limit_exceeded (value_length): the value of expansion key '\(key)' is \(value.count) characters; "
                + "\(target.id) (\(target.capabilities.vendor)) takes at most \(limits.maxValueLength)"
        }
        return nil
    }
}

extension ExpansionDelta {
    /// The same change naming only `keys` (nil when none is left); a clear is kept whole.
    package func narrowed(to keys: Set<String>) -> ExpansionDelta? {
        if cleared { return self }
        let narrowed = ExpansionDelta(version: version, set: set.filter { keys.contains($0.key) }, removed: removed.filter(keys.contains))
        return narrowed.isEmpty ? nil : narrowed
    }
}
