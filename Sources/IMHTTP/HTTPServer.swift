import HTTPTypes
import Hummingbird
import HummingbirdCore
import Logging
import NIOCore
import ServiceLifecycle
import Synchronization

/// A small HTTP/1.1 server over Hummingbird that hands every request to one handler as plain values.
/// Sandboxes and the bridge's callback listener both run on it.
///
/// `start` returns once the socket is bound; port 0 binds a free port, and `port` tells which.
/// `stop` cancels the server and waits for it to finish. Bodies above `maxBodyBytes` get HTTP 413.
///
/// With `admit`, each request's head (method, path, query, headers; an empty body) is shown to it
/// before any of the body is read: it either answers at once (a wrong secret: the body is never read,
/// the connection closes after the answer) or names the largest body it accepts (at most
/// `maxBodyBytes`). A `Content-Length` above that is answered 413 at once; a chunked body is answered
/// 413 as soon as it passes it. With `limits`, connections are bounded in time and number
/// (`ListenerLimits`); without, there are no timeouts and no connection cap (the sandboxes).
public final class HTTPServer: Sendable {
    public typealias Handler = @Sendable (HTTPRequestData) async -> HTTPResponseData
    public typealias Admit = @Sendable (HTTPRequestData) async -> BodyAdmission

    public let host: String
    private let requestedPort: Int
    private let maxBodyBytes: Int
    private let handler: Handler
    private let admit: Admit?
    private let limits: ListenerLimits?
    private let logger: Logger
    private let state = Mutex<(task: Task<Void, Never>?, group: ServiceGroup?, port: Int?)>((nil, nil, nil))

    /// `logger`: where Hummingbird's own lines go (the bridge's listener passes the bootstrapped
    /// `imbridge.http` logger); without one, only warnings and errors of the server are logged, which
    /// keeps the sandboxes quiet.
    public init(host: String = "127.0.0.1", port: Int = 0, maxBodyBytes: Int = 32 << 20, logger: Logger? = nil,
                limits: ListenerLimits? = nil, admit: Admit? = nil, handler: @escaping Handler) {
        self.host = host
        self.logger = logger ?? {
            var quiet = Logger(label: "imbridge.http")
            quiet.logLevel = max(quiet.logLevel, .warning)
            return quiet
        }()
        self.requestedPort = port
        self.maxBodyBytes = maxBodyBytes
        self.handler = handler
        self.admit = admit
        self.limits = limits
    }

    /// The bound port once started.
    public var port: Int? { state.withLock { $0.port } }

    /// `http://HOST:PORT` once started.
    public var baseURL: String { "http://\(host):\(port ?? requestedPort)" }

