import Foundation
import IMCore
import IMHTTP
import IMSandbox
import Synchronization

/// Records every callback request a sandbox delivers, and answers it: with `failNext` the next
/// requests get `failStatus`, otherwise `answer` (the vendor's success body by default 200 `{}`).
/// Shared by every adapter's sandbox tests (a `SandboxHelper`'s `callbacks`).
public final class CallbackRecorder: Sendable {
    final class State: Sendable {
        let received = Mutex<[HTTPRequestData]>([])
        let arrivals = Mutex<[Date]>([])
        let failures = Mutex<(left: Int, status: Int)>((0, 500))
    }
    let state = State()
    public let server: HTTPServer

    /// `answer`: the response to a request that is not failed on purpose (after recording it).
    public init(answer: @escaping @Sendable (HTTPRequestData) async -> HTTPResponseData = { _ in .json(Data("{}".utf8)) }) {
        let state = self.state
        server = HTTPServer { request in
            state.received.withLock { $0.append(request) }
            state.arrivals.withLock { $0.append(Date()) }
            let status = state.failures.withLock { failures -> Int? in
                guard failures.left > 0 else { return nil }
                failures.left -= 1
                return failures.status
            }
            if let status { return .text("failing on purpose", status: status) }
            return await answer(request)
        }
    }

    /// Starts listening; returns `http://127.0.0.1:PORT`.
    @discardableResult
    public func start() async throws -> String {
        let port = try await server.start()
        return "http://127.0.0.1:\(port)"
    }

    public func stop() async { await server.stop() }

    /// Answers the next `count` requests with `status`.
    public func failNext(_ count: Int, status: Int = 500) { state.failures.withLock { $0 = (count, status) } }

    public var requests: [HTTPRequestData] { state.received.withLock { $0 } }

    /// When each request arrived (wall clock), in the order of `requests`.
    public var arrivals: [Date] { state.arrivals.withLock { $0 } }

    /// Waits (at most `timeout` seconds) until `condition` holds for the requests received so far. It
    /// returns as soon as the condition holds: the long default is for a loaded machine (the sandboxes'
    /// callbacks include their vendors' retry pauses of a second), never a way to show that nothing came.
    @discardableResult
    public func wait(timeout: Double = 30, until condition: ([HTTPRequestData]) -> Bool) async -> [HTTPRequestData] {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            let now = requests
            if condition(now) { return now }
            try? await Task.sleep(nanoseconds: 10_000_000)
        }
        return requests
    }

    /// Waits until at least `count` requests arrived.
    @discardableResult
    public func waitFor(_ count: Int, timeout: Double = 30) async -> [HTTPRequestData] {
        await wait(timeout: timeout) { $0.count >= count }
    }
}

/// A running sandbox with raw HTTP helpers: requests are built by hand in the tests (not with the
/// adapter's client), so the sandbox and the client cannot share a misunderstanding.
public struct SandboxRig: Sendable {
    public let server: SandboxServer
    public let http = HTTPClientWrapper(timeoutSeconds: 10)
    public var baseURL: String { server.baseURL }

    public init(server: SandboxServer) {
        self.server = server
    }

    /// Builds a sandbox through its descriptor and starts it.
    public static func start(_ descriptor: SandboxDescriptor, _ options: SandboxOptions) async throws -> SandboxRig {
        let server = try await descriptor.make(options)
        try await server.start()
        return SandboxRig(server: server)
    }

    /// Starts an already built server.
    public static func start(_ server: SandboxServer) async throws -> SandboxRig {
        try await server.start()
        return SandboxRig(server: server)
    }

    public func stop() async { await server.stop() }

    /// One exchange; the body parsed as JSON when it is JSON (else `.null`).
    public struct Reply: Sendable {
        public var status: Int
        public var json: JSONValue
        public var text: String
        public var headers: [(name: String, value: String)]
        public var body: [UInt8]

        /// A response header, by case-insensitive name.
        public func header(_ name: String) -> String? { headers.first { $0.name.lowercased() == name.lowercased() }?.value }
    }

    @discardableResult
    public func send(_ method: String, _ path: String, body: [UInt8] = [], headers: [(name: String, value: String)] = []) async throws -> Reply {
        let response = try await http.send(OutboundRequest(method: method, url: baseURL + path, headers: headers, body: body.isEmpty ? nil : body))
        return Reply(status: response.status, json: (try? JSONValue.parse(Data(response.body))) ?? .null, text: response.bodyString,
                     headers: response.headers, body: response.body)
    }

    @discardableResult
    public func postJSON(_ path: String, _ json: String, headers: [(name: String, value: String)] = []) async throws -> Reply {
        try await send("POST", path, body: Array(json.utf8), headers: [("Content-Type", "application/json")] + headers)
    }

    @discardableResult
    public func postForm(_ path: String, _ fields: [(String, String)], headers: [(name: String, value: String)] = []) async throws -> Reply {
        let body = fields.map { "\(FormBody.escape($0.0))=\(FormBody.escape($0.1))" }.joined(separator: "&")
        return try await send("POST", path, body: Array(body.utf8),
                              headers: [("Content-Type", "application/x-www-form-urlencoded;charset=utf-8")] + headers)
    }

    @discardableResult
    public func get(_ path: String, headers: [(name: String, value: String)] = []) async throws -> Reply {
        try await send("GET", path, headers: headers)
    }

    /// `GET /_sandbox/messages`: every stored message in the shared record shape.
    public func messages() async throws -> [SandboxMessageRecord] {
        let reply = try await get("/_sandbox/messages")
        struct Body: Decodable { var messages: [SandboxMessageRecord] }
        return try JSONDecoder().decode(Body.self, from: Data(reply.text.utf8)).messages
    }

    /// Advances the sandbox clock.
    public func advanceClock(byMs ms: Int64) { server.clock.advance(byMs: ms) }

    /// `POST /_sandbox/groups`: seeds a group under a chosen id (test-only control, `SandboxGroupSeed`).
    public func seedGroup(_ id: String, owner: String, members: [String], name: String? = nil) async throws {
        try await Self.seedGroup(at: baseURL, id, owner: owner, members: members, name: name)
    }

    /// The same against any sandbox's base URL (a lab's, a process's).
    public static func seedGroup(at baseURL: String, _ id: String, owner: String, members: [String], name: String? = nil) async throws {
        var body: [String: JSONValue] = ["id": .string(id), "owner": .string(owner), "members": .array(members.map(JSONValue.string))]
        if let name { body["name"] = .string(name) }
        let reply = try await HTTPClientWrapper().send(.json(baseURL + "/_sandbox/groups", JSONValue.object(body).jsonData()))
        guard reply.status == 200 else {
            throw IMError(.invalidArgument, "seeding group \(id) at \(baseURL) answered \(reply.status): \(String(decoding: reply.body, as: UTF8.self))")
        }
    }
}
