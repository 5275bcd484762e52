import IMCore

/// JMessage's error codes and how each becomes an `IMError`, plus the HTTP status the
/// sandbox answers with. The vendor does not document a status per code (UNCONFIRMED); we follow the
/// iOS SDK's HTTP-layer twins (898xxx): "exists"/"missing"/"no permission" → 403, bad parameter → 400,
/// auth → 401, server trouble → 500/503.
public enum JMessageErrorCode {
    public struct Entry: Sendable {
        public var code: Int
        public var status: Int
        public var neutral: IMError.Code
        public var message: String
    }

    public static let table: [Int: Entry] = {
        let rows: [(Int, Int, IMError.Code, String)] = [
            (899000, 500, .unavailable, "server internal error"),
            (899001, 403, .conflict, "user already exists"),
            (899002, 403, .notFound, "user does not exist"),
            (899003, 400, .invalidArgument, "parameter invalid"),
            (899006, 403, .notFound, "group id does not exist"),
            (899007, 401, .authenticationFailed, "missing auth info"),
            (899008, 401, .authenticationFailed, "Basic authentication failed"),
            (899009, 401, .authenticationFailed, "appkey not exist"),
            (899011, 403, .conflict, "member already in group"),
            (899012, 403, .limitExceeded, "not enough room in group"),
            (899013, 400, .limitExceeded, "register list larger than 500"),
            (899016, 403, .permissionDenied, "no permission to send (from_id is not an admin)"),
            (899020, 403, .permissionDenied, "cross-app operation not permitted"),
            (899021, 403, .permissionDenied, "use the cross-app API"),
            (899030, 503, .unavailable, "server busy, retry later"),
            (855001, 403, .recallWindowExpired, "out of retract message time, the effective time is within 3 minutes"),
            (855002, 403, .permissionDenied, "request retract message is not the sender"),
            (855003, 403, .notFound, "retract message is not exist"),
            (855004, 403, .alreadyRecalled, "message had been retracted"),
            (803003, 403, .notFound, "target user does not exist"),
            (803004, 403, .notFound, "target group does not exist"),
            (803005, 403, .permissionDenied, "sender is not in the group"),
            (803007, 400, .limitExceeded, "message too long"),
            (803008, 403, .permissionDenied, "sender is blacklisted by the receiver"),
            (803009, 403, .invalidContent, "message contains sensitive words"),
            (803010, 429, .rateLimited, "sending too fast"),
            (803011, 400, .invalidContent, "message content is not valid JSON"),
            (803012, 403, .permissionDenied, "sender is muted"),
        ]
        return Dictionary(uniqueKeysWithValues: rows.map { ($0.0, Entry(code: $0.0, status: $0.1, neutral: $0.2, message: $0.3)) })
    }()

    /// The HTTP status the sandbox answers a code with.
    public static func status(for code: Int) -> Int { table[code]?.status ?? 400 }

    public static func message(for code: Int) -> String { table[code]?.message ?? "error \(code)" }

    /// Maps an answer with the vendor envelope (or none) to an `IMError`. Rate limits (HTTP 429,
    /// 803010) and server trouble (5xx, 899000, 899030) are retryable; `retryAfterMs` comes from
    /// `Retry-After` or `X-Rate-Limit-Reset` (seconds, as the Java client reads it; UNCONFIRMED).
    public static func error(status: Int, code: Int?, message: String?, retryAfterMs: Int64?) -> IMError {
        guard let code else {
            return IMError.http(status: status, body: message ?? "", retryAfterMs: retryAfterMs)
        }
        var neutral = table[code]?.neutral ?? IMError.http(status: status, body: "").code
        if status == 429 { neutral = .rateLimited }
        let retryable = neutral == .rateLimited || neutral == .unavailable || status >= 500
        return IMError(neutral, "jmessage \(code): \(message ?? Self.message(for: code))", vendorCode: String(code),
                       vendorMessage: message, isRetryable: retryable, retryAfterMs: retryable ? retryAfterMs : nil)
    }
}
