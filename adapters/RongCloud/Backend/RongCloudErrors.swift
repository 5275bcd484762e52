import IMCore

/// RongCloud business codes (docs/adapters/rongcloud.md) and how each maps onto HTTP and `IMError`.
///
/// HTTP statuses: 1004 → 401 and 1008 → 429 are documented. The others are UNCONFIRMED; chosen here
/// (and served by the sandbox): parameter/limit codes (1002, 1003, 1005, 1015, 1016, 1019, 1501, 1502)
/// → 400, 1508 → 413, 1001/1006/1007/1009/2007 → 403, 1000/1050 → 500. The client never depends on the
/// status: it maps the body `code` when there is one and the status only when the body is not the
/// vendor envelope.
public enum RongCloudErrorCode {
    public static let ok = 200
    public static let serverError = 1000
    public static let keyMismatch = 1001
    public static let parameterError = 1002
    public static let noPostData = 1003
    public static let signatureError = 1004
    public static let lengthExceeded = 1005
    public static let appLocked = 1006
    public static let methodRestricted = 1007
    public static let rateLimited = 1008
    public static let serviceNotEnabled = 1009
    public static let internalTimeout = 1050
    public static let parameterType = 1501
    public static let quantityExceeded = 1502
    public static let bodyTooLarge = 1508
    public static let devUserLimit = 2007

    /// The HTTP status the server (and the sandbox) answers with for a business code.
    public static func httpStatus(for code: Int) -> Int {
        switch code {
        case ok: 200
        case signatureError: 401
        case rateLimited: 429
        case bodyTooLarge: 413
        case keyMismatch, appLocked, methodRestricted, serviceNotEnabled, devUserLimit: 403
        case serverError, internalTimeout: 500
        default: 400
        }
    }

    /// The documented text of a code, used when the server sends none.
    public static func text(for code: Int) -> String {
        switch code {
        case serverError: "服务内部错误，请稍后重试"
        case keyMismatch: "App Key 与 App Secret 不匹配"
        case parameterError: "参数错误"
        case noPostData: "没有 POST 数据"
        case signatureError: "签名错误，请检查 App Key 与 App Secret"
        case lengthExceeded: "参数长度超限"
        case appLocked: "App 被锁定或删除"
        case methodRestricted: "该方法被限制调用"
        case rateLimited: "调用频率超限"
        case serviceNotEnabled: "服务未开通"
        case internalTimeout: "内部服务超时"
        case parameterType: "参数类型不正确"
        case quantityExceeded: "数量超限"
        case bodyTooLarge: "请求体过大"
        case devUserLimit: "开发环境用户数超限"
        default: "错误 \(code)"
        }
    }

    /// Maps a vendor error to `IMError`: rate limit (1008), server errors (1000, 1050) and HTTP 5xx are
    /// retryable; everything else is not. `retryAfterMs` carries an HTTP `Retry-After` when sent.
    public static func imError(code: Int, message: String?, httpStatus: Int? = nil, retryAfterMs: Int64? = nil,
                               details: [String: String] = [:]) -> IMError {
        let base: IMError.Code
        switch code {
        case signatureError, keyMismatch: base = .authenticationFailed
        case rateLimited: base = .rateLimited
        case serverError, internalTimeout: base = .unavailable
        case appLocked, methodRestricted, serviceNotEnabled: base = .permissionDenied
        case lengthExceeded, quantityExceeded, bodyTooLarge, devUserLimit: base = .limitExceeded
        case parameterError, noPostData, parameterType: base = .invalidArgument
        default: base = (httpStatus ?? 400) >= 500 ? .unavailable : .vendorError
        }
        let text = message ?? text(for: code)
        var neutral = base
        if code == parameterError, let refined = RongCloudRefusal.refine(text) { neutral = refined }
        return IMError(neutral, "RongCloud \(code): \(text)", vendorCode: String(code), vendorMessage: text,
                       isRetryable: neutral == .rateLimited || neutral == .unavailable,
                       retryAfterMs: retryAfterMs ?? (neutral == .rateLimited ? 1000 : nil), details: details)
    }
}

/// The texts the sandbox answers with for refusals the vendor reports as 1002 without a documented
/// code of their own (UNCONFIRMED: the real server's texts are unknown). The client refines a 1002
/// carrying one of them into the matching neutral code; any other 1002 stays `invalid_argument`.
public enum RongCloudRefusal {
    public static let messageNotFound = "messageUID does not exist"
    public static let notSender = "fromUserId is not the sender of the message"
    public static let notExtensible = "message is not extensible (sent without expansion=true)"
    public static let expansionLimit = "expansion limit exceeded"
    /// `/user/info.json` and `/user/refresh.json` of a user never registered.
    public static let userNotFound = "user not found"
    /// `/group/refresh.json` of a group that has no members.
    public static let groupNotFound = "group not found"

    static func refine(_ text: String) -> IMError.Code? {
        if text.contains(messageNotFound) { return .notFound }
        if text.contains(notSender) { return .permissionDenied }
        if text.contains(notExtensible) { return .expansionNotEnabled }
        if text.contains(expansionLimit) { return .expansionLimitExceeded }
        if text.contains(userNotFound) || text.contains(groupNotFound) { return .notFound }
        return nil
    }
}
