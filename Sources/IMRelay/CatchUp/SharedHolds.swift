import IMPositions
import IMStore

/// Catch-up holds shared by the instances of one PostgreSQL store (docs/high-availability.md, "Held
/// conversations").
///
/// While an instance reads a conversation's history, its `CatchUpGate` holds the conversation's live
/// messages and answers the vendor, which then delivers the next message — perhaps to another instance,
/// whose gate knows nothing of the hold and would record it before the older messages the read brings.
/// So an instance that catches a conversation up holds it in the store as well: a lease row
/// `hold:<backend>/<conversation>`, taken before the read, renewed with the instance's other leases,
/// given up in the transaction that records what it held. Each intake transaction that records live
/// messages looks for such rows: one of another instance — live, or expired because that instance died
/// with messages it had answered still unrecorded — makes it refuse the callback (the vendor sends it
/// again) after marking the row. A holder gives its hold up only if nobody marked it since its last
/// read began; else it reads again. So what was refused is in a read even if the vendor gives up on it;
/// a hold whose instance died is taken over by the instance that met it (`CatchUpRunner.checkElsewhere`).
/// On SQLite (one instance) nothing is held in the store.
package struct SharedHolds: Sendable {
    package let enabled: Bool
    package let owner: String
    package let ttlMs: Int64

    package static let prefix = "hold:"
    package static func name(_ key: CatchUpGate.Key) -> String { "\(prefix)\(key.backend.rawValue)/\(key.conversation)" }

    /// The conversation a hold's lease name stands for (nil: not a hold).
    package static func key(fromName name: String) -> CatchUpGate.Key? { CatchUpGate.Key(named: name, after: prefix) }

    /// How long a read that found no other instance's hold row answers for the echo-only callbacks that
    /// follow it (`RelayEngine.noHoldElsewhere`): a hold taken meanwhile is met by an echo at most this
    /// much later. Echoes record nothing, so what the window delays is only the meeting that starts
    /// the takeover of a dead instance's hold — which waits for the hold to expire (`ttlMs`) anyway.
    package static let echoCheckWindowMs: UInt64 = 250

    /// In the intake's transaction: those of `keys` another instance holds, each marked on its hold row
    /// (its token moved: the holder's release then fails and it reads again).
    package func mark(_ keys: [CatchUpGate.Key], _ tx: StoreTransaction) throws -> [CatchUpGate.Key] {
        guard enabled, !keys.isEmpty else { return [] }
        let marked = Set(try tx.markLeases(keys.map(Self.name), notOwnedBy: owner))
        return keys.filter { marked.contains(Self.name($0)) }
    }

    /// In the intake's transaction: holds `keys` for this instance (or renews its hold); returns those
    /// another instance holds live, each marked as `mark` does.
    package func take(_ keys: [CatchUpGate.Key], _ tx: StoreTransaction, at now: Int64) throws -> [CatchUpGate.Key] {
        guard enabled else { return [] }
        var elsewhere: [CatchUpGate.Key] = []
        for key in keys where try tx.takeLease(Self.name(key), owner: owner, ttlMs: ttlMs, now: now) == nil {
            elsewhere.append(key)
        }
        return try mark(elsewhere, tx)
    }
}

/// Live messages of conversations another instance holds (`SharedHolds`): the callback is refused.
struct HeldElsewhere: Error {
    var keys: [CatchUpGate.Key]
}

/// The hold's row was marked since the holder's last read began (or is gone): it reads again.
package struct HoldMarked: Error, CustomStringConvertible {
    package init() {}
    package var description: String { "another instance refused a live message while the conversation was held: read again" }
}
