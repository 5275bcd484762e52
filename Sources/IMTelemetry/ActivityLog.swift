import IMCore
import Synchronization

/// What happened in each of the last few minutes, kept in memory for the status page (`/status`,
/// docs/status-page.md): events received, relays carried out, retries, dead letters (outbound and
/// inbound) and refused callbacks, one bucket per wall-clock minute.
///
/// A fixed ring of `minutes` buckets: memory does not grow with traffic or uptime, and a restart starts
/// it empty (Prometheus, scraping `/metrics`, keeps the long history). `RelayMetrics.increment` feeds it,
/// so each number here moves with its counter family in `/metrics`.
public final class ActivityLog: Sendable {
    /// The columns, each fed by one counter family.
    public enum Column: Int, Sendable, CaseIterable {
        case eventsIn, relayed, retries, deadLetters, inboundDeadLetters, refused

        /// The counter family whose increments land in this column.
        package static let byFamily: [String: Column] = [
            "imbridge_events_in_total": .eventsIn,
            "imbridge_relayed_total": .relayed,
            "imbridge_retries_total": .retries,
            "imbridge_dead_letters_total": .deadLetters,
            "imbridge_inbound_dead_letters_total": .inboundDeadLetters,
            "imbridge_callbacks_refused_total": .refused,
        ]
    }

    /// One minute's counts.
    public struct Minute: Sendable, Equatable {
        /// Start of the minute, Unix milliseconds.
        public var startMs: Int64
        public var counts: [Int]
        public subscript(_ column: Column) -> Int { counts[column.rawValue] }
    }

    public static let minuteMs: Int64 = 60_000
    /// How many minutes are kept (the current one included).
    public let minutes: Int
    private struct Ring {
        var clock: any IMClock
        /// Minute number (`ms / minuteMs`) each slot holds, and its counts.
        var slots: [(minute: Int64, counts: [Int])]
        /// Every increment since the start, per column.
        var totals = Array(repeating: 0, count: Column.allCases.count)
    }
    private let ring: Mutex<Ring>

    public init(minutes: Int = 15, clock: any IMClock = SystemClock()) {
        self.minutes = max(1, minutes)
        ring = Mutex(Ring(clock: clock, slots: Array(repeating: (minute: -1, counts: Array(repeating: 0, count: Column.allCases.count)),
                                                     count: max(1, minutes))))
    }

    /// The clock that decides which minute an increment belongs to (the engine passes its own).
    public func use(clock: any IMClock) {
        ring.withLock { $0.clock = clock }
    }

    /// Adds `amount` to `column` in the current minute.
    public func record(_ column: Column, _ amount: Int = 1) {
        guard amount > 0 else { return }
        ring.withLock { ring in
            let minute = ring.clock.nowMs() / Self.minuteMs
            let index = Int(minute % Int64(ring.slots.count))
            if ring.slots[index].minute != minute {
                ring.slots[index] = (minute, Array(repeating: 0, count: Column.allCases.count))
            }
            ring.slots[index].counts[column.rawValue] += amount
            ring.totals[column.rawValue] += amount
        }
    }

    /// Everything `column` counted since the start (a cheap read, unlike rendering the registry: the
    /// benchmarks poll it while they measure).
    public func total(_ column: Column) -> Int {
        ring.withLock { $0.totals[column.rawValue] }
    }

    /// Adds to the column fed by counter family `family`, if any.
    package func record(family: String, _ amount: Int) {
        if let column = Column.byFamily[family] { record(column, amount) }
    }

    /// The last `minutes` minutes, oldest first, the current (partial) minute last; minutes without
    /// activity are there with zeros.
    public func recent() -> [Minute] {
        ring.withLock { ring in
            let current = ring.clock.nowMs() / Self.minuteMs
            return (0..<Int64(ring.slots.count)).reversed().map { back in
                let minute = current - back
                let slot = ring.slots[Int(((minute % Int64(ring.slots.count)) + Int64(ring.slots.count)) % Int64(ring.slots.count))]
                return Minute(startMs: minute * Self.minuteMs,
                              counts: slot.minute == minute ? slot.counts : Array(repeating: 0, count: Column.allCases.count))
            }
        }
    }
}
