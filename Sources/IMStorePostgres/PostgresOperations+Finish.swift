import Foundation
import IMCore
import PostgresNIO
import IMStoreCore

/// A lane's finish on PostgreSQL: one statement for one lane or a whole batch of them (`finishAll`).
extension PostgresOperations {
    /// `StoreTransaction.finish`: `finishAll` of this one step.
    package func finish(_ id: Int64, lane: LaneKey, at now: Int64, mapping: StoreTransaction.Mapping?, claimNext: Bool,
                fence: LeaseFence) throws -> OutboxEntry? {
        let step = StoreTransaction.Finish(id, lane: lane, at: now, mapping: mapping, claimNext: claimNext, fence: fence)
        guard case .next(let next) = try finishAll([step])[0] else { throw StoreTransaction.LeaseLost(fence: fence) }
        return next
    }

    /// A finish's row: whether the tenure held, then the claimed entry's columns (all null when none).
    package static func finishOutcome(_ row: PostgresRow) throws -> FinishOutcome {
        let (held, nextID, laneText, source, event, kind, payload, stateText, attempts, next, lastError, created) =
            try row.decode((Bool, Int64?, String?, String?, String?, String?, Data?, String?, Int64?, Int64?, String?, Int64?).self)
        guard held else { return .lost }
        guard let nextID, let laneText, let nextLane = LaneKey(laneText), let source, let event, let kind, let stateText,
              let state = OutboxEntry.State(rawValue: stateText), let attempts, let next, let created else { return .next(nil) }
        return .next(OutboxEntry(id: nextID, lane: nextLane, sourceBackend: BackendID(source), sourceEventID: EventID(event), kind: kind,
                                 payload: payload ?? Data(), state: state, attempts: Int(attempts), nextAttemptAt: next,
                                 lastError: lastError, createdAt: created))
    }

    /// What one step of `finishAll` did.
    package enum FinishOutcome {
        /// Done (and mapped); the lane's next entry, claimed, or nil (the lease was released).
        case next(OutboxEntry?)
        /// The tenure no longer holds the lane's lease: nothing was written for this step.
        case lost
    }

    /// The statement of `finishAll` (built once: the entry columns, with the attempts before the claim).
    package static let finishAllSQL: String = {
        let returning = entryColumns.split(separator: ",").map { column -> String in
            let name = column.trimmingCharacters(in: .whitespaces)
            return name == "attempts" ? "o.attempts - 1 AS attempts" : "o.\(name)"
        }.joined(separator: ", ")
        let selected = entryColumns.split(separator: ",").map { "x." + $0.trimmingCharacters(in: .whitespaces) }.joined(separator: ", ")
        return """
            WITH s AS (
              SELECT * FROM unnest($1::bigint[], $2::bigint[], $3::text[], $4::text[], $5::text[], $6::bigint[], $7::boolean[],
                                   $8::text[], $9::text[], $10::text[], $11::text[], $12::text[], $13::text[], $14::bigint[], $15::text[]) WITH ORDINALITY
                AS t(id, at, lane, lease, owner, token, claim_next, from_backend, from_message, to_backend, to_message, to_conversation,
                     from_conversation, sent_at, sender, n)
            ),
            f AS (SELECT s.* FROM s WHERE EXISTS (SELECT 1 FROM leases l WHERE l.name = s.lease AND l.owner = s.owner AND l.token = s.token)),
            m AS (
              INSERT INTO id_map (from_backend, from_message, to_backend, to_message, to_conversation, bridge_created, created_at, source_time,
                                  source_sender)
              SELECT v.* FROM f, LATERAL (VALUES (f.from_backend, f.from_message, f.to_backend, f.to_message, f.to_conversation, TRUE, f.at,
                                                  NULLIF(f.sent_at, \(Int64.min)), NULLIF(f.sender, '')),
                                                 (f.to_backend, f.to_message, f.from_backend, f.from_message, f.from_conversation, FALSE, f.at,
                                                  NULLIF(f.sent_at, \(Int64.min)), NULLIF(f.sender, ''))) v
              WHERE f.from_backend <> ''
              ON CONFLICT (from_backend, from_message, to_backend) DO UPDATE SET to_message = EXCLUDED.to_message,
                  to_conversation = EXCLUDED.to_conversation, bridge_created = EXCLUDED.bridge_created, created_at = EXCLUDED.created_at,
                  source_time = EXCLUDED.source_time, source_sender = EXCLUDED.source_sender
            ),
            d AS (UPDATE outbox o SET state = 'done', finished_at = f.at, payload = ''::bytea FROM f WHERE o.id = f.id RETURNING o.id),
            h AS (
              SELECT f.n, f.at, (SELECT o.id FROM outbox o WHERE o.lane = f.lane AND o.state = 'pending' AND o.id <> f.id
                                 ORDER BY o.id LIMIT 1) AS head
              FROM f
              WHERE f.claim_next AND EXISTS (SELECT 1 FROM leases l WHERE l.name = f.lease AND l.owner = f.owner
                                                                    AND l.expires_at > \(Self.serverNow))
            ),
            x AS (
              UPDATE outbox o SET attempts = o.attempts + 1 FROM h WHERE o.id = h.head AND o.next_attempt_at <= h.at
              RETURNING h.n, \(returning)
            ),
            r AS (
              DELETE FROM leases l USING f WHERE l.name = f.lease AND l.owner = f.owner AND l.token = f.token
                AND NOT EXISTS (SELECT 1 FROM x WHERE x.n = f.n)
            )
            SELECT f.n IS NOT NULL, \(selected) FROM s LEFT JOIN f ON f.n = s.n LEFT JOIN x ON x.n = s.n ORDER BY s.n
            """
    }()

