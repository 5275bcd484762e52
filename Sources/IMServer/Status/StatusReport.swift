import Foundation
import IMCore
import IMMapping
import IMRelay
import IMStore
import IMTelemetry

/// What the bridge knows about a backend beyond its name, from the configuration: its adapter and the
/// vendor addresses it talks to, without credentials (`StatusContext.publicURL`).
public struct StatusBackendInfo: Sendable, Equatable {
    public var adapter: String
    public var endpoints: [String]
    public init(adapter: String, endpoints: [String] = []) {
        self.adapter = adapter
        self.endpoints = endpoints.map(StatusContext.publicURL)
    }
}

/// The configuration-side facts the status page shows (the engine knows the rest), and how many rows
/// of each list it shows.
public struct StatusContext: Sendable, Equatable {
    public var backends: [String: StatusBackendInfo]
    /// Rows of the lane table and of each dead-letter table (newest first); the totals are always shown.
    public var lanesShown: Int
    public var deadLettersShown: Int
    /// Seconds between the page's own reloads (`<meta http-equiv="refresh">`).
    public var refreshSeconds: Int

    public init(backends: [String: StatusBackendInfo] = [:], lanesShown: Int = 20, deadLettersShown: Int = 20, refreshSeconds: Int = 10) {
        self.backends = backends
        self.lanesShown = lanesShown
        self.deadLettersShown = deadLettersShown
        self.refreshSeconds = refreshSeconds
    }

    /// `url` as the page may show it: scheme, host, port and path only. User info (`user:password@`),
    /// the query (vendors' signatures and tokens travel there) and the fragment are removed; text that is
    /// not a URL with a host is replaced by `(not a URL)`.
    public static func publicURL(_ url: String) -> String {
        guard var parts = URLComponents(string: url.trimmingCharacters(in: .whitespaces)), parts.host?.isEmpty == false else {
            return "(not a URL)"
        }
        parts.user = nil
        parts.password = nil
        parts.query = nil
        parts.fragment = nil
        return parts.string ?? "(not a URL)"
    }

    /// An error text as the page may show it: the user info of any `scheme://user:password@` in it (to
    /// the last `@`: a password may hold one) and credential-like query values replaced by `***`
    /// (`Redaction.text`), and cut to `limit` characters. Vendors' error texts and conversation ids are
    /// otherwise shown as they are, HTML-escaped by the template.
    public static func publicReason(_ text: String, limit: Int = 400) -> String {
        let redacted = Redaction.text(text)
        return redacted.count > limit ? String(redacted.prefix(limit)) + "…" : redacted
    }
}

/// The bridge's state at one moment: what `/status.json` returns and `/status` renders
/// (docs/status-page.md lists every key). Keys are snake_case and always present; a value that is not
/// known is `null`.
public struct StatusReport: Codable, Sendable, Equatable {
    public struct Build: Codable, Sendable, Equatable {
        public var version: String
        public var commit: String
    }

    public struct Store: Codable, Sendable, Equatable {
        public var kind: String
        /// A file path, or a PostgreSQL URL with its password as `***`.
        public var location: String
        /// False when the reads below failed; the counts are then 0 and the lists empty.
        public var up: Bool
        public var pending: Int
        public var lanesWithWork: Int
        public var deadLetters: Int
        public var inboundDeadLetters: Int
    }

    public struct Backend: Codable, Sendable, Equatable {
        public var name: String
        public var adapter: String?
        public var endpoints: [String]
        /// `unknown` (no call yet), `ok`, `degraded` (calls fail and are retried) — as `/healthz`.
        public var state: String
        /// Failing for longer than `readiness.backend_failing` (what makes `/readyz` answer 503).
        public var down: Bool
        public var lastErrorClass: String?
        public var lastSuccessMs: Int64?
        /// The last sign of life the backend gave on its own: a callback that verified, a poll it answered.
        public var lastHeardMs: Int64?
        public var lastFailureMs: Int64?
        public var failingSinceMs: Int64?
        /// Pending outbox entries with this backend as target.
        public var pending: Int
        public var oldestPendingAgeMs: Int64?

        enum CodingKeys: String, CodingKey {
            case name, adapter, endpoints, state, down, lastErrorClass, lastSuccessMs, lastHeardMs, lastFailureMs, failingSinceMs, pending, oldestPendingAgeMs
        }

