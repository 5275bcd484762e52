import Foundation
import IMCore
import IMHTTP
import Synchronization

/// The load balancer in front of the instances: callback N goes to instance N mod count; an instance
/// that does not answer within 1 s is passed over (the next one gets the callback) and left out for 3 s,
/// as a load balancer's health check would. (AsyncHTTPClient keeps retrying a refused connection until
/// the request's deadline, so without this a dead instance would hold each callback up for the whole
/// timeout.)
public final class RoundRobinForwarder: Sendable {
    public let targets: [String]
    private let next = Mutex(0)
    private let delivered: Mutex<[Int]>
    private let refused = Mutex<[String]>([])
    /// Callbacks still to be answered 500 without forwarding, and the path they must start with (`refuseNext`).
    private let refuseLeft = Mutex((count: 0, path: ""))
    /// Callbacks answered 500 on purpose so far.
    private let refusedOnPurpose = Mutex(0)
    private let downUntil: Mutex<[Date]>
    /// The last few non-2xx answers (status and body), for a failure message.
    public var refusals: [String] { refused.withLock { $0 } }
    private let server: HTTPServer

    public init(targets: [String]) {
        self.targets = targets
        delivered = Mutex(Array(repeating: 0, count: targets.count))
        downUntil = Mutex(Array(repeating: .distantPast, count: targets.count))
        let box = Box()
        server = HTTPServer(host: "127.0.0.1", port: 0) { request in await box.forwarder?.forward(request) ?? .text("", status: 503) }
        box.forwarder = self
    }

    final class Box: @unchecked Sendable { weak var forwarder: RoundRobinForwarder? }

    public func start() async throws { try await server.start() }
    public func stop() async { await server.stop() }
    public var baseURL: String { server.baseURL }
    /// Callbacks each instance answered.
    public var counts: [Int] { delivered.withLock { $0 } }

    /// Answers the next `count` callbacks 500 without passing them on (a bridge refusing them).
    public func refuseNext(_ count: Int, path: String = "") { refuseLeft.withLock { $0 = (count, path) } }
    public var refusedCount: Int { refusedOnPurpose.withLock { $0 } }

    public func forward(_ request: HTTPRequestData) async -> HTTPResponseData {
        let refuse = refuseLeft.withLock { left -> Bool in
            guard left.count > 0, request.path.hasPrefix(left.path) else { return false }
            left.count -= 1
            return true
        }
        if refuse {
            refusedOnPurpose.withLock { $0 += 1 }
            return .text("refused on purpose", status: 500)
        }
        let first = next.withLock { value -> Int in
            defer { value += 1 }
            return value
        }
        let client = HTTPClientWrapper(timeoutSeconds: 1)
        let headers = request.headers.filter { !["host", "content-length", "connection"].contains($0.name.lowercased()) }
        let query = request.rawQuery.map { "?\($0)" } ?? ""
        let down = downUntil.withLock { $0 }
        let order = (0..<targets.count).map { (first + $0) % targets.count }
        for index in order.filter({ down[$0] < Date() }) + order.filter({ down[$0] >= Date() }) {
            if let response = try? await client.send(OutboundRequest(method: request.method, url: targets[index] + request.path + query,
                                                                     headers: headers, body: request.body)) {
                delivered.withLock { $0[index] += 1 }
                if !(200..<300).contains(response.status) {
                    let line = "\(index): \(response.status) \(String(decoding: response.body.prefix(300), as: UTF8.self))"
                    refused.withLock { $0 = Array(($0 + [line]).suffix(5)) }
                }
                return response
            }
            downUntil.withLock { $0[index] = Date().addingTimeInterval(3) }
        }
        return .text("no instance answered", status: 502)
    }
}
