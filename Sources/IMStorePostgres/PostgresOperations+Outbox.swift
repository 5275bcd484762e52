import Foundation
import IMCore
import PostgresNIO
import IMStoreCore

/// The outbox on PostgreSQL: lanes, their due heads, claims, and the outbound dead letters.
extension PostgresOperations {
    package func enqueue(lane: LaneKey, sourceBackend: BackendID, sourceEventID: EventID, kind: String, payload: Data, at now: Int64) throws -> Int64 {
        guard let id = try int("""
            INSERT INTO outbox (lane, target_backend, source_backend, source_event_id, kind, payload, created_at, next_attempt_at)
            VALUES ($1, $2, $3, $4, $5, $6, $7, 0) RETURNING id
            """, [.text(lane.description), .text(lane.backend.rawValue), .text(sourceBackend.rawValue), .text(sourceEventID.rawValue),
                  .text(kind), .bytes(payload), .int(now)]) else { throw PostgresFailure(message: "postgres: INSERT returned no id") }
        return id
    }

    package static let laneHeads = "SELECT lane, MIN(id) AS head FROM outbox WHERE state = 'pending' GROUP BY lane"

    package func dueLanes(at now: Int64, limit: Int, leaseOwner: String?) throws -> [OutboxEntry] {
        let columns = Self.entryColumns.split(separator: ",").map { "o." + $0.trimmingCharacters(in: .whitespaces) }.joined(separator: ", ")
        return try rows(Self.dueLanes(columns, leased: leaseOwner != nil), Self.dueLaneValues(now, limit, leaseOwner)).compactMap(Self.entry)
    }

    package func dueLaneKeys(at now: Int64, limit: Int, leaseOwner: String?) throws -> [LaneKey] {
        try rows(Self.dueLanes("o.lane", leased: leaseOwner != nil), Self.dueLaneValues(now, limit, leaseOwner))
            .compactMap { LaneKey(try $0.decode(String.self)) }
    }

    /// The lane heads due at `$1`, oldest first, at most the last parameter; with `leased`, without the
    /// lanes another owner than `$2` holds unexpired.
    package static func dueLanes(_ select: String, leased: Bool) -> String {
        guard leased else {
            return "SELECT \(select) FROM outbox o JOIN (\(laneHeads)) h ON o.id = h.head WHERE o.next_attempt_at <= $1 ORDER BY o.id LIMIT $2"
        }
        return """
            SELECT \(select) FROM outbox o JOIN (\(laneHeads)) h ON o.id = h.head
            LEFT JOIN leases l ON l.name = 'lane:' || o.lane
            WHERE o.next_attempt_at <= $1 AND (l.name IS NULL OR l.owner = $2 OR l.expires_at <= \(serverNow))
            ORDER BY o.id LIMIT $3
            """
    }

    package static func dueLaneValues(_ now: Int64, _ limit: Int, _ leaseOwner: String?) -> [PostgresValue] {
        guard let leaseOwner else { return [.int(now), .int(Int64(limit))] }
        return [.int(now), .text(leaseOwner), .int(Int64(limit))]
    }

    package func nextWakeUp() throws -> Int64? {
        try int("SELECT MIN(o.next_attempt_at) FROM outbox o JOIN (\(Self.laneHeads)) h ON o.id = h.head")
    }

    package func nextWakeUp(after now: Int64) throws -> Int64? {
        try int("SELECT MIN(o.next_attempt_at) FROM outbox o JOIN (\(Self.laneHeads)) h ON o.id = h.head WHERE o.next_attempt_at > $1",
                [.int(now)])
    }

    package func head(of lane: LaneKey) throws -> OutboxEntry? {
        try rows("SELECT \(Self.entryColumns) FROM outbox WHERE lane = $1 AND state = 'pending' ORDER BY id LIMIT 1",
                 [.text(lane.description)]).first.flatMap(Self.entry)
    }

    package func pendingEntries(of lane: LaneKey, limit: Int) throws -> [OutboxEntry] {
        try rows("SELECT \(Self.entryColumns) FROM outbox WHERE lane = $1 AND state = 'pending' ORDER BY id LIMIT $2",
                 [.text(lane.description), .int(Int64(limit))]).compactMap(Self.entry)
    }

