import Foundation
import IMCore
import IMHTTP
import Synchronization

/// Serves a `SandboxVendor` over real HTTP with the shared `/_sandbox/` namespace in front of it:
///
/// - `GET /_sandbox/messages` → `{"messages":[SandboxMessageRecord…]}`; `?from=N` leaves out the first N (a
///   reader that keeps what it read asks only for the rest)
/// - `GET /_sandbox/users` → `{"users":[…]}`
/// - `POST /_sandbox/reset` → clears the vendor state and the faults
/// - `POST /_sandbox/faults` `{"status","vendor_code","count","path_prefix","method","body_contains","after_accept","retry_after","echo","echo_headers","hold_ms"}`,
///   `{"hold_ms","count","path_prefix","method","body_contains"}` (the vendor's own answer, held back) /
///   `{"latency_ms"}`; `DELETE /_sandbox/faults`
/// - `GET /_sandbox/clock` → `{"now_ms"}`; `POST /_sandbox/clock` `{"advance_ms":N}` (forward) or
///   `{"skew_ms":N}` (either way: a vendor clock skewed against the bridge's, `SandboxClock.skew`)
/// - `POST /_sandbox/callbacks` `{"redeliver":N,"twice":N,"swap":N,"delay":N,"delay_ms":M}` → arms the next
///   N callback batches to be delivered again after a success, twice at once, after the batch behind them,
///   or M ms late with all behind them; `{"drop_ms":M}` loses every batch that comes up for M ms
///   (`CallbackMisbehaviour`); answers what is armed; 404 where the sandbox sends no callbacks
/// - `POST /_sandbox/drift` `{"op","id",…}` → plants drift on a stored message (`SandboxDrift`)
/// - `POST /_sandbox/groups` `{"id","owner","members","name"}` → seeds a group under a chosen id
///   (`SandboxGroupSeed`; test-only control)
/// - `GET /_sandbox/traceparents` → `{"requests":[{"method","path","traceparent"}…]}`: the `traceparent`
///   header of each vendor request received, the last 500 (`TraceContextLog`)
/// - anything else under `/_sandbox/` goes to `SandboxVendor.handleSandboxExtra`.
/// Every other request first meets the fault injector, then the vendor.
///
/// `refuseConnections()` / `acceptConnections()` take the whole server off the network and back on the
/// same port (a vendor endpoint that is down: connections refused, not answered with an error). A server
/// that will refuse is best started on a port outside the ephemeral range (`LoopbackPorts`): a port-0
/// one may meanwhile become some client socket's local port.
public final class SandboxServer: Sendable {
    public let vendor: any SandboxVendor
    public let faults: FaultInjector
    public let clock: SandboxClock
    /// The trace context of each vendor request (`GET /_sandbox/traceparents`).
    public let traceContexts: TraceContextLog
    private let host: String
    private let handler: HTTPServer.Handler
    /// The listener; replaced by a new one on the same port when connections are accepted again.
    private let server: Mutex<(listener: HTTPServer, refusing: Bool)>

    public init(vendor: any SandboxVendor, clock: SandboxClock, faults: FaultInjector = FaultInjector(),
                host: String = "127.0.0.1", port: Int = 0) {
        self.vendor = vendor
        self.faults = faults
        self.clock = clock
        self.host = host
        let traceContexts = TraceContextLog()
        self.traceContexts = traceContexts
        let handler: HTTPServer.Handler = { [vendor, faults, clock, traceContexts] request in
            if request.normalizedPath == "/_sandbox/traceparents" { return .json(traceContexts.json) }
            if !request.normalizedPath.hasPrefix("/_sandbox/") { traceContexts.note(request) }
            return await Self.route(request, vendor: vendor, faults: faults, clock: clock)
        }
        self.handler = handler
        self.server = Mutex((HTTPServer(host: host, port: port, handler: handler), false))
    }

    @discardableResult
    public func start() async throws -> Int { try await server.withLock { $0.listener }.start() }
    public func stop() async { await server.withLock { $0.listener }.stop() }
    public var port: Int? { server.withLock { $0.listener.port } }
    public var baseURL: String { server.withLock { $0.listener.baseURL } }

    /// Closes the listener (requests in flight finish): new connections are refused until
    /// `acceptConnections()`. The vendor's state, faults and outgoing callbacks are untouched.
    public func refuseConnections() async {
        let listener = server.withLock { state -> HTTPServer? in
            guard !state.refusing else { return nil }
            state.refusing = true
            return state.listener
        }
        await listener?.stop()
    }

    /// Listens again on the port the server had (a no-op when it was not refusing).
    public func acceptConnections() async throws {
        let (wasRefusing, port) = server.withLock { ($0.refusing, $0.listener.port) }
        guard wasRefusing, let port else { return }
        let listener = HTTPServer(host: host, port: port, handler: handler)
        // The old socket may linger for a moment after close; try again briefly.
        var attempt = 0
        while true {
            do {
                try await listener.start()
                break
            } catch {
                attempt += 1
                if attempt >= 50 { throw error }
                try await Task.sleep(nanoseconds: 100_000_000)
            }
        }
        server.withLock { $0 = (listener, false) }
    }

