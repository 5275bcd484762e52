import Foundation
import IMCore
import PostgresNIO

/// The store contract's operations on PostgreSQL (semantics on `StoreTransaction`). Claiming a lane's
/// head is one statement (`UPDATE … RETURNING`), fenced by the lane's lease when an owner is given.
struct PostgresOperations: StoreOperations {
    let session: PostgresSession

    /// The server's clock in milliseconds since 1970, read when the statement runs: what leases are
    /// counted on (`StoreTransaction.takeLease`), the same for every instance, whatever their clocks say.
    static let serverNow = "(EXTRACT(EPOCH FROM clock_timestamp()) * 1000)::BIGINT"

    static let entryColumns = "id, lane, source_backend, source_event_id, kind, payload, state, attempts, next_attempt_at, last_error, created_at"

    func rows(_ sql: String, _ values: [PostgresValue] = []) throws -> [PostgresRow] {
        Array(try session.query(sql, values).rows)
    }

    func changed(_ sql: String, _ values: [PostgresValue]) throws -> Int {
        try session.query(sql, values).metadata.rows ?? 0
    }

    func int(_ sql: String, _ values: [PostgresValue] = []) throws -> Int64? {
        guard let row = try rows(sql, values).first else { return nil }
        return try row.decode(Int64?.self)
    }

    // MARK: ledger

    func recordEvent(_ backend: BackendID, _ eventID: EventID, kind: String, at now: Int64) throws -> Bool {
        try changed("INSERT INTO ledger (backend, event_id, kind, received_at) VALUES ($1, $2, $3, $4) ON CONFLICT DO NOTHING",
                    [.text(backend.rawValue), .text(eventID.rawValue), .text(kind), .int(now)]) == 1
    }

    func recordEvents(_ events: [StoreTransaction.InboundEvent], at now: Int64) throws -> [StoreTransaction.EventRecord] {
        let rows = try rows("""
            WITH input AS (
              SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[]) WITH ORDINALITY AS t(backend, event_id, kind, message, n)
            ),
            ins AS (
              INSERT INTO ledger (backend, event_id, kind, received_at) SELECT backend, event_id, kind, $5 FROM input
              ON CONFLICT DO NOTHING RETURNING backend, event_id
            )
            SELECT EXISTS (SELECT 1 FROM ins WHERE ins.backend = input.backend AND ins.event_id = input.event_id),
                   input.message <> '' AND EXISTS (SELECT 1 FROM id_map WHERE to_backend = input.backend AND to_message = input.message
                                                   AND bridge_created)
            FROM input ORDER BY input.n
            """, [.texts(events.map(\.backend.rawValue)), .texts(events.map(\.eventID.rawValue)), .texts(events.map(\.kind)),
                  .texts(events.map { $0.message?.rawValue ?? "" }), .int(now)])
        guard rows.count == events.count else { throw PostgresFailure(message: "postgres: the ledger insert returned \(rows.count) rows for \(events.count)") }
        return try rows.map { row in
            let (inserted, echo) = try row.decode((Bool, Bool).self)
            return !inserted ? .duplicate : echo ? .echo : .new
        }
    }

    func enqueueAll(_ entries: [StoreTransaction.NewEntry], at now: Int64) throws -> [Int64] {
        let rows = try rows("""
            INSERT INTO outbox (lane, target_backend, source_backend, source_event_id, kind, payload, created_at, next_attempt_at)
            SELECT lane, target, source, event, kind, payload, $7, 0
            FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::bytea[]) WITH ORDINALITY
                 AS t(lane, target, source, event, kind, payload, n)
            ORDER BY n
            RETURNING id
            """, [.texts(entries.map(\.lane.description)), .texts(entries.map(\.lane.backend.rawValue)),
                  .texts(entries.map(\.sourceBackend.rawValue)), .texts(entries.map(\.sourceEventID.rawValue)),
                  .texts(entries.map(\.kind)), .byteArrays(entries.map(\.payload)), .int(now)])
        // Ids come from the sequence in the order the rows are inserted (the SELECT's order).
        let ids = try rows.map { try $0.decode(Int64.self) }.sorted()
        guard ids.count == entries.count else { throw PostgresFailure(message: "postgres: INSERT returned \(ids.count) ids for \(entries.count)") }
        return ids
    }

