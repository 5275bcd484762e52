import Foundation
import IMCore
import IMOutbox
import IMStore
import IMHTTP

/// One message's way through the bridge, read from the store hop by hop (docs/operations.md, "Where is
/// my message: `imbridge trace`"): received and recorded (the ledger), planned (the outbox: lane, action,
/// route), each failed attempt (the attempts table: vendor answer, error class, retry delay), held
/// (the lane's lease, a pending retry), delivered (the id map: target id, client id), echo suppressed
/// (the copy's own callback in the ledger), dead-lettered (why). What `imbridge trace` prints and the
/// status page's `/trace?id=` answers.
package struct MessageTrace: Codable, Sendable, Equatable {
    /// The id asked about (a source or a target message id).
    package var query: String
    /// The source message the trace follows, when the id map or the ledger names it.
    package var sourceBackend: String?
    package var sourceMessage: String
    /// `delivered`, `partly_delivered`, `pending`, `dead_lettered`, `inbound_dead_letter`, `recorded`
    /// (in the ledger, nothing queued: an echo, no route, or the outbox rows were pruned) or `not_found`.
    package var status: String
    package var hops: [Hop]

    /// One hop; only the fields that hop has are set.
    package struct Hop: Codable, Sendable, Equatable {
        package var hop: String
        package var at: Int64?
        package var time: String?
        package var backend: String?
        package var eventID: String?
        /// The event's W3C trace id (`TraceParent.forEvent`): in its log lines and its vendor calls' `traceparent`.
        package var traceID: String?
        package var kind: String?
        package var outboxID: Int64?
        package var lane: String?
        package var action: String?
        package var route: String?
        package var state: String?
        package var attempt: Int?
        package var attempts: Int?
        package var outcome: String?
        package var errorClass: String?
        package var errorCode: String?
        package var vendorCode: String?
        package var error: String?
        package var retryAt: Int64?
        package var retryInMs: Int64?
        /// Who took the event in (`received`, `echo_suppressed`): the listener's address, `poll`, `catch-up`,
        /// `migration`, `verify`, or `unknown` (recorded before the store kept it).
        package var listener: String?
        package var instance: String?
        package var targetBackend: String?
        package var targetMessage: String?
        package var targetConversation: String?
        package var clientID: String?
        package var reason: String?
        package var note: String?

        package init(_ hop: String, at: Int64?) {
            self.hop = hop
            self.at = at
            self.time = at.map(MessageTrace.time)
        }
    }

    package static func time(_ ms: Int64) -> String {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return formatter.string(from: Date(timeIntervalSince1970: Double(ms) / 1000))
    }

    /// The JSON `imbridge trace --json` prints and `/trace` answers: `{"messages": [...]}`, keys in snake case.
    package static func json(_ traces: [MessageTrace]) throws -> Data {
        let encoder = JSONEncoder()
        encoder.keyEncodingStrategy = .convertToSnakeCase
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        return try encoder.encode(["messages": traces])
    }
}

