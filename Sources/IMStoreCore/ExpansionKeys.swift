import Foundation
import IMCore

/// What the bridge knows about one expansion key of one copy of a message (docs/expansions.md,
/// "Convergence"): the key's converged state — the winning value (nil: removed), its version and the
/// backend whose change it was — and what this copy is known to hold and was last written by the bridge.
/// Kept next to the id map (schema v7, `expansion_keys`), one row per (backend, message, key); never pruned.
public struct ExpansionKeyRecord: Sendable, Hashable {
    /// A value slot that may be unknown: `.known(nil)` is a key known to be absent.
    public enum Slot: Sendable, Hashable {
        case unknown
        case known(String?)
    }

    public var key: String
    /// The converged value; nil when the winning change removed the key (a versioned removal).
    public var value: String?
    /// The winning change's version; `Int64.min` while no change is known.
    public var version: Int64
    /// The backend the winning change came from; "" while no change is known.
    public var origin: String
    /// What this copy holds, as last seen in one of its events or written by the bridge.
    public var held: Slot
    /// The version of the event `held` was last seen in (`Int64.min`: none): an event older than that
    /// (a vendor's callbacks can arrive out of order) does not say what the copy holds now.
    public var heldAt: Int64
    /// What the bridge wrote to this copy and has not yet seen come back (its echo).
    public var written: Slot
    /// Values of the bridge's earlier writes to this copy (before `written`, oldest first; nil: a removal)
    /// whose echoes have not come back either. A vendor can deliver a write's echo after the bridge planned
    /// the next write of the key; taken for a change made on the copy, that echo carried the vendor's time
    /// of the bridge's write, later than the source's change it relayed, and the older value won (seed 946,
    /// docs/reliability.md). Kept to `earlierWritesLimit`, the oldest dropped first.
    public var earlierWrites: [String?]

    /// How many earlier writes are kept awaiting their echoes.
    public static let earlierWritesLimit = 8

    public init(key: String, value: String? = nil, version: Int64 = .min, origin: String = "", held: Slot = .unknown,
                heldAt: Int64 = .min, written: Slot = .unknown, earlierWrites: [String?] = []) {
        (self.key, self.value, self.version, self.origin) = (key, value, version, origin)
        (self.held, self.heldAt, self.written, self.earlierWrites) = (held, heldAt, written, earlierWrites)
    }

    /// Marks `value` as the bridge's newest write to this copy; a write still awaiting its echo becomes an
    /// earlier one.
    public mutating func markWritten(_ value: String?) {
        if case .known(let previous) = written, previous != value {
            earlierWrites.append(previous)
            if earlierWrites.count > Self.earlierWritesLimit { earlierWrites.removeFirst(earlierWrites.count - Self.earlierWritesLimit) }
        }
        written = .known(value)
    }

    /// What an event showing this copy holding `value` is: the echo of the bridge's newest write, of an
    /// earlier one, or neither (a change made on the copy). An echo's mark is taken off.
    public enum Echo: Equatable { case newest, earlier, none }

    public mutating func takeEcho(of value: String?) -> Echo {
        if written == .known(value) {
            written = .unknown
            return .newest
        }
        if let index = earlierWrites.firstIndex(where: { $0 == value }) {
            earlierWrites.remove(at: index)
            return .earlier
        }
        return .none
    }

    /// Whether a converged state is known at all.
    public var isDecided: Bool { !origin.isEmpty }

    /// Whether this copy needs a write to end up holding its converged value: it is not known to hold it,
    /// or the bridge's last write to it carried another value and has not come back yet. Such a write may
    /// still be on its way (planned before a newer change was taken in, sent after), and once through it
    /// leaves the copy holding the older value (seed 599, docs/reliability.md).
    public var needsWrite: Bool {
        guard isDecided else { return false }
        if held != .known(value) { return true }
        if case .known(let other) = written, other != value { return true }
        return false
    }

    /// Whether (version, origin) beats this record's converged state: the higher version wins, equal
    /// versions are ordered by backend id so every instance and every order of arrival agrees.
    public func isBeaten(by version: Int64, origin: String) -> Bool {
        version != self.version ? version > self.version : origin > self.origin
    }

    /// Takes `other`'s converged state when it wins over this one.
    public mutating func adopt(_ other: ExpansionKeyRecord) {
        guard other.isDecided, isBeaten(by: other.version, origin: other.origin) else { return }
        (value, version, origin) = (other.value, other.version, other.origin)
    }
}

extension StoreTransaction {
    /// Locks these messages' records until the transaction ends, for a read-change-write of them that
    /// another instance may make at the same time (PostgreSQL; SQLite writes one transaction at a time).
    /// Call it before the first read of any of them. Locks taken by one call are taken in a fixed order;
    /// two calls in one transaction can meet another transaction's in the other order, which the server
    /// ends as a deadlock, failing one of them (its caller tries again, as after any store failure).
    public func lockExpansionKeys(of messages: [(MessageID, BackendID)]) throws {
        guard !messages.isEmpty else { return }
        try ops.lockExpansionKeys(of: messages)
    }

    /// Every key the bridge keeps for `message` on `backend`, by key.
    public func expansionKeys(of message: MessageID, on backend: BackendID) throws -> [String: ExpansionKeyRecord] {
        try ops.expansionKeys(of: message, on: backend)
    }

    /// Writes (inserts or replaces) these keys of `message` on `backend`.
    public func putExpansionKeys(_ records: [ExpansionKeyRecord], of message: MessageID, on backend: BackendID) throws {
        guard !records.isEmpty else { return }
        try ops.putExpansionKeys(records, of: message, on: backend)
    }
}

/// A slot as two columns: (value, known).
extension ExpansionKeyRecord.Slot {
    package var columns: (String?, Bool) {
        switch self {
        case .unknown: (nil, false)
        case .known(let value): (value, true)
        }
    }

    package init(_ value: String?, known: Bool) { self = known ? .known(value) : .unknown }
}

/// The earlier writes as one column: a JSON array (null for a removal), NULL when there are none.
extension ExpansionKeyRecord {
    package var earlierWritesColumn: String? {
        guard !earlierWrites.isEmpty, let data = try? JSONEncoder().encode(earlierWrites) else { return nil }
        return String(decoding: data, as: UTF8.self)
    }

    package static func earlierWrites(column: String?) -> [String?] {
        guard let column, let values = try? JSONDecoder().decode([String?].self, from: Data(column.utf8)) else { return [] }
        return values
    }
}