    func ledgerCount() throws -> Int { Int(try int("SELECT COUNT(*) FROM ledger") ?? 0) }

    // MARK: outbox

    func enqueue(lane: LaneKey, sourceBackend: BackendID, sourceEventID: EventID, kind: String, payload: Data, at now: Int64) throws -> Int64 {
        guard let id = try int("""
            INSERT INTO outbox (lane, target_backend, source_backend, source_event_id, kind, payload, created_at, next_attempt_at)
            VALUES ($1, $2, $3, $4, $5, $6, $7, 0) RETURNING id
            """, [.text(lane.description), .text(lane.backend.rawValue), .text(sourceBackend.rawValue), .text(sourceEventID.rawValue),
                  .text(kind), .bytes(payload), .int(now)]) else { throw PostgresFailure(message: "postgres: INSERT returned no id") }
        return id
    }

    static let laneHeads = "SELECT lane, MIN(id) AS head FROM outbox WHERE state = 'pending' GROUP BY lane"

    func dueLanes(at now: Int64, limit: Int, leaseOwner: String?) throws -> [OutboxEntry] {
        let columns = Self.entryColumns.split(separator: ",").map { "o." + $0.trimmingCharacters(in: .whitespaces) }.joined(separator: ", ")
        return try rows(Self.dueLanes(columns, leased: leaseOwner != nil), Self.dueLaneValues(now, limit, leaseOwner)).compactMap(Self.entry)
    }

    func dueLaneKeys(at now: Int64, limit: Int, leaseOwner: String?) throws -> [LaneKey] {
        try rows(Self.dueLanes("o.lane", leased: leaseOwner != nil), Self.dueLaneValues(now, limit, leaseOwner))
            .compactMap { LaneKey(try $0.decode(String.self)) }
    }

