import HTTPTypes
import NIOCore
import NIOHTTPTypes

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
