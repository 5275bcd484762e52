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

/// The state both handlers of one connection share. Only touched on the connection's event loop
/// (handlers and their scheduled tasks run there), hence `@unchecked Sendable`: Hummingbird's
/// `additionalChannelHandlers` closure must be `@Sendable`.
final class ConnectionDeadlines: @unchecked Sendable {
    enum Phase { case head, body, linger }

    let limits: ListenerLimits
    /// The bytes handler's context (the front of the pipeline): where a 408 is written and the
    /// connection closed.
    var context: ChannelHandlerContext?
    /// The clock that runs: its phase and when it runs out; nil when none runs.
    var clock: (phase: Phase, at: NIODeadline)?
    /// The connection's one scheduled task, and when it fires (never after `clock`'s end). It is set
    /// again only when a clock must end sooner, or when it fires before the clock's end (for the rest):
    /// each request starts two clocks (head, then body) and stops them, and a task scheduled and
    /// cancelled for each was work on every request (docs/performance.md, "Fixed costs per transaction
    /// and per request").
    var timer: Scheduled<Void>?
    var timerAt = NIODeadline.distantFuture
    /// A head was read and its end not yet.
    var readingRequest = false
    /// Requests whose head was read and whose response has not ended (the one being read included).
    var unanswered = 0
    /// A response to the request being read has started (an early answer): no 408 may interleave.
    var answeringEarly = false
    var lingering = false
    /// Where requests start in the raw bytes, and how many have started and ended: a request that begins
    /// in the same read as the end of the one before (pipelined) gets its header clock too.
    var framer = RequestFramer()
    var requestsStarted = 0
    var requestsEnded = 0

    init(limits: ListenerLimits) { self.limits = limits }

    /// Starts `phase`'s clock (ending the one that ran).
    func arm(_ phase: Phase) {
        guard let context else { return }
        let delay = switch phase {
        case .head: limits.headerTimeout
        case .body: limits.bodyTimeout
        case .linger: limits.lingerTimeout
        }
        let at = NIODeadline.now() + TimeAmount(delay)
        clock = (phase, at)
        if timer == nil || timerAt > at { schedule(at, context) }
    }

    /// Stops the clock (the timer, when it fires, finds none).
    func disarm() {
        clock = nil
    }

    /// Stops the clock and the timer: the connection is closing.
    func stop() {
        clock = nil
        timer?.cancel()
        (timer, timerAt) = (nil, .distantFuture)
    }

    private func schedule(_ at: NIODeadline, _ context: ChannelHandlerContext) {
        timer?.cancel()
        timerAt = at
        timer = context.eventLoop.assumeIsolated().scheduleTask(deadline: at) { [self] in
            (timer, timerAt) = (nil, .distantFuture)
            fired()
        }
    }

    private func fired() {
        guard let running = clock, let context else { return }
        guard NIODeadline.now() >= running.at else {
            schedule(running.at, context)
            return
        }
        clock = nil
        expired(running.phase)
    }

    func expired(_ phase: Phase) {
        guard let context, context.channel.isActive else { return }
        // A 408 only when no response is on its way (one of ours would be cut in the middle).
        if phase != .linger, !answeringEarly, unanswered == (readingRequest ? 1 : 0) {
            var buffer = context.channel.allocator.buffer(capacity: 80)
            buffer.writeString("HTTP/1.1 408 Request Timeout\r\nConnection: close\r\nContent-Length: 0\r\n\r\n")
            context.writeAndFlush(NIOAny(buffer), promise: nil)
        }
        context.close(promise: nil)
    }

    /// After an early answer went out: stop sending, drop what still arrives, close after the linger.
    func startLingering(_ partsContext: ChannelHandlerContext) {
        lingering = true
        partsContext.close(mode: .output, promise: nil)
        arm(.linger)
    }
}

/// Raw bytes, before the HTTP decoder: starts the header clock when a connection opens and at the first
/// byte of each later request; drops input while lingering.
final class ConnectionBytesHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer
    let deadlines: ConnectionDeadlines

    init(_ deadlines: ConnectionDeadlines) { self.deadlines = deadlines }

    func handlerAdded(context: ChannelHandlerContext) {
        deadlines.context = context
        if context.channel.isActive { deadlines.arm(.head) }
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        deadlines.stop()
        deadlines.context = nil
    }

    func channelActive(context: ChannelHandlerContext) {
        if deadlines.clock == nil { deadlines.arm(.head) }
        context.fireChannelActive()
    }

    func channelInactive(context: ChannelHandlerContext) {
        deadlines.stop()
        context.fireChannelInactive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        if deadlines.lingering { return }
        deadlines.requestsStarted += deadlines.framer.feed(unwrapInboundIn(data))
        // The first byte of a request on a kept-alive connection (between requests no clock of ours
        // runs: Hummingbird's idle timeout does).
        if !deadlines.readingRequest, deadlines.clock == nil { deadlines.arm(.head) }
        context.fireChannelRead(data)
    }
}

