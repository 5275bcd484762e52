import Foundation
import IMCore
import PostgresNIO
import IMStoreCore

/// What the status page and `/healthz` read, on PostgreSQL.
extension PostgresOperations {
    package func laneDepths() throws -> [String: Int] {
        var depths: [String: Int] = [:]
        for row in try rows("SELECT lane, COUNT(*) FROM outbox WHERE state = 'pending' GROUP BY lane") {
            let (lane, n) = try row.decode((String, Int64).self)
            depths[lane] = Int(n)
        }
        return depths
    }

    package func oldestPendingByTarget() throws -> [String: Int64] {
        var oldest: [String: Int64] = [:]
        for row in try rows("SELECT target_backend, MIN(created_at) FROM outbox WHERE state = 'pending' GROUP BY target_backend") {
            let (target, created) = try row.decode((String, Int64).self)
            oldest[target] = created
        }
        return oldest
    }

    package func laneSummaries(limit: Int) throws -> [LaneSummary] {
        try rows("""
            SELECT lane, COUNT(*), MIN(created_at) AS t FROM outbox WHERE state = 'pending'
            GROUP BY lane ORDER BY t, COUNT(*) DESC, lane LIMIT $1
            """, [.int(Int64(limit))]).compactMap { row in
            let (lane, n, created) = try row.decode((String, Int64, Int64).self)
            return LaneKey(lane).map { LaneSummary(lane: $0, depth: Int(n), oldestCreatedAt: created) }
        }
    }

    package func recentDeadLetters(limit: Int) throws -> [OutboxEntry] {
        try rows("SELECT \(Self.entryColumns) FROM outbox WHERE state = 'dead' ORDER BY id DESC LIMIT $1", [.int(Int64(limit))]).compactMap(Self.entry)
    }

    package func recentInboundDeadLetters(limit: Int) throws -> [InboundDeadLetter] {
        try rows("SELECT \(Self.inboundColumns) FROM inbound_dead_letters ORDER BY id DESC LIMIT $1", [.int(Int64(limit))]).map { row in
            let (id, backend, key, format, payload, reason, received, retries) =
                try row.decode((Int64, String, String, String, Data, String, Int64, Int64).self)
            return InboundDeadLetter(id: id, backend: BackendID(backend), key: key, format: format, payload: payload, reason: reason,
                                     receivedAt: received, retries: Int(retries))
        }
    }
}
