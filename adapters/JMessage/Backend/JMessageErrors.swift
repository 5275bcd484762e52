import IMAdapterKit
import IMCore

/// JMessage's error codes (`{"error":{"code":N,"message":…}}`) in IMBridge's error classes, with the HTTP
/// status the vendor answers each with. The vendor does not document a status per code (UNCONFIRMED);
/// we follow the iOS SDK's HTTP-layer twins (898xxx): "exists"/"missing"/"no permission" → 403, bad
/// parameter → 400, auth → 401, server trouble → 500/503 (docs/adapters/jmessage.md). A code the table
/// does not list takes the class of its HTTP status; an HTTP 429 is `rate_limited`, and 429 and 5xx are
/// retryable, with the wait of `Retry-After` or `X-Rate-Limit-Reset` (seconds, as the Java client reads
/// it; UNCONFIRMED). The client maps through `table`; the sandbox answers with the same entries.
public enum JMessageErrors {
    public typealias Entry = VendorErrorTable.Entry

    public static let serverError = Entry(899000, .unavailable, status: 500, "server internal error")
    public static let userExists = Entry(899001, .conflict, status: 403, "user already exists")
    public static let userNotFound = Entry(899002, .notFound, status: 403, "user does not exist")
    public static let invalidParameter = Entry(899003, .invalidArgument, status: 400, "parameter invalid")
    public static let groupNotFound = Entry(899006, .notFound, status: 403, "group id does not exist")
    public static let missingAuth = Entry(899007, .authenticationFailed, status: 401, "missing auth info")
    public static let basicAuthFailed = Entry(899008, .authenticationFailed, status: 401, "Basic authentication failed")
    public static let unknownAppKey = Entry(899009, .authenticationFailed, status: 401, "appkey not exist")
    public static let alreadyMember = Entry(899011, .conflict, status: 403, "member already in group")
    public static let groupFull = Entry(899012, .limitExceeded, status: 403, "not enough room in group")
    public static let registerListTooLong = Entry(899013, .limitExceeded, status: 400, "register list larger than 500")
    public static let notMember = Entry(899014, .invalidArgument, status: 400, "user not in group")
    /// A group message whose sender (the admin every REST send goes out as) is not in the group: the code
    /// JMessage's server gives a sender outside the group (docs/adapters/jmessage.md, "Conversations").
    public static let senderNotInGroup = Entry(803005, .permissionDenied, status: 403, "sender is not in the group")
    public static let noSendPermission = Entry(899016, .permissionDenied, status: 403, "no permission to send (from_id is not an admin)")
    public static let serverBusy = Entry(899030, .unavailable, status: 503, "server busy, retry later")
    public static let retractExpired = Entry(855001, .recallWindowExpired, status: 403,
                                             "out of retract message time, the effective time is within 3 minutes")
    public static let retractNotSender = Entry(855002, .permissionDenied, status: 403, "request retract message is not the sender")
    public static let retractNotFound = Entry(855003, .notFound, status: 403, "retract message is not exist")
    public static let alreadyRetracted = Entry(855004, .alreadyRecalled, status: 403, "message had been retracted")

    public static let table = VendorErrorTable(vendor: "jmessage", unknownCode: .httpStatus, unknownStatus: 400, faultCodes: [
        (429...429, serverBusy.code), (503...503, serverBusy.code), (500...599, serverError.code), (100...599, invalidParameter.code),
    ], [
        serverError, userExists, userNotFound, invalidParameter, groupNotFound, missingAuth, basicAuthFailed, unknownAppKey,
        alreadyMember, groupFull, registerListTooLong, notMember, noSendPermission,
        Entry(899020, .permissionDenied, status: 403, "cross-app operation not permitted"),
        Entry(899021, .permissionDenied, status: 403, "use the cross-app API"),
        serverBusy, retractExpired, retractNotSender, retractNotFound, alreadyRetracted,
        Entry(803003, .notFound, status: 403, "target user does not exist"),
        Entry(803004, .notFound, status: 403, "target group does not exist"),
        senderNotInGroup,
        Entry(803007, .limitExceeded, status: 400, "message too long"),
        Entry(803008, .permissionDenied, status: 403, "sender is blacklisted by the receiver"),
        Entry(803009, .invalidContent, status: 403, "message contains sensitive words"),
        Entry(803010, .rateLimited, status: 429, "sending too fast"),
        Entry(803011, .invalidContent, status: 400, "message content is not valid JSON"),
        Entry(803012, .permissionDenied, status: 403, "sender is muted"),
    ])

    /// An answer's error: the table's for a vendor envelope, the HTTP status's (`IMError.http`) without one.
    public static func error(status: Int, code: Int?, message: String?, retryAfterMs: Int64?) -> IMError {
        guard let code else { return IMError.http(status: status, body: message ?? "", retryAfterMs: retryAfterMs) }
        return table.error(code: code, message: message, httpStatus: status, retryAfterMs: retryAfterMs)
    }
}
