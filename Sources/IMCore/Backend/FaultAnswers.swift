/// How a vendor's adapter reports a rate limit and a server error: the `IMError` class, the vendor's
/// code, its text and the wait it asks for. They are what the adapter throws when its sandbox answers an
/// injected fault (`POST /_sandbox/faults` with status 429 or 500), so that the testing kit's memory faults
/// (docs/testing-kit.md, "Faults") carry the same code and delay as production. Each preset's values
/// come from its adapter's error table (docs/adapters/<vendor>.md, "Facts on the preset").
public struct FaultAnswers: Hashable, Sendable, Codable {
    /// One answer: what the adapter throws for it.
    public struct Answer: Hashable, Sendable, Codable {
        public var code: IMError.Code
        /// The vendor's code as the adapter reports it (`http_<status>` where the answer has no vendor envelope code).
        public var vendorCode: String?
        /// The vendor's text for the code.
        public var text: String
        /// The wait the vendor asks for before a retry; nil where it says none.
        public var retryAfterMs: Int64?

        public init(_ code: IMError.Code, vendorCode: String?, _ text: String, retryAfterMs: Int64? = nil) {
            self.code = code
            self.vendorCode = vendorCode
            self.text = text
            self.retryAfterMs = retryAfterMs
        }

        /// The error of this answer (retryable, as every rate limit and server error is); `retryAfterMs`
        /// replaces the vendor's own wait when given.
        public func error(vendor: String, _ detail: String, retryAfterMs: Int64? = nil) -> IMError {
            IMError(code, "\(vendor)\(vendorCode.map { " \($0)" } ?? ""): \(text) (\(detail))", vendorCode: vendorCode,
                    vendorMessage: text, isRetryable: true, retryAfterMs: retryAfterMs ?? self.retryAfterMs)
        }
    }

    /// An HTTP 429 (a vendor's rate limit).
    public var rateLimited: Answer
    /// An HTTP 5xx (the vendor's server failed).
    public var serverError: Answer

    public init(rateLimited: Answer, serverError: Answer) {
        self.rateLimited = rateLimited
        self.serverError = serverError
    }

    /// Plain HTTP answers with no vendor code and no wait (`IMError.http`): WuKong's, and capabilities
    /// made without a preset.
    public static let http = FaultAnswers(rateLimited: Answer(.rateLimited, vendorCode: "http_429", "HTTP 429"),
                                          serverError: Answer(.unavailable, vendorCode: "http_500", "HTTP 500"))
}

/// The conversation kinds a vendor's adapter sends into; the others it refuses with `unsupported`
/// (docs/adapters/<vendor>.md, "Conversations").
public struct ConversationKinds: Hashable, Sendable, Codable {
    /// nil: every kind.
    public var kinds: Set<ConversationRef.Kind>?
    /// An `.other(name)` kind is taken when `name` is this prefix followed by a number (WuKong's `wk<N>`
    /// channel types).
    public var otherKindPrefix: String?

    public init(_ kinds: Set<ConversationRef.Kind>?, otherKindPrefix: String? = nil) {
        self.kinds = kinds
        self.otherKindPrefix = otherKindPrefix
    }

    public static let all = ConversationKinds(nil)

    public func allows(_ kind: ConversationRef.Kind) -> Bool {
        guard let kinds else { return true }
        if kinds.contains(kind) { return true }
        if case .other(let name) = kind, let prefix = otherKindPrefix, name.hasPrefix(prefix) {
            return Int(name.dropFirst(prefix.count)) != nil
        }
        return false
    }
}
