import IMAdapterKit
import IMCore

/// NIM v1 envelope codes (`{"code":N,"desc":…}`, always with HTTP 200) in IMBridge's error classes
/// (docs/adapters/nim.md). The client maps every code other than 200 through `table`; the sandbox answers
/// its refusals and injected faults with the same entries.
///
/// | code | IMError | retry |
/// |---|---|---|
/// | 414 with `desc` checksum / appkey / CurTime / nonce | authentication_failed | no |
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
/// | 431, 500…599 | unavailable | yes |
/// | anything else | vendor_error | no |
public enum NIMErrors {
    public typealias Entry = VendorErrorTable.Entry

    public static let parameter = Entry(414, .invalidArgument, status: 200, "parameter error", refinements: [
        .text("checksum", "appkey", "curtime", "nonce", error: .authenticationFailed, "request signature refused"),
        .text("already register", error: .conflict, "already registered"),
    ])
    public static let notAllowed = Entry(403, .permissionDenied, status: 200, "not allow!")
    public static let notFound = Entry(404, .notFound, status: 200, "object does not exist")
    public static let tooLong = Entry(405, .limitExceeded, status: 200, "parameter too long")
    public static let timeout = Entry(408, .timeout, status: 200, "request timeout")
    /// NIM blocks the app for 10 s after one.
    public static let frequencyControl = Entry(416, .rateLimited, status: 200, "frequency control", retryAfterMs: 10_000)
    public static let duplicate = Entry(417, .conflict, status: 200, "duplicate operation", refinements: [
        .operation(.recall, error: .alreadyRecalled, "message already recalled"),
    ])
    public static let overLimit = Entry(419, .limitExceeded, status: 200, "over the quantity limit")
    public static let recallTimeout = Entry(508, .recallWindowExpired, status: 200, "msg recall timeout")
    public static let teamFull = Entry(801, .limitExceeded, status: 200, "team member limit reached")
    public static let noTeamPermission = Entry(802, .permissionDenied, status: 200, "no permission on the team")
    public static let noSuchTeam = Entry(803, .notFound, status: 200, "team does not exist")
    public static let notInTeam = Entry(804, .permissionDenied, status: 200, "not a member of the team")
    public static let alreadyInTeam = Entry(809, .conflict, status: 200, "already in the team")

    public static let table = VendorErrorTable(vendor: "NIM", unknownStatus: 200, faultCodes: [(429...429, frequencyControl.code)], [
        parameter, notAllowed,
        Entry(315, .permissionDenied, status: 200, "IP restricted"),
        Entry(422, .permissionDenied, status: 200, "account disabled"),
        Entry(7101, .permissionDenied, status: 200, "blocked by the receiver"),
        notFound, tooLong, overLimit, timeout, frequencyControl, duplicate, recallTimeout,
        teamFull, noTeamPermission, noSuchTeam, notInTeam, alreadyInTeam,
        Entry(431, .unavailable, status: 200, "duplicate HTTP request"),
        Entry(500, through: 599, .unavailable, status: 200, "server error"),
    ])
}