/// Decoded request parts and response parts: the head ends the header clock and starts the body's, the
/// end stops it; a response that ends before its request did closes the connection (after a linger),
/// with `Connection: close` in its head.
final class ConnectionPartsHandler: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPRequestPart
    typealias InboundOut = HTTPRequestPart
    typealias OutboundIn = HTTPResponsePart
    typealias OutboundOut = HTTPResponsePart
    let deadlines: ConnectionDeadlines

    init(_ deadlines: ConnectionDeadlines) { self.deadlines = deadlines }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head:
            deadlines.readingRequest = true
            deadlines.answeringEarly = false
            deadlines.unanswered += 1
            deadlines.arm(.body)
        case .body:
            break
        case .end:
            deadlines.readingRequest = false
            deadlines.requestsEnded += 1
            deadlines.framer.ended()
            // A request pipelined behind this one has begun in the bytes already read: its head has its
            // clock from now (no later read may come to start it).
            if deadlines.requestsStarted > deadlines.requestsEnded { deadlines.arm(.head) } else { deadlines.disarm() }
        }
        context.fireChannelRead(data)
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        // Answering the request that is still being read: its unread body will not be read.
        let early = deadlines.readingRequest && deadlines.unanswered == 1
        switch unwrapOutboundIn(data) {
        case .head(var head) where early:
            deadlines.answeringEarly = true
            head.headerFields[.connection] = "close"
            context.write(wrapOutboundOut(.head(head)), promise: promise)
        case .end where early:
            deadlines.unanswered -= 1
            let flushed = context.eventLoop.makePromise(of: Void.self)
            if let promise { flushed.futureResult.cascade(to: promise) }
            context.writeAndFlush(data, promise: flushed)
            let deadlines = self.deadlines
            flushed.futureResult.hop(to: context.eventLoop).assumeIsolated().whenComplete { [context] _ in
                deadlines.startLingering(context)
            }
        case .end:
            deadlines.unanswered = max(0, deadlines.unanswered - 1)
            context.write(data, promise: promise)
        default:
            context.write(data, promise: promise)
        }
    }
}

/// Finds where requests start in a connection's raw bytes without parsing them for the server: a head
/// runs to its blank line, a body is as long as its `Content-Length` (none: no body). After a head with
/// `Transfer-Encoding` the framer loses track until that request's end is decoded (`ended`), and then
/// frames from the next read on: a head pipelined in the same read behind a chunked request is bounded
/// by the idle timeout only. Blank lines between requests (which servers ignore) start nothing.
struct RequestFramer {
    enum State: Equatable { case between, head, body(Int), lost }
    var state = State.between
    /// The head being read (at most `maxHeadBytes`; longer heads are refused by the decoder anyway).
    var head: [UInt8] = []
    static let maxHeadBytes = 128 << 10

    /// Reads `buffer`; returns how many requests started in it.
    mutating func feed(_ buffer: ByteBuffer) -> Int {
        buffer.withUnsafeReadableBytes { feed($0) }
    }

    mutating func feed(_ bytes: [UInt8]) -> Int {
        bytes.withUnsafeBytes { feed($0) }
    }

    mutating func feed(_ bytes: UnsafeRawBufferPointer) -> Int {
        var started = 0
        do {
            var index = 0
            scan: while index < bytes.count {
                switch state {
                case .lost:
                    break scan
                case .between:
                    let byte = bytes[index]
                    index += 1
                    if byte == 0x0D || byte == 0x0A { continue }
                    started += 1
                    head = [byte]
                    state = .head
                case .head:
                    let from = max(0, head.count - 3)
                    let end = min(bytes.count, index + Self.maxHeadBytes - head.count)
                    head.append(contentsOf: bytes[index..<end])
                    index = end
                    if let blank = Self.blankLine(in: head, from: from) {
                        // Bytes after the head's end go back to the loop.
                        index -= head.count - (blank + 4)
                        state = Self.body(of: head[..<blank])
                        head = []
                    } else if head.count >= Self.maxHeadBytes {
                        state = .lost
                    }
                case .body(let remaining):
                    let taken = min(remaining, bytes.count - index)
                    index += taken
                    state = remaining == taken ? .between : .body(remaining - taken)
                }
            }
        }
        return started
    }

    /// A request's end was decoded: a framer that lost track starts again with the next read.
    mutating func ended() {
        if state == .lost { state = .between }
    }

