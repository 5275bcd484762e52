import Foundation
import IMAdapterKit
import IMCore
import IMHTTP

/// What one webhook call carried, parsed and verified.
public enum WuKongWebhookPayload: Hashable, Sendable {
    /// `msg.notify` (array, batched, redelivered until HTTP 200) or `msg.offline` (one object, no retry).
    case messages([WKMessage], event: String)
    /// `user.onlinestatus`: `"<uid>-<device_flag>-<online>-<conn_id>-<device_online_count>-<total_online_count>"`.
    case onlineStatus([String])
}

/// Parses and verifies WuKongIM's webhook: `POST <url>?event=<name>`, JSON body, no signature.
///
/// WuKongIM signs nothing, so IMBridge supports a **shared secret** configured on both sides, sent
/// either as the query parameter `secret` (put it in WuKongIM's `webhook.httpAddr`, e.g.
/// `http://bridge:8080/wukong?secret=S`; WuKongIM then appends `?event=…` and sends
/// `?secret=S?event=msg.notify`, which this parser splits) or as the header `X-IMBridge-Secret`
/// (added by a proxy in front of the bridge). With no secret configured every request is accepted.
///
/// Refusals (no events produced): wrong/missing secret → `authentication_failed` (`details["http_status"]`
/// = 401); wrong method, unknown event, or a body that does not parse → `malformed_payload` (400).
/// WuKongIM retries `msg.notify` on anything but 200, so a refused batch comes back.
public struct WuKongInbound: Sendable {
    public static let secretHeader = "X-IMBridge-Secret"
    public static let secretQueryKey = "secret"

    public let secret: String?

    public init(secret: String?) {
        self.secret = secret?.isEmpty == true ? nil : secret
    }

    /// Verifies and parses one webhook request (pure: no I/O).
    public func parse(_ request: HTTPRequestData) throws -> WuKongWebhookPayload {
        let query = Self.parseQuery(request.rawQuery ?? "")
        if let secret {
            let given = query[Self.secretQueryKey] ?? request.header(Self.secretHeader) ?? ""
            guard Hashing.constantTimeEquals(given, secret) else {
                throw IMError(.authenticationFailed, "WuKong webhook: missing or wrong shared secret",
                              details: ["http_status": "401"])
            }
        }
        guard request.method.uppercased() == "POST" else {
            throw Self.malformed("method \(request.method) is not POST")
        }
        guard let event = query["event"], !event.isEmpty else { throw Self.malformed("no ?event= in the query") }
        let decoder = WuKongJSON.decoder()
        let body = Data(request.body)
        do {
            switch event {
            case "msg.notify":
                return .messages(try decoder.decode([WKMessage].self, from: body), event: event)
            case "msg.offline":
                return .messages([try decoder.decode(WKMessage.self, from: body)], event: event)
            case "user.onlinestatus":
                return .onlineStatus(try decoder.decode([String].self, from: body))
            default:
                throw Self.malformed("unknown event '\(event)'")
            }
        } catch let error as IMError {
            throw error
        } catch {
            throw Self.malformed("\(event) body does not parse: \(error)")
        }
    }

    /// WuKongIM's answers: exactly HTTP 200 `{"status":200}` once the events are taken (it redelivers
    /// `msg.notify` on anything else); 401 for a wrong shared secret, 400 for a malformed request, 500
    /// when a sync or the sink failed, each with WuKong's `{"msg","status"}` body.
    public static let answers = CallbackAnswers(success: .json(WKStatus.ok), refusal: failure, retry: failure)

    static let failure: @Sendable (IMError) -> HTTPResponseData = { error in
        let status = error.details["http_status"].flatMap(Int.init) ?? (error.code == .authenticationFailed ? 401
            : error.code == .malformedPayload ? 400 : 500)
        return .json(WKStatus(status: status, msg: error.message), status: status)
    }

    static func malformed(_ text: String) -> IMError {
        IMError(.malformedPayload, "WuKong webhook: \(text)", details: ["http_status": "400"])
    }

    /// Splits `a=1&b=2`, tolerating WuKongIM's `secret=S?event=msg.notify` concatenation; percent-decodes.
    public static func parseQuery(_ query: String) -> [String: String] {
        var result: [String: String] = [:]
        let pairs = query.split(whereSeparator: { $0 == "&" || $0 == "?" })
        for pair in pairs {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            let key = String(parts[0]).removingPercentEncoding ?? String(parts[0])
            let value = parts.count > 1 ? (String(parts[1]).replacingOccurrences(of: "+", with: " ").removingPercentEncoding ?? String(parts[1])) : ""
            if result[key] == nil { result[key] = value }
        }
        return result
    }
}
