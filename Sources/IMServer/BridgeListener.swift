import Foundation
import IMAdapterKit
import IMCore
import IMHTTP
import IMRelay
import Logging
import Synchronization
import IMTelemetry

/// The bridge's HTTP side: vendor callbacks at `POST /callbacks/<backend>`, and the operator's endpoints
/// `GET /healthz` (liveness), `GET /readyz` (readiness), `GET /metrics`, and the status page `GET /status`
/// with its JSON twin `GET /status.json` (docs/status-page.md).
///
/// One listener serves both by default; with `admin_listen:` the bridge runs two, one serving only
/// callbacks (`Serves.callbacks`, the address vendors reach) and one only the operator's endpoints
/// (`Serves.admin`); each answers 404 for the other's paths. The status page is also served at `/` of a
/// listener that serves only the operator's endpoints, never at `/` of one that takes callbacks: that
/// address is the one given to the vendors and often public, and its root is what any visitor or
/// scanner requests first (docs/status-page.md, "Where it is served").
///
/// A callback is answered with the vendor's success response only after `RelayEngine.ingest` committed
/// its events; a store failure answers 503 so the vendor redelivers, a forged or malformed callback gets
/// the adapter's refusal and produces nothing.
///
/// The listener can start before the engine exists (`init(host:port:)` then `attach`), so that its
/// callback URLs are known when the backends (or sandboxes) that post to it are created; until
/// `attach`, every request gets 503 and vendors redeliver.
public final class BridgeListener: Sendable {
    /// Which endpoints a listener answers.
    public struct Serves: OptionSet, Sendable {
        public let rawValue: Int
        public init(rawValue: Int) { self.rawValue = rawValue }
        /// `POST /callbacks/<backend>`.
        public static let callbacks = Serves(rawValue: 1)
        /// `/healthz`, `/readyz`, `/metrics`, `/status`, `/status.json` (and `/` when alone).
        public static let admin = Serves(rawValue: 2)
        public static let all: Serves = [.callbacks, .admin]
    }

    final class Slot: Sendable {
        let handler = Mutex<Handler?>(nil)
    }
    let slot = Slot()
    let server: HTTPServer

    /// `logger`: for the HTTP server's own lines (Hummingbird's); nil keeps only its warnings and errors.
    /// `limits`: timeouts and the connection cap (`listener:` in bridge.yaml); a callback's head is
    /// checked by its receiver (`InboundHandling.admit`) before its body is read, and the body is
    /// capped at the receiver's size.
    public init(host: String, port: Int, logger: Logger? = nil, limits: ListenerLimits = ListenerLimits()) {
        let slot = self.slot
        self.server = HTTPServer(host: host, port: port, logger: logger, limits: limits, admit: { head in
            guard let current = slot.handler.withLock({ $0 }) else { return .answer(.text("bridge starting", status: 503)) }
            return await current.admit(head)
        }) { request in
            guard let current = slot.handler.withLock({ $0 }) else { return .text("bridge starting", status: 503) }
            return await current.handle(request)
        }
    }

    public convenience init(engine: RelayEngine, receivers: [BackendID: any InboundHandling], host: String, port: Int) {
        self.init(host: host, port: port)
        attach(engine: engine, receivers: receivers)
    }

    /// Starts answering with `engine`: `/callbacks/<name>` goes to `receivers[name]`, which pushes
    /// into the engine.
    /// `serves` chooses the endpoints this listener answers (the others get 404); `readiness` when
    /// `/readyz` counts a failing backend as down; `status` what the status page adds from the configuration.
    public func attach(engine: RelayEngine, receivers: [BackendID: any InboundHandling], serves: Serves = .all,
                       readiness: ReadinessPolicy = ReadinessPolicy(), status: StatusContext = StatusContext()) {
        let byName = Dictionary(receivers.map { ($0.key.rawValue, $0.value) }, uniquingKeysWith: { first, _ in first })
        let server = self.server
        slot.handler.withLock {
            $0 = Handler(engine: engine, receivers: byName, serves: serves, readiness: readiness, status: status, listener: { server.baseURL })
        }
    }

    @discardableResult
    public func start() async throws -> Int { try await server.start() }
    public func stop() async { await server.stop() }
    public var baseURL: String { server.baseURL }
    /// The bound port once started.
    public var port: Int? { server.port }

    /// The URL a vendor (or sandbox) should deliver `backend`'s callbacks to.
    public func callbackURL(for backend: BackendID) -> String { "\(server.baseURL)/callbacks/\(backend)" }

    struct Handler: Sendable {
        let engine: RelayEngine
        let receivers: [String: any InboundHandling]
        var serves: Serves = .all
        var readiness = ReadinessPolicy()
        var status = StatusContext()
        /// This listener's address, kept on the ledger rows of its callbacks' events and named by the
        /// callback spans (`imbridge.listener`).
        var listener: @Sendable () -> String = { "" }

        /// The operator's endpoints take no body worth reading: 64 KiB at most.
        static let adminMaxBodyBytes = 64 << 10

        /// Before the body: a callback's receiver checks the head (`InboundHandling.admit`); an unknown
        /// path or backend is answered at once.
        func admit(_ head: HTTPRequestData) async -> BodyAdmission {
            let path = head.normalizedPath
            guard serves.contains(.callbacks), path.hasPrefix("/callbacks/") else { return .read(upTo: Self.adminMaxBodyBytes) }
            let name = String(path.dropFirst("/callbacks/".count))
            guard let receiver = receivers[name] else { return .answer(.text("no callback receiver for backend '\(name)'", status: 404)) }
            return await receiver.admit(head, sink: engine)
        }

