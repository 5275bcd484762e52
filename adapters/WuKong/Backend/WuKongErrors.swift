import Foundation
import IMCore

/// WuKongIM / business-server answers → `IMError`.
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
    public static func map(httpStatus: Int, body: Data, retryAfterMs: Int64? = nil) -> IMError? {
        let object = try? JSONValue.parse(body)
        let message = object?["msg"]?.stringValue ?? object?["error"]?.stringValue
        switch httpStatus {
        case 200:
            guard let status = object?["status"]?.int64Value, status != 200 else { return nil }
            return reason(Int(status), message: message)
        case 401:
            return IMError(.authenticationFailed, "WuKong refused the credentials (HTTP 401)", vendorCode: "http_401",
                           vendorMessage: message)
        case 400:
            return IMError(.invalidArgument, "WuKong refused the request: \(message ?? "HTTP 400")", vendorCode: "400",
                           vendorMessage: message)
        default:
            var error = IMError.http(status: httpStatus, body: String(decoding: body, as: UTF8.self), retryAfterMs: retryAfterMs)
            if let message { error.vendorMessage = message }
            return (200..<300).contains(httpStatus) ? nil : error
        }
    }

    /// A WuKong protocol reason code (`{"status":n}` with HTTP 200).
    public static func reason(_ code: Int, message: String?) -> IMError {
        let (kind, text): (IMError.Code, String) = switch code {
        case 404: (.notFound, "not found")
        case 19: (.permissionDenied, "channel is banned")
        case 24: (.permissionDenied, "channel is disbanded")
        case 25: (.permissionDenied, "sending is banned in this channel")
        case 4: (.permissionDenied, "sender is blacklisted")
        case 13: (.permissionDenied, "sender is not in the whitelist")
        case 11: (.permissionDenied, "sending is not allowed")
        case 22: (.rateLimited, "rate limited")
        case 15, 6, 10, 17, 18: (.unavailable, "server error")
        case 2, 14: (.authenticationFailed, "authentication failed")
        case 3, 5: (.notFound, code == 3 ? "subscriber does not exist" : "channel does not exist")
        case 8, 9, 16, 20, 21, 23: (.invalidArgument, "request refused")
        default: (.vendorError, "unexpected status")
        }
        return IMError(kind, "WuKong: \(text) (status \(code))", vendorCode: String(code), vendorMessage: message)
    }
}
