import Foundation
import IMCore
import IMHTTP

/// Serves a `SandboxVendor` over real HTTP with the shared `/_sandbox/` namespace in front of it:
///
/// - `GET /_sandbox/messages` → `{"messages":[SandboxMessageRecord…]}`
/// - `GET /_sandbox/users` → `{"users":[…]}`
/// - `POST /_sandbox/reset` → clears the vendor state and the faults
/// - `POST /_sandbox/faults` `{"status","vendor_code","count","path_prefix","after_accept"}` / `{"latency_ms"}`;
///   `DELETE /_sandbox/faults`
/// - `GET /_sandbox/clock` → `{"now_ms"}`; `POST /_sandbox/clock` `{"advance_ms":N}`
/// - anything else under `/_sandbox/` goes to `SandboxVendor.handleSandboxExtra`.
/// Every other request first meets the fault injector, then the vendor.
public final class SandboxServer: Sendable {
    public let vendor: any SandboxVendor
    public let faults: FaultInjector
    public let clock: SandboxClock
    private let server: HTTPServer

    public init(vendor: any SandboxVendor, clock: SandboxClock, faults: FaultInjector = FaultInjector(),
                host: String = "127.0.0.1", port: Int = 0) {
        self.vendor = vendor
        self.faults = faults
        self.clock = clock
        self.server = HTTPServer(host: host, port: port) { [vendor, faults, clock] request in
            await Self.route(request, vendor: vendor, faults: faults, clock: clock)
        }
    }

    @discardableResult
    public func start() async throws -> Int { try await server.start() }
    public func stop() async { await server.stop() }
    public var port: Int? { server.port }
    public var baseURL: String { server.baseURL }

    static func route(_ request: HTTPRequestData, vendor: any SandboxVendor, faults: FaultInjector,
                      clock: SandboxClock) async -> HTTPResponseData {
        let path = request.normalizedPath
        if path.hasPrefix("/_sandbox/") {
            return await introspect(request, path: path, vendor: vendor, faults: faults, clock: clock)
        }
        let latency = faults.latencyMs
        if latency > 0 { try? await Task.sleep(nanoseconds: UInt64(latency) * 1_000_000) }
        if let rule = faults.take(for: path) {
            if rule.afterAccept { _ = await vendor.handle(request) }
            return vendor.faultResponse(status: rule.status, vendorCode: rule.vendorCode)
        }
        return await vendor.handle(request)
    }

    static func introspect(_ request: HTTPRequestData, path: String, vendor: any SandboxVendor, faults: FaultInjector,
                           clock: SandboxClock) async -> HTTPResponseData {
        switch (request.method, path) {
        case ("GET", "/_sandbox/messages"):
            return .json(["messages": await vendor.messages()])
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
        case ("GET", "/_sandbox/clock"):
            return .json(["now_ms": clock.nowMs()])
        case ("POST", "/_sandbox/clock"):
            guard let body = try? JSONValue.parse(Data(request.body)), let advance = body["advance_ms"]?.int64Value, advance >= 0 else {
                return .json(["error": "expected {\"advance_ms\": N} with N ≥ 0"], status: 400)
            }
            clock.advance(byMs: advance)
            return .json(["now_ms": clock.nowMs()])
        default:
            return await vendor.handleSandboxExtra(request) ?? .json(["error": "no sandbox route \(request.method) \(path)"], status: 404)
        }
    }
}
