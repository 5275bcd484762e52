/// One key of a message expansion: its value and the version of the change that last wrote it.
public struct ExpansionEntry: Hashable, Sendable, Codable {
    public var value: String
    public var version: Int64
    public init(value: String, version: Int64) {
        self.value = value
        self.version = version
    }
}

/// A change an operator asks for. Refused whole if it breaks a limit (see `ExpansionLimits`).
public enum ExpansionChange: Hashable, Sendable, Codable {
    /// Sets (adds or overwrites) these keys.
    case set([String: String])
    /// Removes these keys; removing a key that is not there is not an error and not a change.
    case remove([String])
    /// Removes every key.
    case clear

    /// The keys this change names (empty for `clear`).
    public var keys: [String] {
        switch self {
        case .set(let values): values.keys.sorted()
        case .remove(let keys): keys
        case .clear: []
        }
    }
}

/// What actually changed, as an `expansionChanged` event carries it: only the keys whose value changed,
/// the keys that were removed, whether everything was cleared first, and the change's version.
public struct ExpansionDelta: Hashable, Sendable, Codable {
    public var version: Int64
    public var set: [String: String]
    public var removed: [String]
    public var cleared: Bool
    public init(version: Int64, set: [String: String] = [:], removed: [String] = [], cleared: Bool = false) {
        self.version = version
        self.set = set
        self.removed = removed.sorted()
        self.cleared = cleared
    }
    public var isEmpty: Bool { self.set.isEmpty && removed.isEmpty && !cleared }

    /// The same delta as a change request (what a bridge sends to the target).
    public var asChanges: [ExpansionChange] {
        var changes: [ExpansionChange] = []
        if cleared { changes.append(.clear) }
        if !removed.isEmpty { changes.append(.remove(removed)) }
        if !set.isEmpty { changes.append(.set(set)) }
        return changes
    }
}

/// The key/value state attached to a message that was sent with expansion enabled (RongCloud
/// 消息扩展; WuKong's remote `extra` maps onto it).
///
/// Rules enforced here:
/// - Each applied change gets the next version (`version + 1`, or its time where versions are change
///   times, see `apply(_:at:)`); every key it writes carries it.
/// - A `set` to the value a key already has, or a `remove` of an absent key, is no change: it is left
///   out of the delta and gets no new version.
/// - `merge` applies a delta from elsewhere last-writer-wins per key: a key is written only when the
///   delta's version is at least the key's current version.
public struct Expansion: Hashable, Sendable, Codable {
    public private(set) var entries: [String: ExpansionEntry]
    public private(set) var version: Int64

    public init(initial: [String: String] = [:], version: Int64 = 0) {
        self.entries = initial.mapValues { ExpansionEntry(value: $0, version: version) }
        self.version = version
    }

    public init(entries: [String: ExpansionEntry]) {
        self.entries = entries
        self.version = entries.values.map(\.version).max() ?? 0
    }

    public var values: [String: String] { entries.mapValues(\.value) }
    public var count: Int { entries.count }
    public subscript(key: String) -> String? { entries[key]?.value }

    /// Applies a validated change and returns what changed. `at`: the change's time in milliseconds, for a
    /// vendor whose versions are change times (RongCloud's `ts`); the version is then `max(at, version + 1)`.
    @discardableResult
    public mutating func apply(_ change: ExpansionChange, at time: Int64? = nil) -> ExpansionDelta {
        let next = max(version + 1, time ?? .min)
        var delta = ExpansionDelta(version: next)
        switch change {
        case .set(let values):
            for (key, value) in values where entries[key]?.value != value {
                entries[key] = ExpansionEntry(value: value, version: next)
                delta.set[key] = value
            }
        case .remove(let keys):
            for key in Set(keys) where entries.removeValue(forKey: key) != nil {
                delta.removed.append(key)
            }
            delta.removed.sort()
        case .clear:
            delta.cleared = !entries.isEmpty
            delta.removed = entries.keys.sorted()
            entries.removeAll()
        }
        if !delta.isEmpty { version = next }
        return delta
    }

    /// Applies a delta produced elsewhere, last-writer-wins per key (see the type's rules).
    public mutating func merge(_ delta: ExpansionDelta) {
        if delta.cleared {
            entries = entries.filter { $0.value.version > delta.version }
        }
        for key in delta.removed where (entries[key]?.version ?? .min) <= delta.version {
            entries.removeValue(forKey: key)
        }
        for (key, value) in delta.set where (entries[key]?.version ?? .min) <= delta.version {
            entries[key] = ExpansionEntry(value: value, version: delta.version)
        }
        version = max(version, delta.version)
    }
}
