import Foundation
import IMHTTP
import Synchronization
import Testing

/// The trace context a message's event derives (`TraceParent`): W3C's `traceparent` form, the same for
/// the same event, its own for each other event, and sent on the requests made while it is current.
@Suite struct TraceParentTests {
    static let form = try! NSRegularExpression(pattern: "^00-[0-9a-f]{32}-[0-9a-f]{16}-01$")

    static func isW3C(_ header: String) -> Bool {
        form.firstMatch(in: header, range: NSRange(header.startIndex..., in: header)) != nil
    }

    @Test func oneEventOneTraceIdInW3CForm() {
        let first = TraceParent.forEvent(backend: "rc", eventID: "msg:1")
        #expect(Self.isW3C(first.header), "\(first.header)")
        #expect(first == TraceParent.forEvent(backend: "rc", eventID: "msg:1"), "derived, not drawn: every instance finds the same")
        #expect(first.traceID != TraceParent.forEvent(backend: "rc", eventID: "msg:2").traceID)
        #expect(first.traceID != TraceParent.forEvent(backend: "wk", eventID: "msg:1").traceID)
        let attempt = first.child("entry-7-attempt-1")
        #expect(attempt.traceID == first.traceID && attempt.spanID != first.spanID && Self.isW3C(attempt.header))
        #expect(attempt.spanID != first.child("entry-7-attempt-2").spanID)
    }

    /// A tracer's injected header read back (the vendor call span's context becomes the request's).
    @Test func aHeaderReadsBackOnlyInW3CForm() {
        let trace = TraceParent.forEvent(backend: "rc", eventID: "msg:9").child("x")
        #expect(TraceParent(header: trace.header) == trace)
        for bad in ["", "01-\(trace.traceID)-\(trace.spanID)-01", "00-\(trace.traceID.uppercased())-\(trace.spanID)-01",
                    "00-\(String(repeating: "0", count: 32))-\(trace.spanID)-01", "00-\(trace.traceID)-\(String(repeating: "0", count: 16))-01",
                    "00-\(trace.traceID.dropLast())-\(trace.spanID)-01", "00-\(trace.traceID)-\(trace.spanID)"] {
            #expect(TraceParent(header: bad) == nil, "\(bad)")
        }
    }

    /// Off (no `tracing:`): no span, the body runs as it is, and no tracer's header replaces the derived one.
    @Test func spansAreOffUnlessEnabled() async {
        #expect(!MessageSpans.isOn)
        let trace = TraceParent.forEvent(backend: "rc", eventID: "msg:10")
        let ran = await MessageSpans.with("imbridge.lane", trace: trace) { span in span == nil ? 1 : 0 }
        #expect(ran == 1 && MessageSpans.outgoing(trace) == nil)
    }

    @Test func requestsMadeWhileATraceIsCurrentCarryItsTraceparent() async throws {
        let seen = Mutex<[String?]>([])
        let server = HTTPServer { request in
            seen.withLock { $0.append(request.header("traceparent")) }
            return .text("ok")
        }
        _ = try await server.start()
        defer { Task { await server.stop() } }
        let client = HTTPClientWrapper(timeoutSeconds: 5)
        let trace = TraceParent.forEvent(backend: "rc", eventID: "msg:42").child("entry-1-attempt-1")
        _ = try await TraceParent.$current.withValue(trace) {
            try await client.send(OutboundRequest(method: "GET", url: server.baseURL + "/a"))
        }
        _ = try await client.send(OutboundRequest(method: "GET", url: server.baseURL + "/b"))
        // A caller's own header is kept.
        var own = OutboundRequest(method: "GET", url: server.baseURL + "/c")
        own.headers = [("traceparent", "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01")]
        _ = try await TraceParent.$current.withValue(trace) { try await client.send(own) }
        #expect(seen.withLock { $0 } == [trace.header, nil, "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"])
    }
}
