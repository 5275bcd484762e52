import Foundation
import IMAdapterKit
import IMCore

/// WuKongIM / business-server answers → `IMError`. The protocol's reason codes (`{"status":n}` with
/// HTTP 200) and the refusal `{"msg","status":400}` (HTTP 400) go through `table`, which the sandbox
/// answers from too; the other HTTP answers map by status.
///
/// | answer | code | retry |
/// |---|---|---|
/// | HTTP 401 (empty body: wrong manager token; `{"msg"}`: no session) | `authentication_failed` | no |
/// | HTTP 400 `{"msg","status":400}` | `invalid_argument` (vendor text kept) | no |
/// | HTTP 404 (unknown route) | `not_found` | no |
/// | HTTP 429 / 5xx, transport failure | `rate_limited` / `unavailable` (Retry-After kept) | yes |
/// | HTTP 200 `{"status":404}` | `not_found` | no |
/// | HTTP 200 `{"status":n}` reason codes: 19 ban, 24 disband, 25 send ban, 4 blacklist, 13 whitelist, 11 not allowed | `permission_denied` | no |
/// | 22 rate limit | `rate_limited` | yes |
/// | 15 system error, 6/10/17/18 node errors | `unavailable` | yes |
/// | 2 auth fail, 14 token error | `authentication_failed` | no |
/// | 3 subscriber / 5 channel not exist | `not_found` | no |
/// | 16 channel id, 8 msg key, 9 payload decode, 20, 21, 23 | `invalid_argument` | no |
/// | any other non-200 `status` | `vendor_error` | no |
public enum WuKongErrors {
    public typealias Entry = VendorErrorTable.Entry

    /// A refused request: HTTP 400 `{"msg": why, "status": 400}`.
    public static let badRequest = Entry(400, .invalidArgument, status: 400, "request refused")
    public static let notFound = Entry(404, .notFound, status: 200, "not found")

    public static let table = VendorErrorTable(vendor: "WuKong", [
        Entry(2, .authenticationFailed, status: 200, "authentication failed"),
        Entry(3, .notFound, status: 200, "subscriber does not exist"),
        Entry(4, .permissionDenied, status: 200, "sender is blacklisted"),
        Entry(5, .notFound, status: 200, "channel does not exist"),
        Entry(6, .unavailable, status: 200, "user is not on this node"),
        Entry(8, .invalidArgument, status: 200, "message key error"),
        Entry(9, .invalidArgument, status: 200, "payload does not decode"),
        Entry(10, .unavailable, status: 200, "forwarding to another node failed"),
        Entry(11, .permissionDenied, status: 200, "sending is not allowed"),
        Entry(13, .permissionDenied, status: 200, "sender is not in the whitelist"),
        Entry(14, .authenticationFailed, status: 200, "token query failed"),
        Entry(15, .unavailable, status: 200, "system error"),
        Entry(16, .invalidArgument, status: 200, "channel id error"),
        Entry(17, .unavailable, status: 200, "node match error"),
        Entry(18, .unavailable, status: 200, "node does not match"),
        Entry(19, .permissionDenied, status: 200, "channel is banned"),
        Entry(20, .invalidArgument, status: 200, "header not supported"),
        Entry(21, .invalidArgument, status: 200, "client key is empty"),
        Entry(22, .rateLimited, status: 200, "rate limited"),
        Entry(23, .invalidArgument, status: 200, "channel type not supported"),
        Entry(24, .permissionDenied, status: 200, "channel is disbanded"),
        Entry(25, .permissionDenied, status: 200, "sending is banned in this channel"),
        badRequest, notFound,
    ])

    /// The error of an answer, nil for a success.
    public static func map(httpStatus: Int, body: Data, retryAfterMs: Int64? = nil) -> IMError? {
        let object = try? JSONValue.parse(body)
        let message = object?["msg"]?.stringValue ?? object?["error"]?.stringValue
        switch httpStatus {
        case 200:
            guard let status = object?["status"]?.int64Value, status != 200 else { return nil }
            return table.error(code: Int(status), message: message)
        case 401:
            return IMError(.authenticationFailed, "WuKong refused the credentials (HTTP 401)", vendorCode: "http_401",
                           vendorMessage: message)
        case badRequest.status:
            return table.error(code: badRequest.code, message: message, httpStatus: httpStatus)
        default:
            var error = IMError.http(status: httpStatus, body: String(decoding: body, as: UTF8.self), retryAfterMs: retryAfterMs)
            if let message { error.vendorMessage = message }
            return (200..<300).contains(httpStatus) ? nil : error
        }
    }
}