    /// `finishAllSQL` as a prepared statement: run for nearly every relayed message's batch, and planning
    /// it cost the server as much as running it (docs/performance.md, "The fifth sitting").
    package struct FinishAllStatement: PostgresPreparedStatement {
        package typealias Row = PostgresRow
        package static let name = "imbridge_finish_all"
        package static var sql: String { PostgresOperations.finishAllSQL }
        package var bindings: PostgresBindings
        package func makeBindings() throws -> PostgresBindings { bindings }
        package func decodeRow(_ row: PostgresRow) throws -> PostgresRow { row }
    }

    /// `StoreTransaction.finish` for one or more lanes in one statement, each step fenced by its own
    /// tenure (`f`: its lane's lease still held with its token) and claiming from its own lane, the
    /// outcomes in the order of `steps`. The sub-statements of a WITH query all see the rows as they
    /// were before it, so a lane's next head is looked for among its entries other than the one done.
    /// The steps name distinct lanes, entries and id-map rows (`PostgresDriver.combinableFinishes`).
    package func finishAll(_ steps: [StoreTransaction.Finish]) throws -> [FinishOutcome] {
        let maps = steps.map(\.mapping)
        let rows = try session.execute(FinishAllStatement(bindings: try PostgresSession.bindings([
                  .ints(steps.map(\.id)), .ints(steps.map(\.now)), .texts(steps.map(\.lane.description)), .texts(steps.map(\.lane.leaseName)),
                  .texts(steps.map(\.fence.owner)), .ints(steps.map(\.fence.token)), .bools(steps.map(\.claimNext)),
                  .texts(maps.map { $0?.source.0.rawValue ?? "" }), .texts(maps.map { $0?.source.1.rawValue ?? "" }),
                  .texts(maps.map { $0?.target.0.rawValue ?? "" }), .texts(maps.map { $0?.target.1.rawValue ?? "" }),
                  .texts(maps.map { $0?.target.2.description ?? "" }), .texts(maps.map { $0?.source.2.description ?? "" }),
                  .ints(maps.map { $0?.sentAt ?? .min }), .texts(maps.map { $0?.sender?.rawValue ?? "" })])))
        guard rows.count == steps.count else {
            throw PostgresFailure(message: "postgres: the combined finish returned \(rows.count) rows for \(steps.count)")
        }
        return try rows.map(Self.finishOutcome)
    }
}
