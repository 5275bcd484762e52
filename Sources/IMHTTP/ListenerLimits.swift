import Foundation
import HTTPTypes
import HummingbirdCore
import Logging
import NIOCore
import NIOHTTPTypes

/// What a client that never completes a request can make a listener hold: the bridge's callback
/// listener is reachable by anyone who finds its address, so each connection is bounded in time and
/// the listener in connections (docs/configuration.md, `listener:`; docs/architecture.md,
/// "Bounded resources for strangers").
///
/// - `headerTimeout`: a request's head (request line and headers) must be complete this long after the
///   connection opened, or after the first byte of a request on a kept-alive connection. Else: 408, close.
/// - `bodyTimeout`: once the head is read, the whole body must arrive within this time, however it
///   trickles (a body sent one byte a second, a declared chunk of 2^64−1 bytes never sent). Else: 408, close.
/// - `idleTimeout`: a kept-alive connection with no request started is closed after this (so is one
///   whose head or body stops arriving for this long: Hummingbird's idle timeout counts any pause).
/// - `maxConnections`: open connections at most; beyond it the listener stops accepting (the kernel's
///   backlog holds new ones) until one closes.
/// - `lingerTimeout`: after an answer given before the request's body was read (a refused secret, a
///   body over the cap), the connection stops sending, drops whatever still arrives for at most this
///   long so the client can read the answer, then closes.
/// - `allowedSources`: when not empty, a connection from an address outside these networks is closed
///   as soon as it is accepted, before a byte of it is read. `adminAllowedSources` is the same for the
///   operator's listener of a bridge that has one (`forAdmin`).
public struct ListenerLimits: Sendable, Equatable {
    public var headerTimeout: Duration
    public var bodyTimeout: Duration
    public var idleTimeout: Duration
    public var maxConnections: Int
    public var lingerTimeout: Duration
    public var allowedSources: [SourceNetwork] = []
    public var adminAllowedSources: [SourceNetwork] = []

    /// These limits for the operator's listener (`admin_listen`): its own allow list.
    public var forAdmin: ListenerLimits {
        var limits = self
        limits.allowedSources = adminAllowedSources
        return limits
    }

    public init(headerTimeout: Duration = .seconds(ListenerLimits.defaultHeaderTimeoutSeconds),
                bodyTimeout: Duration = .seconds(ListenerLimits.defaultBodyTimeoutSeconds),
                idleTimeout: Duration = .seconds(ListenerLimits.defaultIdleTimeoutSeconds),
                maxConnections: Int = ListenerLimits.defaultMaxConnections,
                lingerTimeout: Duration = .seconds(2)) {
        self.headerTimeout = headerTimeout
        self.bodyTimeout = bodyTimeout
        self.idleTimeout = idleTimeout
        self.maxConnections = maxConnections
        self.lingerTimeout = lingerTimeout
    }

    public static let defaultHeaderTimeoutSeconds = 10
    public static let defaultBodyTimeoutSeconds = 30
    public static let defaultIdleTimeoutSeconds = 60
    public static let defaultMaxConnections = 1024
}

/// One HTTP/1.1 connection with `ListenerLimits`: Hummingbird's `HTTP1Channel` (its `idleTimeout` is the
/// keep-alive idle timeout) with two handlers of ours around its decoder, which share one
/// `ConnectionDeadlines`. The connection cap is Hummingbird's `MaximumAvailableConnections` (set by
/// `HTTPServer`).
///
/// Written by hand because neither Hummingbird nor SwiftNIO bounds the *total* time of a request's head
/// or body: Hummingbird's idle timeout and NIO's `IdleStateHandler` are reset by every part or byte
/// read, so a client trickling a byte now and then holds a connection for ever.
struct LimitedHTTP1Channel: ServerChildChannel {
    typealias Value = HTTP1Channel.Value
    let responder: HTTPChannelHandler.Responder
    let limits: ListenerLimits
    let base: HTTP1Channel

    init(responder: @escaping HTTPChannelHandler.Responder, limits: ListenerLimits) {
        self.responder = responder
        self.limits = limits
        self.base = HTTP1Channel(responder: responder, configuration: .init(idleTimeout: TimeAmount(limits.idleTimeout)))
    }

    /// A connection from outside `limits.allowedSources`.
    struct SourceRefused: Error {}

    func setup(channel: any Channel, logger: Logger) -> EventLoopFuture<Value> {
        let limits = self.limits
        let responder = self.responder
        guard SourceNetwork.allows(limits.allowedSources, channel.remoteAddress) else {
            logger.debug("connection refused: its source is not in the listener's allow list")
            return channel.close().flatMapThrowing { throw SourceRefused() }
        }
        return channel.eventLoop.makeCompletedFuture {
            let deadlines = ConnectionDeadlines(limits: limits)
            // First in the pipeline: it sees the raw bytes (a request's first byte starts its header
            // clock) and can drop what arrives after an early answer before the decoder parses it.
            try channel.pipeline.syncOperations.addHandler(ConnectionBytesHandler(deadlines), position: .first)
            return HTTP1Channel(responder: responder, configuration: .init(
                additionalChannelHandlers: [ConnectionPartsHandler(deadlines)], idleTimeout: TimeAmount(limits.idleTimeout)))
        }.flatMap { http1 in
            http1.setup(channel: channel, logger: logger)
        }
    }

    func handle(value: Value, logger: Logger) async {
        await base.handle(value: value, logger: logger)
    }
}