    @discardableResult
    public func start() async throws -> Int {
        let handler = self.handler
        let maxBody = maxBodyBytes
        let admit = self.admit
        let responder = CallbackResponder<BasicRequestContext> { request, context in
            var requestHeaders = request.headers.map { (name: $0.name.rawName, value: $0.value) }
            // HTTP/1.1 `Host` arrives as the `:authority` pseudo-header; keep it visible as `Host`.
            if let authority = request.head.authority, !requestHeaders.contains(where: { $0.name.lowercased() == "host" }) {
                requestHeaders.append((name: "Host", value: authority))
            }
            var data = HTTPRequestData(method: request.method.rawValue, path: request.uri.path, rawQuery: request.uri.query,
                                       headers: requestHeaders)
            var cap = maxBody
            switch await admit?(data) ?? .read(upTo: maxBody) {
            case .answer(let early):
                return Self.response(early)
            case .read(let upTo):
                cap = min(upTo, maxBody)
            }
            if let declared = Self.contentLength(request.headers), declared > cap {
                return Self.tooLarge(cap)
            }
            // Read chunk by chunk so that a body (chunked, or lying about its length) is refused the
            // moment it passes the cap, not after it was all buffered.
            var body = ByteBuffer()
            do {
                for try await chunk in request.body {
                    guard chunk.readableBytes <= cap - body.readableBytes else { return Self.tooLarge(cap) }
                    var chunk = chunk
                    body.writeBuffer(&chunk)
                }
            } catch {
                // The connection failed or timed out mid-body (`ListenerLimits.bodyTimeout` answered 408).
                return Response(status: .requestTimeout, headers: [.connection: "close"])
            }
            data.body = Array(buffer: body)
            return Self.response(await handler(data))
        }
        var logger = self.logger
        logger[metadataKey: "listen"] = "\(host):\(requestedPort)"
        let (bound, continuation) = AsyncStream<Int>.makeStream()
        // Why the server stopped before it bound (port in use, address not available), for the error.
        let failure = Mutex<String?>(nil)
        let app = Application(
            responder: responder,
            server: limits.map { limits in HTTPServerBuilder { LimitedHTTP1Channel(responder: $0, limits: limits) } } ?? .http1(),
            configuration: ApplicationConfiguration(
                address: .hostname(host, port: requestedPort), serverName: nil,
                availableConnectionsDelegate: limits.map { MaximumAvailableConnections($0.maxConnections, logger: logger) }),
            onServerRunning: { channel in
                continuation.yield(channel.localAddress?.port ?? 0)
                continuation.finish()
            },
            logger: logger)
        let group = ServiceGroup(configuration: .init(services: [app], gracefulShutdownSignals: [], logger: logger))
        let task = Task {
            do {
                try await group.run()
            } catch {
                failure.withLock { $0 = "\(error)" }
                logger.error("server stopped", metadata: ["error": "\(error)"])
            }
            continuation.finish()
        }
        var iterator = bound.makeAsyncIterator()
        guard let port = await iterator.next(), port > 0 else {
            task.cancel()
            await task.value
            let reason = failure.withLock { $0 }.map { ": \($0)" } ?? ""
            throw IMHTTPError.bindFailed("could not listen on \(host):\(requestedPort)\(reason)")
        }
        state.withLock { $0 = (task, group, port) }
        return port
    }

    /// `fields[.contentLength]` read as an integer: the field's values joined as `HTTPFields` joins them
    /// (`, `), found by going through the fields once — the subscript's lazy sequence and join cost more,
    /// on every request (docs/performance.md, "Bytes, not text, on every request").
    static func contentLength(_ fields: HTTPFields) -> Int? {
        var joined: String?
        for field in fields where field.name == .contentLength {
            joined = joined.map { $0 + ", " + field.value } ?? field.value
        }
        return joined.flatMap { Int($0) }
    }

    static func response(_ reply: HTTPResponseData) -> Response {
        var headers = HTTPFields()
        for (name, value) in reply.headers {
            if let fieldName = HTTPField.Name(name) { headers.append(HTTPField(name: fieldName, value: value)) }
        }
        return Response(status: .init(code: reply.status), headers: headers, body: ResponseBody(byteBuffer: ByteBuffer(bytes: reply.body)))
    }

    static func tooLarge(_ cap: Int) -> Response {
        response(.text("request body larger than \(cap) bytes", status: 413))
    }

    /// Stops accepting connections, lets requests in flight finish, and returns when the listener is
    /// closed (a graceful shutdown, not a cancellation: handlers are never cut off mid-response).
    public func stop() async {
        let (task, group) = state.withLock { state -> (Task<Void, Never>?, ServiceGroup?) in
            defer { state.task = nil; state.group = nil }
            return (state.task, state.group)
        }
        await group?.triggerGracefulShutdown()
        await task?.value
    }
}

/// What `HTTPServer`'s `admit` decides from a request's head.
public enum BodyAdmission: Sendable {
    /// Read the body, refusing it (413) beyond this many bytes.
    case read(upTo: Int)
    /// Answer this without reading the body (the connection closes after it).
    case answer(HTTPResponseData)
}

public enum IMHTTPError: Error, CustomStringConvertible {
    case bindFailed(String)
    public var description: String {
        switch self {
        case .bindFailed(let message): message
        }
    }
}
