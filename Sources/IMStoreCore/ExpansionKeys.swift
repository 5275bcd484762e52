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

    public init(key: String, value: String? = nil, version: Int64 = .min, origin: String = "", held: Slot = .unknown,
                heldAt: Int64 = .min, written: Slot = .unknown) {
        (self.key, self.value, self.version, self.origin) = (key, value, version, origin)
        (self.held, self.heldAt, self.written) = (held, heldAt, written)
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

