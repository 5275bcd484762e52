import Foundation

/// A W3C trace context (`traceparent: 00-<trace id>-<parent id>-01`) derived from what identifies a
/// message's event: every hop of that event's way — its outbox entries' vendor calls, their log lines,
/// `imbridge trace` — names the same trace id, on every instance and after a restart, with nothing stored
/// (docs/operations.md, "Trace ids"). `HTTPClientWrapper.send` puts `current` on each request it makes
/// as the `traceparent` header, so a vendor's (or a proxy's) request log joins the callback that caused it.
public struct TraceParent: Sendable, Hashable, CustomStringConvertible {
    /// 32 lowercase hex digits (16 bytes), never all zero.
    public let traceID: String
    /// 16 lowercase hex digits (8 bytes), never all zero: the calling span.
    public let spanID: String

    /// The context the work of one event runs in, on `backend` (`BackendID.rawValue`), event id `eventID`.
    public static func forEvent(backend: String, eventID: String) -> TraceParent {
        let digest = Hashing.sha256Hex(Array("imbridge-trace\u{1}\(backend)\u{1}\(eventID)".utf8))
        let trace = nonZero(String(digest.prefix(32)))
        return TraceParent(traceID: trace, spanID: nonZero(String(digest.dropFirst(32).prefix(16))))
    }

    /// A span of this trace named `name` (one attempt of one outbox entry, say): same trace, its own id.
    public func child(_ name: String) -> TraceParent {
        TraceParent(traceID: traceID, spanID: Self.nonZero(String(Hashing.sha256Hex(Array("\(traceID)\u{1}\(name)".utf8)).prefix(16))))
    }

    /// A `traceparent` header's value read back (version 00, lowercase hex, ids not all zero); nil otherwise.
    public init?(header: String) {
        let parts = header.split(separator: "-", omittingEmptySubsequences: false).map(String.init)
        let hex = { (s: String, count: Int) in s.utf8.count == count && s.utf8.allSatisfy { (48...57).contains($0) || (97...102).contains($0) }
            && !s.utf8.allSatisfy { $0 == 48 } }
        guard parts.count == 4, parts[0] == "00", hex(parts[1], 32), hex(parts[2], 16) else { return nil }
        self.init(traceID: parts[1], spanID: parts[2])
    }

    /// The `traceparent` header's value (version 00, sampled).
    public var header: String { "00-\(traceID)-\(spanID)-01" }
    public var description: String { header }

    /// The context of the work this task does now (none: nothing is added to requests).
    @TaskLocal public static var current: TraceParent?

    /// W3C forbids an all-zero id; a digest prefix that is all zero (2^-64 at worst) gets a last digit 1.
    static func nonZero(_ hex: String) -> String {
        hex.allSatisfy { $0 == "0" } ? String(hex.dropLast()) + "1" : hex
    }

    private init(traceID: String, spanID: String) {
        (self.traceID, self.spanID) = (traceID, spanID)
    }
}