/// Reads traces from the store.
package struct MessageTracer: Sendable {
    package var routes: [Route]
    /// Now, in ms (a pending retry's wait is shown against it).
    package var now: Int64

    package init(routes: [Route], now: Int64 = Int64(Date().timeIntervalSince1970 * 1000)) {
        self.routes = routes
        self.now = now
    }

    /// The trace of the message `id` (a source or a target id).
    package func trace(_ id: String, _ tx: StoreTransaction) throws -> MessageTrace {
        let mappings = try tx.mappingRecords(of: id)
        // A bridge-created row goes from the source to its copy.
        let created = mappings.filter(\.mapping.bridgeCreated)
        let source = created.first { $0.mapping.fromMessage.rawValue == id } ?? created.first { $0.mapping.toMessage.rawValue == id }
        let sourceID = source?.mapping.fromMessage.rawValue ?? id
        let sourceBackend = source?.mapping.fromBackend
        let copies = sourceBackend.map { backend in
            created.filter { $0.mapping.fromBackend == backend && $0.mapping.fromMessage.rawValue == sourceID }
        } ?? []
        var copyRows = copies
        if sourceID != id {
            // Asked by a copy's id: the source's other copies too.
            copyRows = try tx.mappingRecords(of: sourceID).filter { $0.mapping.bridgeCreated && $0.mapping.fromMessage.rawValue == sourceID }
        }
        let copyKeys = Set(copyRows.map { "\($0.mapping.toBackend.rawValue)\u{1}\($0.mapping.toMessage.rawValue)" })
        let ledger = try tx.ledgerRecords(matching: sourceID).filter { sourceBackend == nil || $0.backend == sourceBackend }
        let entries = try tx.tracedEntries(matching: sourceID).filter { sourceBackend == nil || $0.entry.sourceBackend == sourceBackend }
        let attempts = try tx.attempts(of: entries.map(\.entry.id))
        let held = try tx.leaseOwners(Array(Set(entries.filter { $0.entry.state == .pending }.map(\.entry.lane.leaseName))))
        let poison = try tx.inboundDeadLetters(key: sourceID)
        var echoes: [LedgerRecord] = []
        for copy in copyRows {
            echoes += try tx.ledgerRecords(matching: copy.mapping.toMessage.rawValue)
                .filter { copyKeys.contains("\($0.backend.rawValue)\u{1}\(copy.mapping.toMessage.rawValue)") && $0.backend == copy.mapping.toBackend }
        }

        var hops: [(Int64, Int, MessageTrace.Hop)] = []
        func add(_ hop: MessageTrace.Hop, order: Int) { hops.append((hop.at ?? .max, order, hop)) }
        for letter in poison {
            var hop = MessageTrace.Hop("inbound_dead_letter", at: letter.receivedAt)
            (hop.backend, hop.reason, hop.note) = (letter.backend.rawValue, letter.reason,
                                                   "received but not convertible: kept as in#\(letter.id) (imbridge deadletters retry --inbound \(letter.id))")
            add(hop, order: 0)
        }
        for row in ledger {
            var received = MessageTrace.Hop("received", at: row.receivedAt)
            (received.backend, received.eventID, received.kind) = (row.backend.rawValue, row.eventID.rawValue, row.kind)
            received.traceID = TraceParent.forEvent(backend: row.backend.rawValue, eventID: row.eventID.rawValue).traceID
            Self.origin(row, into: &received)
            add(received, order: 1)
            var recorded = MessageTrace.Hop("recorded", at: row.receivedAt)
            (recorded.backend, recorded.eventID) = (row.backend.rawValue, row.eventID.rawValue)
            recorded.note = "ledger: taken in the intake transaction (a redelivery is a duplicate from here on)"
            add(recorded, order: 2)
        }
        for traced in entries {
            add(planned(traced), order: 3)
            for attempt in attempts where attempt.outboxID == traced.entry.id { add(Self.hop(attempt), order: 4) }
            add(outcome(traced, copies: copyRows, holder: held[traced.entry.lane.leaseName]), order: 5)
        }
        for echo in echoes {
            var hop = MessageTrace.Hop("echo_suppressed", at: echo.receivedAt)
            (hop.backend, hop.eventID) = (echo.backend.rawValue, echo.eventID.rawValue)
            Self.origin(echo, into: &hop)
            hop.note = "the copy's own callback, recognised by the id map and not relayed back"
            add(hop, order: 6)
        }
        let ordered = hops.sorted { ($0.0, $0.1) < ($1.0, $1.1) }.map(\.2)
        return MessageTrace(query: id, sourceBackend: sourceBackend?.rawValue ?? ledger.first?.backend.rawValue, sourceMessage: sourceID,
                            status: Self.status(entries.map(\.entry.state), ledger: !ledger.isEmpty, poison: !poison.isEmpty,
                                                delivered: !copyRows.isEmpty),
                            hops: ordered)
    }

    /// The listener and instance that took a ledger row's event in, and how it came (`EventOrigin`).
    static func origin(_ row: LedgerRecord, into hop: inout MessageTrace.Hop) {
        let unknown = "unknown"
        guard let origin = row.origin else {
            (hop.listener, hop.instance) = (unknown, unknown)
            hop.note = "recorded before the store kept the listener and instance"
            return
        }
        (hop.listener, hop.instance) = (origin.listener, origin.instance.isEmpty ? unknown : origin.instance)
        switch origin.listener {
        case EventOrigin.poll: hop.note = "read by a poller (no callback)"
        case EventOrigin.catchUp: hop.note = "recorded by catch-up: read from the vendor's history, or a callback's held until the gap before it was read"
        case EventOrigin.migration: hop.note = "recorded by a migration that copied it"
        case EventOrigin.verify: hop.note = "recorded by imbridge verify --repair, which queued its missing copy (instance: the host it ran on)"
        default: hop.note = "by a callback to this listener"
        }
    }

    static func status(_ states: [OutboxEntry.State], ledger: Bool, poison: Bool, delivered: Bool) -> String {
        if states.contains(.dead) { return states.contains(.done) ? "partly_delivered" : "dead_lettered" }
        if states.contains(.pending) { return "pending" }
        if !states.isEmpty || delivered { return "delivered" }
        if poison { return "inbound_dead_letter" }
        return ledger ? "recorded" : "not_found"
    }

    func planned(_ traced: TracedEntry) -> MessageTrace.Hop {
        let entry = traced.entry
        var hop = MessageTrace.Hop("planned", at: entry.createdAt)
        (hop.outboxID, hop.lane, hop.action, hop.eventID) = (entry.id, entry.lane.description, entry.kind, entry.sourceEventID.rawValue)
        hop.traceID = TraceParent.forEvent(backend: entry.sourceBackend.rawValue, eventID: entry.sourceEventID.rawValue).traceID
        if let payload = try? OutboxPayload.decode(entry.payload), !entry.payload.isEmpty {
            hop.route = Self.describe(payload.route)
        } else {
            // A done entry's payload is dropped: the configured route that covers its way.
            hop.route = routes.first { Self.covers($0, from: entry.sourceBackend, to: entry.lane) }.map(Self.describe)
            if hop.route != nil { hop.note = "route from the configuration (a delivered entry keeps no payload)" }
        }
        return hop
    }

    func outcome(_ traced: TracedEntry, copies: [MappingRecord], holder: String?) -> MessageTrace.Hop {
        let entry = traced.entry
        switch entry.state {
        case .done:
            var hop = MessageTrace.Hop("delivered", at: traced.finishedAt)
            (hop.outboxID, hop.attempts, hop.targetBackend) = (entry.id, entry.attempts, entry.lane.backend.rawValue)
            hop.clientID = "\(RelayEngine.clientIDPrefix)\(entry.id)"
            if entry.kind == "send", let copy = copies.first(where: { $0.mapping.toBackend == entry.lane.backend }) {
                (hop.targetMessage, hop.targetConversation) = (copy.mapping.toMessage.rawValue, copy.mapping.toConversation.description)
            }
            return hop
        case .dead:
            var hop = MessageTrace.Hop("dead_lettered", at: traced.finishedAt)
            (hop.outboxID, hop.attempts, hop.reason, hop.lane) = (entry.id, entry.attempts, entry.lastError, entry.lane.description)
            hop.note = "imbridge deadletters retry --id \(entry.id) puts it back in its lane"
            return hop
        case .pending:
            var hop = MessageTrace.Hop("held", at: nil)
            (hop.outboxID, hop.lane, hop.attempts, hop.error) = (entry.id, entry.lane.description, entry.attempts, entry.lastError)
            if entry.nextAttemptAt > now { (hop.retryAt, hop.retryInMs) = (entry.nextAttemptAt, entry.nextAttemptAt - now) }
            hop.instance = holder
            hop.reason = entry.nextAttemptAt > now ? "waiting for its next attempt"
                : holder.map { "queued in its lane, which instance \($0) works" } ?? "queued in its lane (entries before it go first)"
            return hop
        }
    }

    static func hop(_ attempt: AttemptRecord) -> MessageTrace.Hop {
        var hop = MessageTrace.Hop("attempt", at: attempt.at)
        (hop.outboxID, hop.attempt, hop.outcome, hop.errorClass) = (attempt.outboxID, attempt.attempt, attempt.outcome.rawValue, attempt.errorClass)
        (hop.errorCode, hop.vendorCode, hop.error, hop.instance) = (attempt.errorCode, attempt.vendorCode, attempt.error, attempt.instance)
        if let retryAt = attempt.retryAt { (hop.retryAt, hop.retryInMs) = (retryAt, max(0, retryAt - attempt.at)) }
        return hop
    }

    static func describe(_ route: Route) -> String {
        "\(route.from) \(route.direction == .both ? "<->" : "->") \(route.to)"
    }

    static func covers(_ route: Route, from source: BackendID, to lane: LaneKey) -> Bool {
        let ends = [(route.from, route.to)] + (route.direction == .both ? [(route.to, route.from)] : [])
        return ends.contains { from, to in
            from.backend == source && to.backend == lane.backend && to.kind == lane.conversation.kind
                && (to.id == nil || to.id == lane.conversation.id)
        }
    }

    /// The messages of `conversation` (on `backend`, when given) around `at`: id-map rows of that
    /// conversation (source or copy side) and outbox entries of its lanes or from it, within `windowMs`.
    package func candidates(in conversation: ConversationRef, on backend: BackendID?, at: Int64, windowMs: Int64,
                            _ tx: StoreTransaction) throws -> [String] {
        let (from, to) = (at - windowMs, at + windowMs)
        var ids: [String] = []
        for row in try tx.mappingRecords(in: conversation, on: backend, from: from, to: to, limit: 200) {
            ids.append(row.mapping.toMessage.rawValue)
        }
        for traced in try tx.tracedEntries(createdFrom: from, to: to, limit: 2000) {
            let entry = traced.entry
            let inLane = entry.lane.conversation == conversation && (backend == nil || entry.lane.backend == backend)
            let fromSource = (try? OutboxPayload.decode(entry.payload))?.sourceConversation == conversation
                && (backend == nil || entry.sourceBackend == backend)
            guard inLane || fromSource, let id = Self.messageID(of: entry.sourceEventID) else { continue }
            ids.append(id)
        }
        var seen = Set<String>()
        return ids.filter { seen.insert($0).inserted }
    }

    /// The message id an event id names (`msg:<id>`, `nim:msg:<id>`, `jmessage:msg:<id>` …): what follows
    /// its last `:`.
    static func messageID(of event: EventID) -> String? {
        guard let colon = event.rawValue.lastIndex(of: ":") else { return event.rawValue }
        let id = String(event.rawValue[event.rawValue.index(after: colon)...])
        return id.isEmpty ? nil : id
    }
}
