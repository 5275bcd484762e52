import Synchronization
import Tracing

/// The spans of a message's way through the bridge (docs/operations.md, "Tracing"): callback, record,
/// lane, vendor call, completion. Each one is started in the trace named by the event's `TraceParent`, so
/// every hop — on any instance, after any restart — lands in the same trace, as a child of the event's
/// derived root span (`TraceParent.forEvent`'s span id, which no span itself has).
///
/// Off (the default: no `tracing:` in bridge.yaml) every call is one relaxed atomic load and the body:
/// no service context, no span, not even the no-op tracer's. `enable()` is called once, after the
/// process bootstrapped a real tracer (`InstrumentationSystem.bootstrap`), before the engine starts.
public enum MessageSpans {
    private static let on = Atomic<Bool>(false)

    /// Whether spans are made (a tracer was bootstrapped and `enable()` called).
    public static var isOn: Bool { on.load(ordering: .relaxed) }

    public static func enable() { on.store(true, ordering: .relaxed) }

    /// Runs `body` in a span named `name` of `trace`: inside the span already open for that trace in this
    /// task when there is one, else under the trace's derived root. `body` gets the span (nil when off).
    public static func with<T>(_ name: String, trace: @autoclosure () -> TraceParent, kind: SpanKind = .internal,
                               _ body: (_ span: (any Span)?) async throws -> T) async rethrows -> T {
        guard isOn else { return try await body(nil) }
        let trace = trace()
        let span = startSpan(name, context: context(for: trace), ofKind: kind)
        defer { span.end() }
        do {
            return try await ServiceContext.$current.withValue(span.context) {
                try await $open.withValue((trace.traceID, span)) { try await body(span) }
            }
        } catch {
            span.recordError(error)
            span.setStatus(SpanStatus(code: .error))
            throw error
        }
    }

    /// A span that began at `start` and ends now (or at `end`), for hops whose trace is known only
    /// afterwards (a callback's events are known once its body was read and its batch recorded).
    /// Returns the span's context, under which `finished` spans of its children may be made.
    @discardableResult
    public static func finished(_ name: String, trace: TraceParent, kind: SpanKind = .internal, start: DefaultTracerClock.Instant,
                                end: DefaultTracerClock.Instant? = nil, parent: ServiceContext? = nil,
                                attributes: [String: String] = [:]) -> ServiceContext? {
        guard isOn else { return nil }
        let span = startSpan(name, at: start, context: parent ?? context(for: trace), ofKind: kind)
        for (key, value) in attributes { span.attributes[key] = value }
        span.end(at: end ?? DefaultTracerClock.now)
        return span.context
    }

    /// Sets `key` on this task's innermost span (made by `with`); nothing when off.
    public static func note(_ key: String, _ value: String) {
        guard isOn, let span = open?.span else { return }
        span.attributes[key] = value
    }

    /// When and where the callback this task answers arrived (set by the listener for every callback):
    /// the listener kept on its events' ledger rows (`EventOrigin`), and with spans on the start of their
    /// `imbridge.callback` spans.
    public struct Arrival: Sendable {
        public let at: Instant
        public let listener: String
        public init(listener: String) { (at, self.listener) = (.now, listener) }
        @TaskLocal public static var current: Arrival?
    }

    /// A point in time of a span's start or end.
    public struct Instant: Sendable {
        let value: DefaultTracerClock.Instant
        public static var now: Instant { Instant(value: DefaultTracerClock.now) }
    }

    /// The spans of events just recorded, one trace each: `imbridge.callback` (server) from the arrival
    /// of the callback that carried them (`Arrival.current`; a poll's: `recordStart`) to now, with the
    /// `imbridge.record` child for the intake transaction (`recordStart` to `recordEnd`).
    public static func recorded(_ events: [(backend: String, eventID: String)], recordStart: Instant, recordEnd: Instant, instance: String) {
        guard isOn else { return }
        let arrival = Arrival.current
        for (backend, eventID) in events {
            let trace = TraceParent.forEvent(backend: backend, eventID: eventID)
            let callback = finished("imbridge.callback", trace: trace, kind: .server, start: (arrival?.at ?? recordStart).value, attributes: [
                "imbridge.backend": backend, "imbridge.event_id": eventID, "imbridge.instance": instance,
                "imbridge.listener": arrival?.listener ?? "poll",
            ])
            finished("imbridge.record", trace: trace, start: recordStart.value, end: recordEnd.value, parent: callback)
        }
    }

    /// The `traceparent` this task's innermost span of `trace` would send (its own span id), or nil when
    /// off or when the tracer injects none.
    public static func outgoing(_ trace: @autoclosure () -> TraceParent) -> TraceParent? {
        guard isOn else { return nil }
        let trace = trace()
        guard open?.traceID == trace.traceID, let context = ServiceContext.current else { return nil }
        var headers: [String: String] = [:]
        InstrumentationSystem.instrument.inject(context, into: &headers, using: DictionaryCarrier())
        return headers["traceparent"].flatMap(TraceParent.init(header:)).flatMap { $0.traceID == trace.traceID ? $0 : nil }
    }

    /// The span this task runs in and its trace id (set by `with`): a nested hop of the trace joins it.
    @TaskLocal private static var open: (traceID: String, span: any Span)?

    private static func context(for trace: TraceParent) -> ServiceContext {
        if open?.traceID == trace.traceID, let current = ServiceContext.current { return current }
        var context = ServiceContext.topLevel
        InstrumentationSystem.instrument.extract(["traceparent": trace.header], into: &context, using: DictionaryCarrier())
        return context
    }

    private struct DictionaryCarrier: Extractor, Injector {
        func extract(key: String, from carrier: [String: String]) -> String? { carrier[key] }
        func inject(_ value: String, forKey key: String, into carrier: inout [String: String]) { carrier[key] = value }
    }
}
