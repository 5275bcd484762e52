import IMCore

/// NIM v1 envelope codes → `IMError` (docs/adapters/nim.md). Every error keeps the vendor code and `desc`.
///
/// | code | IMError | retry |
/// |---|---|---|
/// | 414 with `desc` checksum / appkey / CurTime … | authentication_failed | no |
/// | 414 `already register` | conflict | no |
/// | 414 other | invalid_argument | no |
/// | 403, 315, 422, 7101 | permission_denied | no |
/// | 404 | not_found | no |
/// | 405, 419 | limit_exceeded | no |
/// | 801 (team full) | limit_exceeded | no |
/// | 802 (no permission on the team), 804 (not in the team) | permission_denied | no |
/// | 803 (no such team) | not_found | no |
/// | 809 (already in the team) | conflict | no |
/// | 408 | timeout | yes |
/// | 416 | rate_limited, `retryAfterMs` 10 000 (NIM blocks the app for 10 s) | yes |
/// | 417 | conflict (`already_recalled` for a recall) | no |
/// | 508 | recall_window_expired (UNCONFIRMED code, see docs/adapters/nim.md) | no |
/// | 431, 500, other 5xx | unavailable | yes |
/// | anything else | vendor_error | no |
public enum NIMErrorMapping {
    /// The operation an error came from, where the same code means different things.
    public enum Operation: Sendable { case generic, recall }

    /// How long NIM blocks an app after a 416.
    public static let rateLimitBlockMs: Int64 = 10_000

    public static func error(code: Int, desc: String?, operation: Operation = .generic) -> IMError {
        let text = desc ?? ""
        let lowered = text.lowercased()
        func make(_ imCode: IMError.Code, _ message: String, retry: Bool? = nil, after: Int64? = nil) -> IMError {
            IMError(imCode, "NIM \(code): \(message)", vendorCode: String(code), vendorMessage: desc,
                    isRetryable: retry, retryAfterMs: after)
        }
        switch code {
        case 414 where ["checksum", "appkey", "curtime", "nonce"].contains(where: lowered.contains):
            return make(.authenticationFailed, "request signature refused (\(text))")
        case 414 where lowered.contains("already register"):
            return make(.conflict, "already registered")
        case 414:
            return make(.invalidArgument, "parameter error (\(text))")
        case 403, 315, 422, 7101:
            return make(.permissionDenied, "not allowed (\(text))")
        case 404:
            return make(.notFound, "object does not exist (\(text))")
        case 801:
            return make(.limitExceeded, "team member limit reached (\(text))")
        case 802, 804:
            return make(.permissionDenied, code == 802 ? "no permission on the team (\(text))" : "not a member of the team (\(text))")
        case 803:
            return make(.notFound, "team does not exist (\(text))")
        case 809:
            return make(.conflict, "already in the team (\(text))")
        case 405, 419:
            return make(.limitExceeded, "over a limit (\(text))")
        case 408:
            return make(.timeout, "request timeout", retry: true)
        case 416:
            return make(.rateLimited, "rate limited; NIM blocks the app for 10 s", retry: true, after: rateLimitBlockMs)
        case 417 where operation == .recall:
            return make(.alreadyRecalled, "message already recalled (\(text))")
        case 417:
            return make(.conflict, "duplicate operation (\(text))")
        case 508:
            return make(.recallWindowExpired, "outside the recall window (\(text))")
        case 431, 500...599:
            return make(.unavailable, "server side failure (\(text))", retry: true)
        default:
            return make(.vendorError, text.isEmpty ? "unexpected code" : text)
        }
    }
}
