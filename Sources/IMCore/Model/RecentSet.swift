/// A set that remembers only its last `capacity` insertions: inserting into a full set forgets the
/// oldest element. Insert and lookup are O(1) (a ring buffer of insertion order beside a hash set), so
/// it can sit on a per-message path — unlike an array trimmed with `removeFirst()`, which moves every
/// remaining element each time.
public struct RecentSet<Element: Hashable & Sendable>: Sendable {
    public let capacity: Int
    private var members: Set<Element> = []
    private var ring: [Element] = []
    private var oldest = 0

    public init(capacity: Int) {
        precondition(capacity > 0, "a RecentSet needs room for at least one element")
        self.capacity = capacity
        members.reserveCapacity(capacity)
    }

    public var count: Int { members.count }
    public func contains(_ element: Element) -> Bool { members.contains(element) }

    /// Inserts `element` unless present; returns false when it was already remembered. When full, the
    /// oldest element is forgotten (and returned as `evicted`).
    @discardableResult
    public mutating func insert(_ element: Element) -> (inserted: Bool, evicted: Element?) {
        guard members.insert(element).inserted else { return (false, nil) }
        if ring.count < capacity {
            ring.append(element)
            return (true, nil)
        }
        let evicted = ring[oldest]
        members.remove(evicted)
        ring[oldest] = element
        oldest = (oldest + 1) % capacity
        return (true, evicted)
    }
}
