import IMHTTP
import Synchronization

/// A media host on loopback (another vendor's CDN, as the bridge meets it): a path under `/missing`
/// answers 404, any other 200 with `bytes(path)`; each request's path is kept.
final class MediaHost: Sendable {
    private final class Log: Sendable { let paths = Mutex<[String]>([]) }
    private let log = Log()
    let server: HTTPServer

    static func bytes(_ path: String) -> [UInt8] { Array("media at \(path)".utf8) }

    private init() {
        let log = self.log
        server = HTTPServer { request in
            let path = request.normalizedPath
            log.paths.withLock { $0.append(path) }
            return HTTPResponseData(status: path.hasPrefix("/missing") ? 404 : 200, body: MediaHost.bytes(path))
        }
    }

    static func start() async throws -> MediaHost {
        let host = MediaHost()
        try await host.server.start()
        return host
    }

    func url(_ path: String) -> String { server.baseURL + path }
    /// The paths asked for, in order.
    var requests: [String] { log.paths.withLock { $0 } }
    func stop() async { await server.stop() }
}
