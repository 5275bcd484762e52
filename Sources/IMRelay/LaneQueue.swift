import IMStore


/// Lanes in the order they were turned away for want of a slot, each at most once (`RelayEngine.waiting`).
struct LaneQueue {
    private var order: [LaneKey] = []
    private var head = 0
    private var members: Set<LaneKey> = []

    /// Adds `lane` at the end unless it is queued; false when `limit` lanes are queued already.
    mutating func append(_ lane: LaneKey, limit: Int) -> Bool {
        guard !members.contains(lane) else { return true }
        guard members.count < limit else { return false }
        members.insert(lane)
        order.append(lane)
        return true
    }

    /// Puts `lane` first (taking it from where it was queued).
    mutating func prepend(_ lane: LaneKey) {
        if members.contains(lane) {
            order.removeFirst(head)
            head = 0
            order.removeAll { $0 == lane }
        } else {
            members.insert(lane)
        }
        if head > 0 {
            head -= 1
            order[head] = lane
        } else {
            order.insert(lane, at: 0)
        }
    }

    mutating func popFirst() -> LaneKey? {
        guard head < order.count else { return nil }
        let lane = order[head]
        head += 1
        members.remove(lane)
        if members.isEmpty {
            order.removeAll(keepingCapacity: true)
            head = 0
        } else if head > 1024 && head * 2 > order.count {
            order.removeFirst(head)
            head = 0
        }
        return lane
    }
}