        public func encode(to encoder: any Encoder) throws {
            // Written out so that unknown values are `null`, not missing keys.
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(name, forKey: .name)
            try container.encode(adapter, forKey: .adapter)
            try container.encode(endpoints, forKey: .endpoints)
            try container.encode(state, forKey: .state)
            try container.encode(down, forKey: .down)
            try container.encode(lastErrorClass, forKey: .lastErrorClass)
            try container.encode(lastSuccessMs, forKey: .lastSuccessMs)
            try container.encode(lastHeardMs, forKey: .lastHeardMs)
            try container.encode(lastFailureMs, forKey: .lastFailureMs)
            try container.encode(failingSinceMs, forKey: .failingSinceMs)
            try container.encode(pending, forKey: .pending)
            try container.encode(oldestPendingAgeMs, forKey: .oldestPendingAgeMs)
        }
    }

    public struct RouteInfo: Codable, Sendable, Equatable {
        public var from: String
        public var to: String
        /// `both` or `forward`.
        public var direction: String
        public var media: String
    }

    public struct Lane: Codable, Sendable, Equatable {
        /// `<target backend>/<kind>:<conversation id>`.
        public var lane: String
        public var target: String
        public var conversation: String
        public var depth: Int
        public var oldestAgeMs: Int64
    }

    public struct Lanes: Codable, Sendable, Equatable {
        /// Lanes with pending work in all; `top` holds at most `shown_limit` of them, the oldest pending entry first.
        public var total: Int
        public var shownLimit: Int
        public var top: [Lane]
    }

    public struct OutboundDeadLetter: Codable, Sendable, Equatable {
        public var id: Int64
        public var target: String
        public var conversation: String
        public var kind: String
        public var sourceBackend: String
        public var sourceEventId: String
        public var attempts: Int
        public var reason: String
        public var createdAtMs: Int64
    }

    public struct InboundDeadLetter: Codable, Sendable, Equatable {
        public var id: Int64
        public var backend: String
        public var key: String
        public var format: String
        public var reason: String
        public var receivedAtMs: Int64
        public var retries: Int
    }

    public struct DeadLetters: Codable, Sendable, Equatable {
        public var shownLimit: Int
        public var outboundTotal: Int
        public var inboundTotal: Int
        /// Newest first.
        public var outbound: [OutboundDeadLetter]
        public var inbound: [InboundDeadLetter]
    }

    public struct Minute: Codable, Sendable, Equatable {
        public var startMs: Int64
        public var eventsIn: Int
        public var relayed: Int
        public var retries: Int
        public var deadLetters: Int
        public var inboundDeadLetters: Int
        public var refused: Int
    }

    public struct Activity: Codable, Sendable, Equatable {
        public var minuteMs: Int64
        /// Oldest first; the last is the current, unfinished minute.
        public var minutes: [Minute]
    }

    /// Scheduled audits (`verify:`, docs/verify.md): whether they run here, and the last one's result.
    public struct Audit: Codable, Sendable, Equatable {
        public var enabled: Bool
        /// Nil until the first audit has finished.
        public var last: VerifyAuditSummary?

        enum CodingKeys: String, CodingKey { case enabled, last }

        public func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(enabled, forKey: .enabled)
            try container.encode(last, forKey: .last)
        }
    }

    public var generatedAtMs: Int64
    public var startedAtMs: Int64
    public var build: Build
    /// This instance's lease owner name (`ha.instance` and a unique suffix).
    public var instance: String
    public var leader: Bool
    public var store: Store
    public var backends: [Backend]
    public var routes: [RouteInfo]
    public var lanes: Lanes
    public var deadLetters: DeadLetters
    public var activity: Activity
    public var audit: Audit

    static let encoder: JSONEncoder = {
        let encoder = JSONEncoder()
        encoder.keyEncodingStrategy = .convertToSnakeCase
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return encoder
    }()

    static let decoder: JSONDecoder = {
        let decoder = JSONDecoder()
        decoder.keyDecodingStrategy = .convertFromSnakeCase
        return decoder
    }()

    /// The JSON text of `/status.json`.
    public func json() throws -> Data { try Self.encoder.encode(self) }

    /// Reads a `/status.json` body.
    public static func decode(_ data: Data) throws -> StatusReport { try decoder.decode(StatusReport.self, from: data) }
}