    /// The lane heads due at `$1`, oldest first, at most the last parameter; with `leased`, without the
    /// lanes another owner than `$2` holds unexpired.
    static func dueLanes(_ select: String, leased: Bool) -> String {
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

    static func dueLaneValues(_ now: Int64, _ limit: Int, _ leaseOwner: String?) -> [PostgresValue] {
        guard let leaseOwner else { return [.int(now), .int(Int64(limit))] }
        return [.int(now), .text(leaseOwner), .int(Int64(limit))]
    }

    func nextWakeUp() throws -> Int64? {
        try int("SELECT MIN(o.next_attempt_at) FROM outbox o JOIN (\(Self.laneHeads)) h ON o.id = h.head")
    }

    func nextWakeUp(after now: Int64) throws -> Int64? {
        try int("SELECT MIN(o.next_attempt_at) FROM outbox o JOIN (\(Self.laneHeads)) h ON o.id = h.head WHERE o.next_attempt_at > $1",
                [.int(now)])
    }

    func head(of lane: LaneKey) throws -> OutboxEntry? {
        try rows("SELECT \(Self.entryColumns) FROM outbox WHERE lane = $1 AND state = 'pending' ORDER BY id LIMIT 1",
                 [.text(lane.description)]).first.flatMap(Self.entry)
    }

    func pendingEntries(of lane: LaneKey, limit: Int) throws -> [OutboxEntry] {
        try rows("SELECT \(Self.entryColumns) FROM outbox WHERE lane = $1 AND state = 'pending' ORDER BY id LIMIT $2",
                 [.text(lane.description), .int(Int64(limit))]).compactMap(Self.entry)
    }

    func entries(ids: [Int64]) throws -> [OutboxEntry] {
        try rows("SELECT \(Self.entryColumns) FROM outbox WHERE id = ANY($1) ORDER BY id", [.ints(ids)]).compactMap(Self.entry)
    }

    func claim(_ id: Int64) throws {
        try session.query("UPDATE outbox SET attempts = attempts + 1 WHERE id = $1", [.int(id)])
    }

    func claimHead(of lane: LaneKey, dueBy now: Int64, leaseOwner: String?) throws -> OutboxEntry? {
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

    func complete(_ id: Int64, at now: Int64) throws {
        try session.query("UPDATE outbox SET state = 'done', finished_at = $1, payload = ''::bytea WHERE id = $2", [.int(now), .int(id)])
    }

    /// `StoreTransaction.finish`: `finishAll` of this one step.
    func finish(_ id: Int64, lane: LaneKey, at now: Int64, mapping: StoreTransaction.Mapping?, claimNext: Bool,
                fence: LeaseFence) throws -> OutboxEntry? {
        let step = StoreTransaction.Finish(id, lane: lane, at: now, mapping: mapping, claimNext: claimNext, fence: fence)
        guard case .next(let next) = try finishAll([step])[0] else { throw StoreTransaction.LeaseLost(fence: fence) }
        return next
    }

    /// A finish's row: whether the tenure held, then the claimed entry's columns (all null when none).
    static func finishOutcome(_ row: PostgresRow) throws -> FinishOutcome {
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
    enum FinishOutcome {
        /// Done (and mapped); the lane's next entry, claimed, or nil (the lease was released).
        case next(OutboxEntry?)
        /// The tenure no longer holds the lane's lease: nothing was written for this step.
        case lost
    }

    /// The statement of `finishAll` (built once: the entry columns, with the attempts before the claim).
    static let finishAllSQL: String = {
        let returning = entryColumns.split(separator: ",").map { column -> String in
            let name = column.trimmingCharacters(in: .whitespaces)
            return name == "attempts" ? "o.attempts - 1 AS attempts" : "o.\(name)"
        }.joined(separator: ", ")
        let selected = entryColumns.split(separator: ",").map { "x." + $0.trimmingCharacters(in: .whitespaces) }.joined(separator: ", ")
        return """
            WITH s AS (
              SELECT * FROM unnest($1::bigint[], $2::bigint[], $3::text[], $4::text[], $5::text[], $6::bigint[], $7::boolean[],
                                   $8::text[], $9::text[], $10::text[], $11::text[], $12::text[], $13::text[]) WITH ORDINALITY
                AS t(id, at, lane, lease, owner, token, claim_next, from_backend, from_message, to_backend, to_message, to_conversation,
                     from_conversation, n)
            ),
            f AS (SELECT s.* FROM s WHERE EXISTS (SELECT 1 FROM leases l WHERE l.name = s.lease AND l.owner = s.owner AND l.token = s.token)),
            m AS (
              INSERT INTO id_map (from_backend, from_message, to_backend, to_message, to_conversation, bridge_created, created_at)
              SELECT v.* FROM f, LATERAL (VALUES (f.from_backend, f.from_message, f.to_backend, f.to_message, f.to_conversation, TRUE, f.at),
                                                 (f.to_backend, f.to_message, f.from_backend, f.from_message, f.from_conversation, FALSE, f.at)) v
              WHERE f.from_backend <> ''
              ON CONFLICT (from_backend, from_message, to_backend) DO UPDATE SET to_message = EXCLUDED.to_message,
                  to_conversation = EXCLUDED.to_conversation, bridge_created = EXCLUDED.bridge_created, created_at = EXCLUDED.created_at
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
    struct FinishAllStatement: PostgresPreparedStatement {
        typealias Row = PostgresRow
        static let name = "imbridge_finish_all"
        static var sql: String { PostgresOperations.finishAllSQL }
        var bindings: PostgresBindings
        func makeBindings() throws -> PostgresBindings { bindings }
        func decodeRow(_ row: PostgresRow) throws -> PostgresRow { row }
    }

    /// `StoreTransaction.finish` for one or more lanes in one statement, each step fenced by its own
    /// tenure (`f`: its lane's lease still held with its token) and claiming from its own lane, the
    /// outcomes in the order of `steps`. The sub-statements of a WITH query all see the rows as they
    /// were before it, so a lane's next head is looked for among its entries other than the one done.
    /// The steps name distinct lanes, entries and id-map rows (`PostgresDriver.combinableFinishes`).
    func finishAll(_ steps: [StoreTransaction.Finish]) throws -> [FinishOutcome] {
        let maps = steps.map(\.mapping)
        let rows = try session.execute(FinishAllStatement(bindings: try PostgresSession.bindings([
                  .ints(steps.map(\.id)), .ints(steps.map(\.now)), .texts(steps.map(\.lane.description)), .texts(steps.map(\.lane.leaseName)),
                  .texts(steps.map(\.fence.owner)), .ints(steps.map(\.fence.token)), .bools(steps.map(\.claimNext)),
                  .texts(maps.map { $0?.source.0.rawValue ?? "" }), .texts(maps.map { $0?.source.1.rawValue ?? "" }),
                  .texts(maps.map { $0?.target.0.rawValue ?? "" }), .texts(maps.map { $0?.target.1.rawValue ?? "" }),
                  .texts(maps.map { $0?.target.2.description ?? "" }), .texts(maps.map { $0?.source.2.description ?? "" })])))
        guard rows.count == steps.count else {
            throw PostgresFailure(message: "postgres: the combined finish returned \(rows.count) rows for \(steps.count)")
        }
        return try rows.map(Self.finishOutcome)
    }

    /// `reschedule`/`markDead` fenced in the statement itself.
    static let fenced = "AND EXISTS (SELECT 1 FROM leases WHERE name = $4 AND owner = $5 AND token = $6)"

    func reschedule(_ id: Int64, at next: Int64, error: String, fence: LeaseFence) throws -> Bool {
        try changed("UPDATE outbox SET next_attempt_at = $1, last_error = $2 WHERE id = $3 \(Self.fenced)",
                    [.int(next), .text(error), .int(id), .text(fence.name), .text(fence.owner), .int(fence.token)]) == 1
    }

    func markDead(_ id: Int64, error: String, at now: Int64, fence: LeaseFence) throws -> Bool {
        try changed("UPDATE outbox SET state = 'dead', last_error = $1, finished_at = $2 WHERE id = $3 \(Self.fenced)",
                    [.text(error), .int(now), .int(id), .text(fence.name), .text(fence.owner), .int(fence.token)]) == 1
    }

    func reschedule(_ id: Int64, at next: Int64, error: String) throws {
        try session.query("UPDATE outbox SET next_attempt_at = $1, last_error = $2 WHERE id = $3", [.int(next), .text(error), .int(id)])
    }

    func markDead(_ id: Int64, error: String, at now: Int64) throws {
        try session.query("UPDATE outbox SET state = 'dead', last_error = $1, finished_at = $2 WHERE id = $3",
                          [.text(error), .int(now), .int(id)])
    }

    func deadLetters(limit: Int) throws -> [OutboxEntry] {
        try rows("SELECT \(Self.entryColumns) FROM outbox WHERE state = 'dead' ORDER BY id LIMIT $1", [.int(Int64(limit))]).compactMap(Self.entry)
    }

    func retryDeadLetters(ids: [Int64]?) throws -> Int {
        if let ids {
            return try changed("UPDATE outbox SET state = 'pending', next_attempt_at = 0 WHERE id = ANY($1) AND state = 'dead'", [.ints(ids)])
        }
        return try changed("UPDATE outbox SET state = 'pending', next_attempt_at = 0 WHERE state = 'dead'", [])
    }

    func count(state: OutboxEntry.State) throws -> Int {
        Int(try int("SELECT COUNT(*) FROM outbox WHERE state = $1", [.text(state.rawValue)]) ?? 0)
    }

    // MARK: inbound dead letters

    static let inboundColumns = "id, backend, item_key, format, payload, reason, received_at, retries"

    func keepInbound(backend: BackendID, key: String, format: String, payload: Data, reason: String, at now: Int64) throws -> Bool {
        try changed("""
            INSERT INTO inbound_dead_letters (backend, item_key, format, payload, reason, received_at) VALUES ($1, $2, $3, $4, $5, $6)
            ON CONFLICT DO NOTHING
            """, [.text(backend.rawValue), .text(key), .text(format), .bytes(payload), .text(reason), .int(now)]) == 1
    }

    func inboundDeadLetters(ids: [Int64]?, limit: Int) throws -> [InboundDeadLetter] {
        let found: [PostgresRow]
        if let ids {
            found = try rows("SELECT \(Self.inboundColumns) FROM inbound_dead_letters WHERE id = ANY($1) ORDER BY id LIMIT $2",
                             [.ints(ids), .int(Int64(limit))])
        } else {
            found = try rows("SELECT \(Self.inboundColumns) FROM inbound_dead_letters ORDER BY id LIMIT $1", [.int(Int64(limit))])
        }
        return try found.map { row in
            let (id, backend, key, format, payload, reason, received, retries) =
                try row.decode((Int64, String, String, String, Data, String, Int64, Int64).self)
            return InboundDeadLetter(id: id, backend: BackendID(backend), key: key, format: format, payload: payload, reason: reason,
                                     receivedAt: received, retries: Int(retries))
        }
    }

    func removeInboundDeadLetter(_ id: Int64) throws {
        try session.query("DELETE FROM inbound_dead_letters WHERE id = $1", [.int(id)])
    }

    func failedInboundRetry(_ id: Int64, reason: String) throws {
        try session.query("UPDATE inbound_dead_letters SET reason = $1, retries = retries + 1 WHERE id = $2", [.text(reason), .int(id)])
    }

    func inboundDeadLetterCount() throws -> Int { Int(try int("SELECT COUNT(*) FROM inbound_dead_letters") ?? 0) }

    func laneDepths() throws -> [String: Int] {
        var depths: [String: Int] = [:]
        for row in try rows("SELECT lane, COUNT(*) FROM outbox WHERE state = 'pending' GROUP BY lane") {
            let (lane, n) = try row.decode((String, Int64).self)
            depths[lane] = Int(n)
        }
        return depths
    }

    func oldestPendingByTarget() throws -> [String: Int64] {
        var oldest: [String: Int64] = [:]
        for row in try rows("SELECT target_backend, MIN(created_at) FROM outbox WHERE state = 'pending' GROUP BY target_backend") {
            let (target, created) = try row.decode((String, Int64).self)
            oldest[target] = created
        }
        return oldest
    }

    func laneSummaries(limit: Int) throws -> [LaneSummary] {
        try rows("""
            SELECT lane, COUNT(*), MIN(created_at) AS t FROM outbox WHERE state = 'pending'
            GROUP BY lane ORDER BY t, COUNT(*) DESC, lane LIMIT $1
            """, [.int(Int64(limit))]).compactMap { row in
            let (lane, n, created) = try row.decode((String, Int64, Int64).self)
            return LaneKey(lane).map { LaneSummary(lane: $0, depth: Int(n), oldestCreatedAt: created) }
        }
    }

    func recentDeadLetters(limit: Int) throws -> [OutboxEntry] {
        try rows("SELECT \(Self.entryColumns) FROM outbox WHERE state = 'dead' ORDER BY id DESC LIMIT $1", [.int(Int64(limit))]).compactMap(Self.entry)
    }

    func recentInboundDeadLetters(limit: Int) throws -> [InboundDeadLetter] {
        try rows("SELECT \(Self.inboundColumns) FROM inbound_dead_letters ORDER BY id DESC LIMIT $1", [.int(Int64(limit))]).map { row in
            let (id, backend, key, format, payload, reason, received, retries) =
                try row.decode((Int64, String, String, String, Data, String, Int64, Int64).self)
            return InboundDeadLetter(id: id, backend: BackendID(backend), key: key, format: format, payload: payload, reason: reason,
                                     receivedAt: received, retries: Int(retries))
        }
    }

    static func entry(_ row: PostgresRow) -> OutboxEntry? {
        guard let (id, laneText, source, event, kind, payload, stateText, attempts, next, lastError, created) =
                try? row.decode((Int64, String, String, String, String, Data, String, Int64, Int64, String?, Int64).self),
              let lane = LaneKey(laneText), let state = OutboxEntry.State(rawValue: stateText) else { return nil }
        return OutboxEntry(id: id, lane: lane, sourceBackend: BackendID(source), sourceEventID: EventID(event), kind: kind, payload: payload,
                           state: state, attempts: Int(attempts), nextAttemptAt: next, lastError: lastError, createdAt: created)
    }

    // MARK: pruning

    func prune(before cutoff: Int64, limit: Int) throws -> StoreTransaction.Pruned {
        let oldestPending = try int("SELECT MIN(created_at) FROM outbox WHERE state = 'pending'")
        let ledgerCutoff = min(cutoff, oldestPending ?? .max)
        var pruned = StoreTransaction.Pruned()
        pruned.outbox = try changed("""
            DELETE FROM outbox WHERE id IN (SELECT id FROM outbox WHERE state = 'done' AND finished_at < $1 ORDER BY finished_at LIMIT $2)
            """, [.int(cutoff), .int(Int64(limit))])
        pruned.ledger = try changed("""
            DELETE FROM ledger WHERE (backend, event_id) IN (SELECT backend, event_id FROM ledger WHERE received_at < $1
                                                             ORDER BY received_at LIMIT $2)
            """, [.int(ledgerCutoff), .int(Int64(limit))])
        return pruned
    }

    // MARK: id map

    func map(source: (BackendID, MessageID, ConversationRef), target: (BackendID, MessageID, ConversationRef), at now: Int64) throws {
        try session.query("""
            INSERT INTO id_map (from_backend, from_message, to_backend, to_message, to_conversation, bridge_created, created_at)
            VALUES ($1, $2, $3, $4, $5, TRUE, $7), ($3, $4, $1, $2, $6, FALSE, $7)
            ON CONFLICT (from_backend, from_message, to_backend) DO UPDATE SET to_message = EXCLUDED.to_message,
                to_conversation = EXCLUDED.to_conversation, bridge_created = EXCLUDED.bridge_created, created_at = EXCLUDED.created_at
            """, [.text(source.0.rawValue), .text(source.1.rawValue), .text(target.0.rawValue), .text(target.1.rawValue),
                  .text(target.2.description), .text(source.2.description), .int(now)])
    }

    func mapped(_ message: MessageID, from: BackendID, to: BackendID) throws -> MessageMapping? {
        guard let row = try rows("""
            SELECT from_backend, from_message, to_backend, to_message, to_conversation, bridge_created FROM id_map
            WHERE from_backend = $1 AND from_message = $2 AND to_backend = $3
            """, [.text(from.rawValue), .text(message.rawValue), .text(to.rawValue)]).first else { return nil }
        let (fromBackend, fromMessage, toBackend, toMessage, conversation, created) = try row.decode((String, String, String, String, String, Bool).self)
        guard let toConversation = try? ConversationRef(parsing: conversation) else { return nil }
        return MessageMapping(fromBackend: BackendID(fromBackend), fromMessage: MessageID(fromMessage), toBackend: BackendID(toBackend),
                              toMessage: MessageID(toMessage), toConversation: toConversation, bridgeCreated: created)
    }

    func isBridgeCreated(_ message: MessageID, on backend: BackendID) throws -> Bool {
        try !rows("SELECT 1 FROM id_map WHERE to_backend = $1 AND to_message = $2 AND bridge_created LIMIT 1",
                  [.text(backend.rawValue), .text(message.rawValue)]).isEmpty
    }

    func mappingCount() throws -> Int { Int(try int("SELECT COUNT(*) FROM id_map WHERE bridge_created") ?? 0) }

    // MARK: checkpoints

    func checkpoint(_ name: String) throws -> String? {
        try rows("SELECT value FROM checkpoints WHERE name = $1", [.text(name)]).first.map { try $0.decode(String.self) }
    }

    func checkpoints(prefix: String) throws -> [(name: String, value: String)] {
        try rows("SELECT name, value FROM checkpoints WHERE left(name, $1::int) = $2 ORDER BY name", [.int(Int64(prefix.count)), .text(prefix)])
            .map { row in
                let (name, value) = try row.decode((String, String).self)
                return (name: name, value: value)
            }
    }

    func setCheckpoint(_ name: String, _ value: String, at now: Int64) throws {
        try session.query("""
            INSERT INTO checkpoints (name, value, updated_at) VALUES ($1, $2, $3)
            ON CONFLICT (name) DO UPDATE SET value = EXCLUDED.value, updated_at = EXCLUDED.updated_at
            """, [.text(name), .text(value), .int(now)])
    }

    // MARK: leases

    func takeLease(_ name: String, owner: String, ttlMs: Int64, now: Int64, token: Int64) throws -> Int64? {
        try int("""
            INSERT INTO leases (name, owner, expires_at, token) VALUES ($1, $2, \(Self.serverNow) + $3, $4)
            ON CONFLICT (name) DO UPDATE SET owner = EXCLUDED.owner, expires_at = EXCLUDED.expires_at,
                token = CASE WHEN leases.owner = EXCLUDED.owner THEN leases.token ELSE EXCLUDED.token END
            WHERE leases.owner = EXCLUDED.owner OR leases.expires_at <= \(Self.serverNow)
            RETURNING token
            """, [.text(name), .text(owner), .int(ttlMs), .int(token)])
    }

    func renewLeases(owner: String, ttlMs: Int64, now: Int64) throws -> [(name: String, token: Int64)] {
        try rows("UPDATE leases SET expires_at = \(Self.serverNow) + $1 WHERE owner = $2 RETURNING name, token", [.int(ttlMs), .text(owner)])
            .map { let (name, token) = try $0.decode((String, Int64).self); return (name: name, token: token) }
    }

    func holds(_ fence: LeaseFence) throws -> Bool {
        try !rows("SELECT 1 FROM leases WHERE name = $1 AND owner = $2 AND token = $3",
                  [.text(fence.name), .text(fence.owner), .int(fence.token)]).isEmpty
    }

    func releaseLease(_ name: String, owner: String) throws {
        try session.query("DELETE FROM leases WHERE name = $1 AND owner = $2", [.text(name), .text(owner)])
    }

    func dropAllLeases() throws -> Int { try changed("DELETE FROM leases", []) }

    func markLeases(_ names: [String], notOwnedBy owner: String) throws -> [String] {
        try rows("UPDATE leases SET token = CASE WHEN token = 9223372036854775807 THEN 1 ELSE token + 1 END WHERE name = ANY($1) AND owner <> $2 RETURNING name", [.texts(names), .text(owner)])
            .map { try $0.decode(String.self) }
    }

    func leaseToken(_ name: String, owner: String) throws -> Int64? {
        try int("SELECT token FROM leases WHERE name = $1 AND owner = $2", [.text(name), .text(owner)])
    }

    func releaseLease(_ name: String, owner: String, token: Int64) throws -> Bool {
        try changed("DELETE FROM leases WHERE name = $1 AND owner = $2 AND token = $3", [.text(name), .text(owner), .int(token)]) > 0
    }

    func foreignLeases(prefix: String, notOwnedBy owner: String, limit: Int) throws -> [String] {
        try rows("SELECT name FROM leases WHERE left(name, $1::int) = $2 AND owner <> $3 LIMIT $4",
                 [.int(Int64(prefix.count)), .text(prefix), .text(owner), .int(Int64(limit))]).map { try $0.decode(String.self) }
    }

    func leaseOwners(_ names: [String]) throws -> [String: String] {
        var owners: [String: String] = [:]
        for row in try rows("SELECT name, owner FROM leases WHERE name = ANY($1)", [.texts(names)]) {
            let (name, owner) = try row.decode((String, String).self)
            owners[name] = owner
        }
        return owners
    }

    func leaseHolder(_ name: String, at now: Int64) throws -> String? {
        try rows("SELECT owner FROM leases WHERE name = $1 AND expires_at > \(Self.serverNow)", [.text(name)]).first.map { try $0.decode(String.self) }
    }
}
