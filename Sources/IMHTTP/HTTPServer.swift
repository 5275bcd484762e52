import HTTPTypes
import Hummingbird
import Logging
import NIOCore
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
    private let state = Mutex<(task: Task<Void, Never>?, port: Int?)>((nil, nil))

    public init(host: String = "127.0.0.1", port: Int = 0, maxBodyBytes: Int = 32 << 20, handler: @escaping Handler) {
        self.host = host
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
            // HTTP/1 `Host` arrives as the `:authority` pseudo-header; keep it visible as `Host`.
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
        var logger = Logger(label: "imbridge.http")
        logger.logLevel = .critical
        let (bound, continuation) = AsyncStream<Int>.makeStream()
        let app = Application(
            responder: responder,
            configuration: ApplicationConfiguration(address: .hostname(host, port: requestedPort), serverName: nil),
            onServerRunning: { channel in
                continuation.yield(channel.localAddress?.port ?? 0)
                continuation.finish()
            },
            logger: logger)
        let task = Task {
            do {
                try await app.run()
            } catch {
                logger.error("server stopped: \(error)")
            }
            continuation.finish()
        }
        var iterator = bound.makeAsyncIterator()
        guard let port = await iterator.next(), port > 0 else {
            task.cancel()
            throw IMHTTPError.bindFailed("could not listen on \(host):\(requestedPort)")
        }
        state.withLock { $0 = (task, port) }
        return port
    }

    /// Stops serving; returns when the listener is closed.
    public func stop() async {
        let task = state.withLock { state -> Task<Void, Never>? in
            defer { state.task = nil }
            return state.task
        }
        task?.cancel()
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