        func handle(_ request: HTTPRequestData) async -> HTTPResponseData {
            let path = request.normalizedPath
            switch (request.method, path) {
            case _ where !serves.contains(.admin):
                break
            case ("GET", "/healthz"):
                return await health()
            case ("GET", "/readyz"):
                return await ready()
            case ("GET", "/status"):
                return await statusPage()
            case ("GET", "/") where serves == .admin:
                // Only alone: not at the root of the address the vendors post to (docs/status-page.md).
                return await statusPage()
            case ("GET", "/status.json"):
                return await statusJSON()
            case ("GET", "/trace"):
                return await TracePage.answer(request, engine: engine)
            case ("GET", "/metrics"):
                // The backends' failing times, the outbox gauges read from the store, then the registry renders.
                let now = engine.clock.nowMs()
                engine.metrics.setBackendHealth(engine.health.snapshot, now: now)
                let down = !engine.health.down(at: now, thresholdMs: readiness.backendFailingMs).isEmpty
                var response = HTTPResponseData.text(await engine.metrics.scrape(store: engine.store, now: now, backendsDown: down))
                response.headers = [("Content-Type", "text/plain; version=0.0.4; charset=utf-8")]
                return response
            default:
                break
            }
            guard serves.contains(.callbacks), path.hasPrefix("/callbacks/") else { return .text("not found", status: 404) }
            let name = String(path.dropFirst("/callbacks/".count))
            guard let receiver = receivers[name] else { return .text("no callback receiver for backend '\(name)'", status: 404) }
            engine.metrics.increment("imbridge_callbacks_total", ["backend": name])
            // The callback's arrival: this listener is kept on its events' ledger rows, and with spans on
            // their `imbridge.callback` spans start at it (`MessageSpans`).
            return await MessageSpans.Arrival.$current.withValue(MessageSpans.Arrival(listener: listener())) {
                await receiver.handle(request, sink: engine)
            }
        }

        /// Readiness: 200 `{"status":"ready"}` when a write to the store commits and no backend has been
        /// failing for `readiness.backendFailingMs`; otherwise 503 with `status: "not_ready"` and every
        /// reason (`store_unwritable`, `store_stuck` — no answer within 0.9 s —, `backend_failing`) and the backends concerned. Like `/healthz` it
        /// names error classes, never a store's or vendor's message.
        func ready() async -> HTTPResponseData {
            struct Body: Encodable {
                var status: String
                var reasons: [String]
                var failingBackends: [String]
                var backendFailingThresholdMs: Int64?
                var backends: [String: HealthBoard.Entry]
                enum CodingKeys: String, CodingKey {
                    case status, reasons, backends
                    case failingBackends = "failing_backends"
                    case backendFailingThresholdMs = "backend_failing_threshold_ms"
                }
            }
            let (reasons, down) = await notReadyReasons(now: engine.clock.nowMs())
            let body = Body(status: reasons.isEmpty ? "ready" : "not_ready", reasons: reasons, failingBackends: down,
                            backendFailingThresholdMs: readiness.backendFailingMs, backends: engine.health.snapshot)
            return .json(body, status: reasons.isEmpty ? 200 : 503)
        }

        /// Why the bridge is not ready now (none: ready), and the backends failing past the threshold.
        func notReadyReasons(now: Int64) async -> (reasons: [String], down: [String]) {
            var reasons: [String] = []
            // A real write, answered within a second even when the store is stuck (`RelayEngine.probeStore`).
            switch await engine.probeStore() {
            case .writable: break
            case .unwritable: reasons.append("store_unwritable")
            case .stuck: reasons.append("store_stuck")
            }
            let down = engine.health.down(at: now, thresholdMs: readiness.backendFailingMs)
            if !down.isEmpty { reasons.append("backend_failing") }
            return (reasons, down)
        }

        /// The status page: HTML rendered on the server, no script; the page may only load inline styles
        /// (`Content-Security-Policy`), so even a value that escaped escaping could run nothing.
        func statusPage() async -> HTTPResponseData {
            let report = await StatusReport.collect(engine: engine, context: status, readiness: readiness)
            return HTTPResponseData(status: 200, headers: [
                ("Content-Type", "text/html; charset=utf-8"),
                ("Cache-Control", "no-store"),
                ("X-Content-Type-Options", "nosniff"),
                ("Content-Security-Policy", StatusPage.contentSecurityPolicy),
            ], body: Array(StatusPage.html(report, refreshSeconds: status.refreshSeconds).utf8))
        }

        func statusJSON() async -> HTTPResponseData {
            let report = await StatusReport.collect(engine: engine, context: status, readiness: readiness)
            guard let body = try? report.json() else { return .json(["status": "unavailable"], status: 500) }
            var response = HTTPResponseData.json(body)
            response.headers.append(("Cache-Control", "no-store"))
            return response
        }

        func health() async -> HTTPResponseData {
            struct Body: Encodable {
                var status: String
                var backends: [String: HealthBoard.Entry]
                var pending: Int
                var deadLetters: Int
                enum CodingKeys: String, CodingKey {
                    case status, backends, pending
                    case deadLetters = "dead_letters"
                }
            }
            do {
                let (pending, dead, oldest) = try await engine.store.reading {
                    (try $0.count(state: .pending), try $0.count(state: .dead), try $0.oldestPendingByTarget())
                }
                let now = engine.clock.nowMs()
                var backends = engine.health.snapshot
                for (backend, created) in oldest { backends[backend.rawValue, default: HealthBoard.Entry.unknown].oldestPendingAgeMs = max(0, now - created) }
                let status = backends.values.contains { $0.state == "degraded" } ? "degraded" : "ok"
                return .json(Body(status: status, backends: backends, pending: pending, deadLetters: dead))
            } catch {
                // The store's error text may name a PostgreSQL host: only its kind is shown.
                return .json(["status": "store_unavailable"], status: 503)
            }
        }
    }
}
