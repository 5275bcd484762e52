import IMAdapterKit
import IMCore

/// RongCloud business codes (docs/adapters/rongcloud.md) in IMBridge's error classes, with the HTTP
/// status each is answered with. The client maps through `table`; the sandbox answers with the same entries.
///
/// HTTP statuses: 1004 → 401 and 1008 → 429 are documented. The others are UNCONFIRMED; chosen here
/// (and served by the sandbox): parameter/limit codes (1002, 1003, 1005, 1015, 1016, 1019, 1501, 1502)
/// → 400, 1508 → 413, 1001/1006/1007/1009/2007 → 403, 1000/1050 → 500. The client never depends on the
/// status for a code the table lists: it maps the body `code` when there is one and the status only when
/// the body is not the vendor envelope (or the code is unknown: `vendor_error`, `unavailable` for a 5xx).
/// Rate limit (1008), server errors (1000, 1050), 429 and 5xx are retryable; 1008 waits 1 s unless the
/// answer's `Retry-After` says otherwise.
public enum RongCloudErrors {
    public typealias Entry = VendorErrorTable.Entry

    /// The envelope code of success.
    public static let ok = 200

    public static let serverError = Entry(1000, .unavailable, status: 500, "服务内部错误，请稍后重试")
    public static let keyMismatch = Entry(1001, .authenticationFailed, status: 403, "App Key 与 App Secret 不匹配")
    /// Also the code of the refusals the vendor documents no code for (`RongCloudRefusal`), refined by their text.
    public static let parameterError = Entry(1002, .invalidArgument, status: 400, "参数错误", refinements: [
        .text(RongCloudRefusal.messageNotFound, error: .notFound, "message not found"),
        .text(RongCloudRefusal.notSender, error: .permissionDenied, "not the sender of the message"),
        .text(RongCloudRefusal.notExtensible, error: .expansionNotEnabled, "message not extensible"),
        .text(RongCloudRefusal.expansionLimit, error: .expansionLimitExceeded, "expansion limit exceeded"),
        .text(RongCloudRefusal.userNotFound, RongCloudRefusal.groupNotFound, error: .notFound, "user or group not found"),
    ])
    public static let noPostData = Entry(1003, .invalidArgument, status: 400, "没有 POST 数据")
    public static let signatureError = Entry(1004, .authenticationFailed, status: 401, "签名错误，请检查 App Key 与 App Secret")
    public static let lengthExceeded = Entry(1005, .limitExceeded, status: 400, "参数长度超限")
    public static let appLocked = Entry(1006, .permissionDenied, status: 403, "App 被锁定或删除")
    public static let methodRestricted = Entry(1007, .permissionDenied, status: 403, "该方法被限制调用")
    public static let rateLimited = Entry(1008, .rateLimited, status: 429, "调用频率超限", retryAfterMs: 1000)
    public static let serviceNotEnabled = Entry(1009, .permissionDenied, status: 403, "服务未开通")
    public static let internalTimeout = Entry(1050, .unavailable, status: 500, "内部服务超时")
    public static let parameterType = Entry(1501, .invalidArgument, status: 400, "参数类型不正确")
    public static let quantityExceeded = Entry(1502, .limitExceeded, status: 400, "数量超限")
    public static let bodyTooLarge = Entry(1508, .limitExceeded, status: 413, "请求体过大")
    public static let devUserLimit = Entry(2007, .limitExceeded, status: 403, "开发环境用户数超限")

    public static let table = VendorErrorTable(vendor: "RongCloud", faultCodes: [
        (429...429, rateLimited.code), (500...599, serverError.code), (401...401, signatureError.code), (100...599, parameterError.code),
    ], [
        serverError, keyMismatch, parameterError, noPostData, signatureError, lengthExceeded, appLocked, methodRestricted,
        rateLimited, serviceNotEnabled, internalTimeout, parameterType, quantityExceeded, bodyTooLarge, devUserLimit,
    ])
}

/// The texts the sandbox answers with for refusals the vendor reports as 1002 without a documented
/// code of their own (UNCONFIRMED: the real server's texts are unknown). The table refines a 1002
/// carrying one of them into the matching class; any other 1002 stays `invalid_argument`.
public enum RongCloudRefusal {
    public static let messageNotFound = "messageUID does not exist"
    public static let notSender = "fromUserId is not the sender of the message"
    public static let notExtensible = "message is not extensible (sent without expansion=true)"
    public static let expansionLimit = "expansion limit exceeded"
    /// `/user/info.json` and `/user/refresh.json` of a user never registered.
    public static let userNotFound = "user not found"
    /// `/group/refresh.json` of a group that has no members.
    public static let groupNotFound = "group not found"
}
