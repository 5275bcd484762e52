import HTTPTypes
import Hummingbird
import Logging
import NIOCore
import ServiceLifecycle
import Synchronization

/// A small HTTP/1.1 server over Hummingbird that hands every request to one handler as plain values.
/// Sandboxes and the bridge's callback listener both run on it.
///
/// `start` returns once the socket is bound; port 0 binds a free port, and `port` tells which.
/// `stop` cancels the server and waits for it to finish. Bodies above `maxBodyBytes` get HTTP 413.
public final class HTTPServer: Sendable {
    public typealias Handler = @Sendable (HTTPRequestData) async -> HTTPResponseData

    public let host: String
    private let requestedPort: Int
    private let maxBodyBytes: Int
    private let handler: Handler
    private let logger: Logger
    private let state = Mutex<(task: Task<Void, Never>?, group: ServiceGroup?, port: Int?)>((nil, nil, nil))

    /// `logger`: where Hummingbird's own lines go (the bridge's listener passes the bootstrapped
    /// `imbridge.http` logger); without one, only warnings and errors of the server are logged, which
    /// keeps the sandboxes quiet.
    public init(host: String = "127.0.0.1", port: Int = 0, maxBodyBytes: Int = 32 << 20, logger: Logger? = nil,
                handler: @escaping Handler) {
        self.host = host
        self.logger = logger ?? {
            var quiet = Logger(label: "imbridge.http")
            quiet.logLevel = max(quiet.logLevel, .warning)
            return quiet
        }()
        self.requestedPort = port
        self.maxBodyBytes = maxBodyBytes
        self.handler = handler
    }

    /// The bound port once started.
    public var port: Int? { state.withLock { $0.port } }

    /// `http://HOST:PORT` once started.
    public var baseURL: String { "http://\(host):\(port ?? requestedPort)" }

    @discardableResult
    public func start() async throws -> Int {
        let handler = self.handler
        let maxBody = maxBodyBytes
        let responder = CallbackResponder<BasicRequestContext> { request, context in
            let body: ByteBuffer
            do {
                body = try await request.body.collect(upTo: maxBody)
            } catch {
                return Response(status: .contentTooLarge)
            }
            var requestHeaders = request.headers.map { (name: $0.name.rawName, value: $0.value) }
            // HTTP/1.1 `Host` arrives as the `:authority` pseudo-header; keep it visible as `Host`.
            if let authority = request.head.authority, !requestHeaders.contains(where: { $0.name.lowercased() == "host" }) {
                requestHeaders.append((name: "Host", value: authority))
            }
            let data = HTTPRequestData(
                method: request.method.rawValue, path: request.uri.path, rawQuery: request.uri.query,
                headers: requestHeaders, body: Array(buffer: body))
            let reply = await handler(data)
            var headers = HTTPFields()
            for (name, value) in reply.headers {
                if let fieldName = HTTPField.Name(name) { headers.append(HTTPField(name: fieldName, value: value)) }
            }
            return Response(status: .init(code: reply.status), headers: headers,
                            body: ResponseBody(byteBuffer: ByteBuffer(bytes: reply.body)))
        }
        var logger = self.logger
        logger[metadataKey: "listen"] = "\(host):\(requestedPort)"
        let (bound, continuation) = AsyncStream<Int>.makeStream()
        // Why the server stopped before it bound (port in use, address not available), for the error.
        let failure = Mutex<String?>(nil)
        let app = Application(
            responder: responder,
            configuration: ApplicationConfiguration(address: .hostname(host, port: requestedPort), serverName: nil),
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

public enum IMHTTPError: Error, CustomStringConvertible {
    case bindFailed(String)
    public var description: String {
        switch self {
        case .bindFailed(let message): message
        }
    }
}
