import Foundation
import IMCore
import IMHTTP
import Synchronization

/// The bridge's HTTP side: vendor callbacks at `POST /callbacks/<backend>`, `GET /healthz`, `GET /metrics`.
///
/// A callback is answered with the vendor's success response only after `RelayEngine.ingest` committed
/// its events; a store failure answers 503 so the vendor redelivers, a forged or malformed callback gets
/// the adapter's refusal and produces nothing.
///
/// The listener can start before the engine exists (`init(host:port:)` then `attach`), so that its
/// callback URLs are known when the backends (or sandboxes) that post to it are created; until
/// `attach`, every request gets 503 and vendors redeliver.
public final class BridgeListener: Sendable {
    final class Slot: Sendable {
        let handler = Mutex<Handler?>(nil)
    }
    let slot = Slot()
    let server: HTTPServer

    public init(host: String, port: Int) {
        let slot = self.slot
        self.server = HTTPServer(host: host, port: port) { request in
            guard let current = slot.handler.withLock({ $0 }) else { return .text("bridge starting", status: 503) }
            return await current.handle(request)
        }
    }

    public convenience init(engine: RelayEngine, backends: [any IMBackend], host: String, port: Int) {
        self.init(host: host, port: port)
        attach(engine: engine, backends: backends)
    }

    /// Starts answering with `engine`, receiving callbacks for the backends that take them.
    public func attach(engine: RelayEngine, backends: [any IMBackend]) {
        var receivers: [String: any CallbackReceiving] = [:]
        for backend in backends {
            if let receiver = backend as? any CallbackReceiving { receivers[backend.id.rawValue] = receiver }
        }
        slot.handler.withLock { $0 = Handler(engine: engine, receivers: receivers) }
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
        let receivers: [String: any CallbackReceiving]

        func handle(_ request: HTTPRequestData) async -> HTTPResponseData {
            let path = request.normalizedPath
            switch (request.method, path) {
            case ("GET", "/healthz"):
                return health()
            case ("GET", "/metrics"):
                var response = HTTPResponseData.text(engine.metrics.prometheusText())
                response.headers = [("Content-Type", "text/plain; version=0.0.4; charset=utf-8")]
                return response
            default:
                break
            }
            guard path.hasPrefix("/callbacks/") else { return .text("not found", status: 404) }
            let name = String(path.dropFirst("/callbacks/".count))
            guard let receiver = receivers[name] else { return .text("no callback receiver for backend '\(name)'", status: 404) }
            let outcome: CallbackOutcome
            do {
                outcome = try await receiver.receiveCallback(request)
            } catch let error as IMError {
                engine.metrics.increment("imbridge_callbacks_refused_total", ["backend": name, "code": error.code.rawValue])
                return receiver.callbackFailureResponse(for: error)
            } catch {
                return receiver.callbackFailureResponse(for: IMError(.malformedPayload, "\(error)"))
            }
            do {
                try await engine.ingestGrouped(outcome.events)
                return outcome.response
            } catch {
                engine.metrics.increment("imbridge_ingest_errors_total")
                return .text("store unavailable: \(error)", status: 503)
            }
        }

        func health() -> HTTPResponseData {
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
                let (pending, dead) = try engine.store.read { (try $0.count(state: .pending), try $0.count(state: .dead)) }
                let backends = engine.health.snapshot
                let status = backends.values.contains { $0.state == "degraded" } ? "degraded" : "ok"
                return .json(Body(status: status, backends: backends, pending: pending, deadLetters: dead))
            } catch {
                return .json(["status": "store_unavailable", "error": "\(error)"], status: 503)
            }
        }
    }
}
