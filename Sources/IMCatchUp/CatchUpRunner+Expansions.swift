import Foundation
import IMAdapterKit
import IMCore
import IMStore
import IMOutbox
import IMRelay

/// Expansions in a re-read history window (`compareWindow`), compared with what the store says each
/// message holds (`ExpansionKeyRecord.held`: kept from its first recording, its changes and the bridge's
/// writes; docs/expansions.md).
extension CatchUpRunner {
    /// One `expansionChanged` per message whose keys differ from what it is known to hold: keys with
    /// another value (at the version history gives them), keys it no longer has (removed, just past the
    /// key's recorded version), and
    /// keys it did not have — where the store kept what the message was sent with (it has keys of the
    /// message: every key it was sent with and every change since are kept), a key the store has never
    /// seen was added since. Only the keys of a message the store knows nothing of (one recorded before
    /// the bridge kept what messages are sent with, or sent with none) are taken as held now, silently:
    /// the bridge cannot tell them from the message's first values. History does not say who made a
    /// change: it is relayed as the message's sender's (whose puppet wrote the copy, so may write to it —
    /// a NIM carrier must come from a member of the team).
    ///
    /// A key is taken as removed only when the store held it, as it holds it now, before the read began
    /// (`keysBeforeRead`, read before history): a key the store learned while history was being read (its
    /// callback, another instance's read) is newer than that read, whose not showing it says nothing —
    /// taking it as removed stamped a version past the key's own and outranked the set (seed 300,
    /// docs/reliability.md).
    func expansionChanges(_ messages: [Message], _ key: CatchUpGate.Key, source: any ChangeWindowSource,
                          keysBeforeRead: [MessageID: [String: ExpansionKeyRecord]]) async throws -> [IMEvent] {
        let shown = messages.compactMap { message in message.expansion.map { (message.id, $0, message.sender, message.sentAt) } }
        guard !shown.isEmpty else { return [] }
        let capabilities = source.capabilities
        let limits = capabilities.support(.expansion).isNative ? capabilities.expansionLimits : nil
        let backend = key.backend, conversation = key.conversation
        // When the read was made, in the source's clock: every message time and key time it shows came
        // before it, and every change made after it is stamped later (docs/expansions.md, "Convergence").
        let readAt = messages.reduce(Int64.min) { latest, message in
            max(latest, message.sentAt, message.expansion?.entries.values.map(\.version).max() ?? .min)
        }
        return try await store.groupedTransaction { tx in
            var events: [IMEvent] = []
            try tx.lockExpansionKeys(of: shown.map { ($0.0, backend) })
            for (id, expansion, sender, sentAt) in shown {
                let records = try tx.expansionKeys(of: id, on: backend)
                var set: [String: String] = [:], removed: [String] = [], version = Int64.min
                var adopted: [ExpansionKeyRecord] = []
                var seen: Set<String> = []
                for (vendorKey, entry) in expansion.entries {
                    let original = ExpansionKeyCodec.decode(vendorKey, for: limits, known: records.keys)
                    seen.insert(original)
                    switch records[original]?.held ?? .unknown {
                    case .known(let held) where held == entry.value:
                        continue
                    case .unknown where records[original] == nil && !records.isEmpty:
                        // Added while nobody was listening: a change like any other.
                        set[vendorKey] = entry.value
                        version = max(version, entry.version)
                    case .unknown:
                        var record = records[original] ?? ExpansionKeyRecord(key: original)
                        record.held = .known(entry.value)
                        adopted.append(record)
                    case .known:
                        set[vendorKey] = entry.value
                        version = max(version, entry.version)
                    }
                }
                for (original, record) in records where !seen.contains(original) {
                    guard case .known(.some) = record.held, keysBeforeRead[id]?[original] == record else { continue }
                    removed.append(ExpansionKeyCodec.encode(original, for: limits))
                    // History gives no time for a removal: it came after the state recorded for the key,
                    // after the message was sent and before this read, so just past the latest time the
                    // read shows — in the clock those came in (the source's, where it stamps changes) and
                    // never the bridge's `now`: with the source's clock behind the bridge's, a version of
                    // `now` would beat the source's next changes to this message, and of any key set in
                    // the same delta (Finding 32, docs/reliability.md). Not the key's recorded time alone:
                    // a set made between that and the removal, whose callback comes only after this read
                    // (a backlog behind a paused instance), would then outrank the removal (Finding 52).
                    version = max(version, max(record.version, sentAt, readAt) + 1)
                }
                try tx.putExpansionKeys(adopted, of: id, on: backend)
                guard !set.isEmpty || !removed.isEmpty else { continue }
                let delta = ExpansionDelta(version: version, set: set, removed: removed)
                let digest = Self.fnv1a(set.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: "&")
                                        + "|" + delta.removed.joined(separator: "&"))
                events.append(IMEvent(eventID: EventID("exp-state:\(id):\(version):\(digest)"), backend: backend,
                                      kind: .expansionChanged(messageID: id, conversation: conversation, by: sender, delta: delta)))
            }
            return events
        }
    }

    /// A stable 64-bit FNV-1a of `text`, in hex (an event id part that names what a change sets).
    static func fnv1a(_ text: String) -> String {
        String(StableHash.fnv1a64(text), radix: 16)
    }
}
