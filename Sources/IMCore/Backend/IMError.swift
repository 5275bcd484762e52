/// Every failure in IMBridge is data: a stable `code` a program can switch on, a human `message`,
/// the vendor's own code and text when a vendor produced it, and whether retrying can help.
///
/// Retry rule: rate limits, timeouts, 5xx and transport failures are retryable (`retryAfterMs` carries
/// the vendor's hint, e.g. NIM's 10 s block or an HTTP `Retry-After`); parameter, auth, permission,
/// limit and "not found" failures are not.
public struct IMError: Error, Hashable, Sendable, Codable, CustomStringConvertible {
    /// Stable error codes. New codes may be added; existing ones never change meaning.
    public struct Code: RawRepresentable, Hashable, Sendable, Codable, CustomStringConvertible {
        public let rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }
        public var description: String { rawValue }

        public static let invalidArgument = Code(rawValue: "invalid_argument")
        public static let malformedPayload = Code(rawValue: "malformed_payload")
        public static let notFound = Code(rawValue: "not_found")
        public static let permissionDenied = Code(rawValue: "permission_denied")
        public static let authenticationFailed = Code(rawValue: "authentication_failed")
        public static let unsupported = Code(rawValue: "unsupported")
        public static let limitExceeded = Code(rawValue: "limit_exceeded")
        public static let recallWindowExpired = Code(rawValue: "recall_window_expired")
        public static let editWindowExpired = Code(rawValue: "edit_window_expired")
        public static let expansionNotEnabled = Code(rawValue: "expansion_not_enabled")
        public static let expansionLimitExceeded = Code(rawValue: "expansion_limit_exceeded")
        public static let duplicateContentType = Code(rawValue: "duplicate_content_type")
        public static let unknownContentType = Code(rawValue: "unknown_content_type")
        public static let invalidContent = Code(rawValue: "invalid_content")
        public static let alreadyRecalled = Code(rawValue: "already_recalled")
        public static let conflict = Code(rawValue: "conflict")
        public static let rateLimited = Code(rawValue: "rate_limited")
        public static let unavailable = Code(rawValue: "unavailable")
        public static let timeout = Code(rawValue: "timeout")
        public static let vendorError = Code(rawValue: "vendor_error")
    }

    public var code: Code
    public var message: String
    /// The vendor's own code (`1004`, `414`, `899002` …) when a vendor answered.
    public var vendorCode: String?
    public var vendorMessage: String?
    public var isRetryable: Bool
    /// How long the vendor asked us to wait, in milliseconds, when it said so.
    public var retryAfterMs: Int64?
    /// Structured facts about the failure, e.g. `["limit": "key_length", "key": "k1"]` for a refused
    /// expansion change.
    public var details: [String: String]

    public init(_ code: Code, _ message: String, vendorCode: String? = nil, vendorMessage: String? = nil,
                isRetryable: Bool? = nil, retryAfterMs: Int64? = nil, details: [String: String] = [:]) {
        self.details = details
        self.code = code
        self.message = message
        self.vendorCode = vendorCode
        self.vendorMessage = vendorMessage
        self.isRetryable = isRetryable ?? Self.defaultRetryable(code)
        self.retryAfterMs = retryAfterMs
    }

    static func defaultRetryable(_ code: Code) -> Bool {
        code == .rateLimited || code == .unavailable || code == .timeout
    }

    public var description: String {
        var text = "\(code): \(message)"
        if let vendorCode { text += " [vendor \(vendorCode)\(vendorMessage.map { ": \($0)" } ?? "")]" }
        return text
    }

    /// The `details` key of a timeout whose request had gone out: how long it was in flight, in ms.
    public static let abandonedAfterMsKey = "abandoned_after_ms"

    /// For a request that timed out after it went out, how long it was in flight: such a request has an
    /// unknown outcome (a slow server may still carry it out later). Nil for every other failure.
    public var abandonedAfterMs: Int64? { details[Self.abandonedAfterMsKey].flatMap(Int64.init) }

    /// Maps an HTTP status with no more specific vendor meaning: 429 → rate limited, 5xx → unavailable
    /// (both retryable), 401 → authentication, 403 → permission, 404 → not found, other 4xx → invalid.
    public static func http(status: Int, body: String, retryAfterMs: Int64? = nil) -> IMError {
        let code: Code = switch status {
        case 429: .rateLimited
        case 500...599: .unavailable
        case 401: .authenticationFailed
        case 403: .permissionDenied
        case 404: .notFound
        default: .invalidArgument
        }
        return IMError(code, "HTTP \(status)", vendorCode: "http_\(status)", vendorMessage: body.isEmpty ? nil : String(body.prefix(300)),
                       retryAfterMs: retryAfterMs)
    }
}