    package func entries(ids: [Int64]) throws -> [OutboxEntry] {
        try rows("SELECT \(Self.entryColumns) FROM outbox WHERE id = ANY($1) ORDER BY id", [.ints(ids)]).compactMap(Self.entry)
    }

    package func claim(_ id: Int64) throws {
        try session.query("UPDATE outbox SET attempts = attempts + 1 WHERE id = $1", [.int(id)])
    }

    package func claimHead(of lane: LaneKey, dueBy now: Int64, leaseOwner: String?) throws -> OutboxEntry? {
        let returning = Self.entryColumns.replacingOccurrences(of: "attempts,", with: "attempts - 1,")
        var values: [PostgresValue] = [.text(lane.description), .int(now)]
        var fence = ""
        if let leaseOwner {
            fence = "AND EXISTS (SELECT 1 FROM leases WHERE name = $3 AND owner = $4 AND expires_at > \(Self.serverNow))"
            values += [.text(lane.leaseName), .text(leaseOwner)]
        }
        return try rows("""
            UPDATE outbox SET attempts = attempts + 1
            WHERE id = (SELECT id FROM outbox WHERE lane = $1 AND state = 'pending' ORDER BY id LIMIT 1)
              AND next_attempt_at <= $2 \(fence)
            RETURNING \(returning)
            """, values).first.flatMap(Self.entry)
    }

    package func complete(_ id: Int64, at now: Int64) throws {
        try session.query("UPDATE outbox SET state = 'done', finished_at = $1, payload = ''::bytea WHERE id = $2", [.int(now), .int(id)])
    }

    /// `reschedule`/`markDead` fenced in the statement itself.
    package static let fenced = "AND EXISTS (SELECT 1 FROM leases WHERE name = $4 AND owner = $5 AND token = $6)"

    package func reschedule(_ id: Int64, at next: Int64, error: String, fence: LeaseFence) throws -> Bool {
        try changed("UPDATE outbox SET next_attempt_at = $1, last_error = $2 WHERE id = $3 \(Self.fenced)",
                    [.int(next), .text(error), .int(id), .text(fence.name), .text(fence.owner), .int(fence.token)]) == 1
    }

    package func markDead(_ id: Int64, error: String, at now: Int64, fence: LeaseFence) throws -> Bool {
        try changed("UPDATE outbox SET state = 'dead', last_error = $1, finished_at = $2 WHERE id = $3 \(Self.fenced)",
                    [.text(error), .int(now), .int(id), .text(fence.name), .text(fence.owner), .int(fence.token)]) == 1
    }

    package func reschedule(_ id: Int64, at next: Int64, error: String) throws {
        try session.query("UPDATE outbox SET next_attempt_at = $1, last_error = $2 WHERE id = $3", [.int(next), .text(error), .int(id)])
    }

    package func markDead(_ id: Int64, error: String, at now: Int64) throws {
        try session.query("UPDATE outbox SET state = 'dead', last_error = $1, finished_at = $2 WHERE id = $3",
                          [.text(error), .int(now), .int(id)])
    }

    package func deadLetters(limit: Int) throws -> [OutboxEntry] {
        try rows("SELECT \(Self.entryColumns) FROM outbox WHERE state = 'dead' ORDER BY id LIMIT $1", [.int(Int64(limit))]).compactMap(Self.entry)
    }

    package func retryDeadLetters(ids: [Int64]?) throws -> Int {
        if let ids {
            return try changed("UPDATE outbox SET state = 'pending', next_attempt_at = 0 WHERE id = ANY($1) AND state = 'dead'", [.ints(ids)])
        }
        return try changed("UPDATE outbox SET state = 'pending', next_attempt_at = 0 WHERE state = 'dead'", [])
    }

    package func count(state: OutboxEntry.State) throws -> Int {
        Int(try int("SELECT COUNT(*) FROM outbox WHERE state = $1", [.text(state.rawValue)]) ?? 0)
    }
}
