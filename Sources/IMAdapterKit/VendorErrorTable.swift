import IMCore

/// One vendor's error codes in one table, shared by its adapter and its sandbox: what a code means in
/// IMBridge (the `IMError` class, whether a retry can help, how long to wait) and how the vendor answers
/// it (the HTTP status, the text in its envelope). The adapter maps every vendor code it reads through
/// `error(code:…)`; the sandbox answers its refusals and injected faults (`POST /_sandbox/faults` with a
/// `vendor_code`) with the entry's `status` and `text`. docs/architecture.md, "The adapter contract".
///
/// Rules every table follows, so the adapters agree where their vendors do:
/// - a code the table lists: its class, or a refinement's where the vendor reuses one code for several
///   things (NIM's 414, RongCloud's 1002) or where the operation decides (NIM's 417 on a recall);
/// - a code it does not list: `vendor_error` (`unavailable` for a 5xx answer), or with
///   `UnknownCode.httpStatus` the class of the HTTP status (`IMError.http`);
/// - an answer with HTTP 429 is `rate_limited` whatever its code; 429 and 5xx answers are retryable;
/// - a retryable error waits the answer's own `Retry-After` if it has one, else the entry's `retryAfterMs`.
public struct VendorErrorTable: Sendable {
    /// The call an answer came from, where the same code means different things there.
    public struct Operation: RawRepresentable, Hashable, Sendable {
        public let rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }
        public static let generic = Operation(rawValue: "generic")
        public static let recall = Operation(rawValue: "recall")
    }

    /// A narrower meaning of one code: when the vendor's text holds one of `fragments` (compared
    /// without case), or when the answer is to `operation`.
    public struct Refinement: Sendable, Hashable {
        public enum Condition: Sendable, Hashable {
            case textContains([String])
            case operation(Operation)
        }
        public var condition: Condition
        public var error: IMError.Code
        /// What IMBridge says the refined code means.
        public var text: String

        public static func text(_ fragments: String..., error: IMError.Code, _ text: String) -> Refinement {
            Refinement(condition: .textContains(fragments), error: error, text: text)
        }

        public static func operation(_ operation: Operation, error: IMError.Code, _ text: String) -> Refinement {
            Refinement(condition: .operation(operation), error: error, text: text)
        }

        func matches(_ message: String, _ operation: Operation) -> Bool {
            switch condition {
            case .textContains(let fragments):
                let lowered = message.lowercased()
                return fragments.contains { lowered.contains($0.lowercased()) }
            case .operation(let wanted): return wanted == operation
            }
        }
    }

    /// One code (or a range of codes) of the vendor.
    public struct Entry: Sendable, Hashable {
        public var codes: ClosedRange<Int>
        public var error: IMError.Code
        /// Whether trying again can help (by default: rate limits, timeouts and unavailability).
        public var retryable: Bool
        /// The HTTP status the vendor answers the code with (its sandbox does the same).
        public var status: Int
        /// The vendor's text for the code, or what it means where the vendor documents none: the text
        /// of the sandbox's envelope, and the vendor message of an answer that carries none.
        public var text: String
        /// How long to wait before a retry when the answer does not say (NIM blocks an app for 10 s).
        public var retryAfterMs: Int64?
        public var refinements: [Refinement]

        /// The code the sandbox answers with for this entry (a range's first).
        public var code: Int { codes.lowerBound }

        public init(_ code: Int, through last: Int? = nil, _ error: IMError.Code, status: Int, _ text: String,
                    retryable: Bool? = nil, retryAfterMs: Int64? = nil, refinements: [Refinement] = []) {
            self.codes = code...(last ?? code)
            self.error = error
            self.retryable = retryable ?? IMError(error, "").isRetryable
            self.status = status
            self.text = text
            self.retryAfterMs = retryAfterMs
            self.refinements = refinements
        }
    }

    /// How a code the table does not list is classed.
    public enum UnknownCode: Sendable {
        /// `vendor_error`, or `unavailable` when the HTTP status is 5xx.
        case vendorError
        /// The class of the HTTP status (`IMError.http`), `vendor_error` without one.
        case httpStatus
    }

    /// The vendor as error messages name it (`NIM 414: …`).
    public let vendor: String
    public let entries: [Entry]
    public let unknownCode: UnknownCode
    /// The HTTP status of a code the table does not list.
    public let unknownStatus: Int
    /// For a fault injected with an HTTP status and no vendor code: the code the sandbox answers with,
    /// the first whose statuses hold it.
    public let faultCodes: [(statuses: ClosedRange<Int>, code: Int)]
    private let single: [Int: Entry]

    public init(vendor: String, unknownCode: UnknownCode = .vendorError, unknownStatus: Int = 400,
                faultCodes: [(statuses: ClosedRange<Int>, code: Int)] = [], _ entries: [Entry]) {
        self.vendor = vendor
        self.entries = entries
        self.unknownCode = unknownCode
        self.unknownStatus = unknownStatus
        self.faultCodes = faultCodes
        var single: [Int: Entry] = [:]
        for (index, entry) in entries.enumerated() {
            // A code listed alone may sit in a range (NIM's 508 in 500…599): it outranks the range.
            let isRange = entry.codes.count > 1
            precondition(!entries[..<index].contains { ($0.codes.count > 1) == isRange && $0.codes.overlaps(entry.codes) },
                         "\(vendor): code \(entry.code) listed twice")
            if !isRange { single[entry.code] = entry }
        }
        self.single = single
    }

    /// The entry of `code`, if the table lists it: alone, else in a range.
    public subscript(code: Int) -> Entry? {
        single[code] ?? entries.first { $0.codes.contains(code) }
    }

    /// The HTTP status the vendor answers `code` with.
    public func status(for code: Int) -> Int { self[code]?.status ?? unknownStatus }

    /// The vendor's text for `code`.
    public func text(for code: Int) -> String { self[code]?.text ?? "undocumented code \(code)" }

    /// The code the sandbox answers a fault of `status` with when none was given.
    public func faultCode(for status: Int) -> Int? { faultCodes.first { $0.statuses.contains(status) }?.code }

    /// The class `code` has in an answer with `message` to `operation` (before the HTTP status is looked at).
    public func errorClass(code: Int, message: String? = nil, operation: Operation = .generic) -> IMError.Code? {
        guard let entry = self[code] else { return nil }
        return entry.refinements.first { $0.matches(message ?? "", operation) }?.error ?? entry.error
    }

    /// The `IMError` of a vendor answer with `code`. `message` is the vendor's text (the entry's when
    /// nil); `httpStatus` the answer's status where the vendor sends errors with one; `retryAfterMs`
    /// the answer's own wait (`Retry-After`).
    public func error(code: Int, message: String?, httpStatus: Int? = nil, operation: Operation = .generic,
                      retryAfterMs: Int64? = nil, details: [String: String] = [:]) -> IMError {
        let entry = self[code]
        let refinement = entry?.refinements.first { $0.matches(message ?? "", operation) }
        var kind: IMError.Code
        var retryable: Bool
        if let refinement {
            kind = refinement.error
            retryable = IMError(kind, "").isRetryable
        } else if let entry {
            kind = entry.error
            retryable = entry.retryable
        } else {
            switch unknownCode {
            case .vendorError: kind = (httpStatus ?? 0) >= 500 ? .unavailable : .vendorError
            case .httpStatus: kind = httpStatus.map { IMError.http(status: $0, body: "").code } ?? .vendorError
            }
            retryable = IMError(kind, "").isRetryable
        }
        if httpStatus == 429 { kind = .rateLimited }
        if let httpStatus, httpStatus == 429 || httpStatus >= 500 { retryable = true }
        let meaning = refinement?.text ?? entry?.text ?? "undocumented code"
        let vendorMessage = message ?? entry?.text ?? text(for: code)
        let said = message.map { $0.isEmpty || $0 == meaning ? "" : " (\($0))" } ?? ""
        return IMError(kind, "\(vendor) \(code): \(meaning)\(said)", vendorCode: String(code), vendorMessage: vendorMessage,
                       isRetryable: retryable, retryAfterMs: retryable ? retryAfterMs ?? entry?.retryAfterMs : nil, details: details)
    }
}