extension StatusReport {
    /// Reads the engine's state now: the health board, the routes, the last minutes' activity, and from
    /// the store the outbox per target, the `context.lanesShown` lanes whose oldest entry is oldest and
    /// the newest dead letters. Cost: two grouped scans of the pending entries, two short index reads.
    public static func collect(engine: RelayEngine, context: StatusContext, readiness: ReadinessPolicy) async -> StatusReport {
        let now = engine.clock.nowMs()
        let build = MappingSet.buildVersion
        var store = Store(kind: engine.store.kind.rawValue, location: StoreLocation.redact(engine.store.location), up: true, pending: 0,
                          lanesWithWork: 0, deadLetters: 0, inboundDeadLetters: 0)
        struct Read: Sendable {
            var depths: [(String, Int)] = []
            var oldest: [BackendID: Int64] = [:]
            var lanes: [LaneSummary] = []
            var dead = 0, inboundDead = 0
            var outbound: [OutboxEntry] = []
            var inbound: [IMStore.InboundDeadLetter] = []
        }
        let (lanesShown, lettersShown) = (context.lanesShown, context.deadLettersShown)
        let read = try? await engine.store.reading { tx in
            Read(depths: try tx.laneDepths().map { ($0.key, $0.value) }, oldest: try tx.oldestPendingByTarget(),
                 lanes: try tx.laneSummaries(limit: lanesShown), dead: try tx.count(state: .dead),
                 inboundDead: try tx.inboundDeadLetterCount(), outbound: try tx.recentDeadLetters(limit: lettersShown),
                 inbound: try tx.recentInboundDeadLetters(limit: lettersShown))
        }
        var pendingByTarget: [String: Int] = [:]
        for (lane, depth) in read?.depths ?? [] {
            pendingByTarget[String(lane.prefix { $0 != "/" }), default: 0] += depth   // "<target>/<conversation>"
            store.pending += depth
            store.lanesWithWork += 1
        }
        let oldestByTarget = Dictionary(uniqueKeysWithValues: (read?.oldest ?? [:]).map { ($0.key.rawValue, $0.value) })
        let (lanes, outbound, inbound) = (read?.lanes ?? [], read?.outbound ?? [], read?.inbound ?? [])
        store.deadLetters = read?.dead ?? 0
        store.inboundDeadLetters = read?.inboundDead ?? 0
        if read == nil { store.up = false }

        let health = engine.health.snapshot
        let down = Set(engine.health.down(at: now, thresholdMs: readiness.backendFailingMs))
        let names = Set(health.keys).union(context.backends.keys).union(pendingByTarget.keys).sorted()
        let backends = names.map { name -> Backend in
            let entry = health[name] ?? HealthBoard.Entry.unknown
            return Backend(name: name, adapter: context.backends[name]?.adapter, endpoints: context.backends[name]?.endpoints ?? [],
                           state: entry.state, down: down.contains(name), lastErrorClass: entry.lastErrorClass,
                           lastSuccessMs: entry.lastSuccessMs, lastHeardMs: entry.lastHeardMs, lastFailureMs: entry.lastFailureMs, failingSinceMs: entry.failingSinceMs,
                           pending: pendingByTarget[name] ?? 0, oldestPendingAgeMs: oldestByTarget[name].map { max(0, now - $0) })
        }
        let routes = engine.routes.routes.map { route in
            RouteInfo(from: route.from.description, to: route.to.description, direction: route.direction.rawValue, media: route.media.rawValue)
        }
        let minutes = engine.metrics.activity.recent().map { minute in
            Minute(startMs: minute.startMs, eventsIn: minute[.eventsIn], relayed: minute[.relayed], retries: minute[.retries],
                   deadLetters: minute[.deadLetters], inboundDeadLetters: minute[.inboundDeadLetters], refused: minute[.refused])
        }
        return StatusReport(
            generatedAtMs: now, startedAtMs: engine.metrics.startedAtMs, build: Build(version: build.version, commit: build.commit),
            instance: engine.lease.owner, leader: engine.leadership.isLeader, store: store, backends: backends, routes: routes,
            lanes: Lanes(total: store.lanesWithWork, shownLimit: context.lanesShown, top: lanes.map { summary in
                Lane(lane: summary.lane.description, target: summary.lane.backend.rawValue, conversation: summary.lane.conversation.description,
                     depth: summary.depth, oldestAgeMs: max(0, now - summary.oldestCreatedAt))
            }),
            deadLetters: DeadLetters(
                shownLimit: context.deadLettersShown, outboundTotal: store.deadLetters, inboundTotal: store.inboundDeadLetters,
                outbound: outbound.map { entry in
                    OutboundDeadLetter(id: entry.id, target: entry.lane.backend.rawValue, conversation: entry.lane.conversation.description,
                                       kind: entry.kind, sourceBackend: entry.sourceBackend.rawValue, sourceEventId: entry.sourceEventID.rawValue,
                                       attempts: entry.attempts, reason: StatusContext.publicReason(entry.lastError ?? ""), createdAtMs: entry.createdAt)
                },
                inbound: inbound.map { letter in
                    InboundDeadLetter(id: letter.id, backend: letter.backend.rawValue, key: letter.key, format: letter.format,
                                      reason: StatusContext.publicReason(letter.reason), receivedAtMs: letter.receivedAt, retries: letter.retries)
                }),
            activity: Activity(minuteMs: ActivityLog.minuteMs, minutes: minutes),
            audit: Audit(enabled: engine.metrics.verifyAudit.enabled, last: engine.metrics.verifyAudit.last))
    }
}