    static func route(_ request: HTTPRequestData, vendor: any SandboxVendor, faults: FaultInjector,
                      clock: SandboxClock) async -> HTTPResponseData {
        let path = request.normalizedPath
        if path.hasPrefix("/_sandbox/") {
            return await introspect(request, path: path, vendor: vendor, faults: faults, clock: clock)
        }
        let latency = faults.latencyMs
        if latency > 0 { try? await Task.sleep(nanoseconds: UInt64(latency) * 1_000_000) }
        if let rule = faults.take(for: path, method: request.method, body: request.body) {
            let hold = { if let ms = rule.holdMs, ms > 0 { try? await Task.sleep(nanoseconds: UInt64(ms) * 1_000_000) } }
            if rule.status == 0 {
                let answer = await vendor.handle(request)
                await hold()
                return answer
            }
            if rule.afterAccept { _ = await vendor.handle(request) }
            await hold()
            return rule.applyEcho(of: request, to: rule.applyRetryAfter(to: vendor.faultResponse(status: rule.status, vendorCode: rule.vendorCode)))
        }
        return await vendor.handle(request)
    }

    static func introspect(_ request: HTTPRequestData, path: String, vendor: any SandboxVendor, faults: FaultInjector,
                           clock: SandboxClock) async -> HTTPResponseData {
        switch (request.method, path) {
        case ("GET", "/_sandbox/messages"):
            let from = request.rawQuery.flatMap { query in
                query.split(separator: "&").lazy.compactMap { $0.hasPrefix("from=") ? Int($0.dropFirst(5)) : nil }.first
            } ?? 0
            return .json(["messages": Array(await vendor.messages().dropFirst(max(0, from)))])
        case ("GET", "/_sandbox/users"):
            return .json(["users": await vendor.users()])
        case ("POST", "/_sandbox/reset"):
            await vendor.reset()
            faults.clear()
            return .json(["ok": true])
        case ("POST", "/_sandbox/faults"):
            do {
                try faults.configure(try JSONValue.parse(request.body.isEmpty ? Data("{}".utf8) : Data(request.body)))
                return .json(["ok": true])
            } catch {
                return .json(["error": "\(error)"], status: 400)
            }
        case ("DELETE", "/_sandbox/faults"):
            faults.clear()
            return .json(["ok": true])
        case ("POST", "/_sandbox/drift"):
            let parsed = (try? JSONValue.parse(Data(request.body))).map(SandboxDrift.parse)
                ?? .failure(.badRequest("expected a JSON object"))
            do throws(SandboxDrift.DriftError) {
                let id = try await vendor.plantDrift(try parsed.get())
                return .json(["ok": .bool(true), "id": .string(id)] as [String: JSONValue])
            } catch {
                return .json(["error": error.response.error], status: error.response.status)
            }
        case ("POST", "/_sandbox/groups"):
            let parsed = (try? JSONValue.parse(Data(request.body))).map(SandboxGroupSeed.parse)
                ?? .failure(.badRequest("expected a JSON object"))
            do throws(SandboxGroupSeed.SeedError) {
                let seed = try parsed.get()
                try await vendor.seedGroup(seed)
                return .json(["ok": .bool(true), "id": .string(seed.id)] as [String: JSONValue])
            } catch {
                return .json(["error": error.answer.error], status: error.answer.status)
            }
        case ("GET", "/_sandbox/clock"):
            return .json(["now_ms": clock.nowMs()])
        case ("POST", "/_sandbox/clock"):
            let body = try? JSONValue.parse(Data(request.body))
            if let skew = body?["skew_ms"]?.int64Value {
                clock.skew(byMs: skew)
                return .json(["now_ms": clock.nowMs()])
            }
            guard let advance = body?["advance_ms"]?.int64Value, advance >= 0 else {
                return .json(["error": "expected {\"advance_ms\": N} with N ≥ 0, or {\"skew_ms\": N}"], status: 400)
            }
            clock.advance(byMs: advance)
            return .json(["now_ms": clock.nowMs()])
        case ("POST", "/_sandbox/callbacks"):
            guard let misbehaviour = vendor.callbackMisbehaviour else {
                return .json(["error": "this sandbox sends no callbacks"], status: 404)
            }
            do {
                try misbehaviour.arm(try JSONValue.parse(request.body.isEmpty ? Data("{}".utf8) : Data(request.body)))
                let armed = misbehaviour.armed
                return .json(["redeliver": armed.redeliver, "twice": armed.twice, "swap": armed.swap, "delay": armed.delay])
            } catch {
                return .json(["error": "\(error)"], status: 400)
            }
        default:
            return await vendor.handleSandboxExtra(request) ?? .json(["error": "no sandbox route \(request.method) \(path)"], status: 404)
        }
    }
}