    static func blankLine(in head: [UInt8], from: Int) -> Int? {
        guard head.count >= 4 else { return nil }
        for index in from...(head.count - 4) where head[index] == 0x0D && head[index + 1] == 0x0A && head[index + 2] == 0x0D
            && head[index + 3] == 0x0A {
            return index
        }
        return nil
    }

    /// What follows a head: its body's length, or `lost` for a chunked (or otherwise framed) body.
    /// An ASCII head (every head a vendor sends) is read from its bytes; any other goes through `bodyOfText`,
    /// which reads it as text — the same answer for ASCII, where the text's line, colon and whitespace
    /// rules are these bytes'. The text reading cost 4 % of the relay bench process (Foundation's
    /// `trimmingCharacters` on every header of every callback; docs/performance.md, "Bytes, not text, on
    /// every request").
    static func body(of head: ArraySlice<UInt8>) -> State {
        // Plain `while` loops over the head's buffer: generic algorithms and iterators (`allSatisfy`,
        // `for … in` a slice) allocate for every byte in a debug build, which `CostGuardTests` counts.
        let fromBytes: State? = head.withUnsafeBufferPointer { bytes in
            var index = 0
            while index < bytes.count {
                if bytes[index] >= 0x80 { return nil }
                index += 1
            }
            return bodyOfASCII(bytes)
        }
        return fromBytes ?? bodyOfText(head)
    }

    private static func bodyOfASCII(_ head: UnsafeBufferPointer<UInt8>) -> State {
        var length = 0
        var lineStart = 0
        var first = true
        while lineStart < head.count {
            // The line runs to the next CR LF (or the head's end).
            var lineEnd = head.count
            var index = lineStart
            while index < head.count {
                if head[index] == 0x0D, index + 1 < head.count, head[index + 1] == 0x0A {
                    lineEnd = index
                    break
                }
                index += 1
            }
            let next = lineEnd == head.count ? head.count : lineEnd + 2
            defer { lineStart = next }
            // Empty lines are skipped (as `split` omits them); the first line is the request line.
            guard lineEnd > lineStart else { continue }
            if first {
                first = false
                continue
            }
            var colon = lineStart
            while colon < lineEnd, head[colon] != UInt8(ascii: ":") { colon += 1 }
            guard colon < lineEnd else { continue }
            let name = trimmed(head, lineStart, colon)
            if equalsIgnoringASCIICase(head, name, "transfer-encoding") { return .lost }
            if equalsIgnoringASCIICase(head, name, "content-length") {
                let value = trimmed(head, colon + 1, lineEnd)
                guard let declared = Int(String(decoding: UnsafeBufferPointer(rebasing: head[value]), as: UTF8.self)), declared >= 0 else {
                    return .lost
                }
                length = declared
            }
        }
        return length == 0 ? .between : .body(length)
    }

    /// `start..<end` of `bytes` without the spaces and tabs at either end (`CharacterSet.whitespaces` in ASCII).
    private static func trimmed(_ bytes: UnsafeBufferPointer<UInt8>, _ start: Int, _ end: Int) -> Range<Int> {
        var (start, end) = (start, end)
        while start < end, bytes[start] == 0x20 || bytes[start] == 0x09 { start += 1 }
        while end > start, bytes[end - 1] == 0x20 || bytes[end - 1] == 0x09 { end -= 1 }
        return start..<end
    }

    /// Whether ASCII `bytes[range]` lowercased are `lowercase` (itself lowercase ASCII).
    private static func equalsIgnoringASCIICase(_ bytes: UnsafeBufferPointer<UInt8>, _ range: Range<Int>, _ lowercase: StaticString) -> Bool {
        guard range.count == lowercase.utf8CodeUnitCount else { return false }
        let expected = lowercase.utf8Start
        var offset = 0
        while offset < range.count {
            if ASCIICase.folded(bytes[range.lowerBound + offset]) != expected[offset] { return false }
            offset += 1
        }
        return true
    }

    /// `body(of:)` read as text: any head, ASCII or not.
    static func bodyOfText(_ head: ArraySlice<UInt8>) -> State {
        var length = 0
        for line in String(decoding: head, as: UTF8.self).split(separator: "\r\n").dropFirst() {
            guard let colon = line.firstIndex(of: ":") else { continue }
            let name = line[..<colon].trimmingCharacters(in: .whitespaces).lowercased()
            let value = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
            if name == "transfer-encoding" { return .lost }
            if name == "content-length" {
                guard let declared = Int(value), declared >= 0 else { return .lost }
                length = declared
            }
        }
        return length == 0 ? .between : .body(length)
    }
}
