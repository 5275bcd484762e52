import Foundation
import IMCore
import IMHTTP

/// A raw HTTP request as the bridge's HTTP server received it.
public struct WuKongWebhookRequest: Sendable {
    public var method: String
    /// The raw query string (without `?`), e.g. `event=msg.notify` or `secret=S?event=msg.notify`.
    public var query: String
    /// Header names are matched case-insensitively.
    public var headers: [(name: String, value: String)]
    public var body: Data

    public init(method: String = "POST", query: String, headers: [(name: String, value: String)] = [], body: Data) {
        self.method = method
        self.query = query
        self.headers = headers
        self.body = body
    }

    public func header(_ name: String) -> String? {
        headers.first { $0.name.caseInsensitiveCompare(name) == .orderedSame }?.value
    }
}

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

    public func parse(_ request: WuKongWebhookRequest) throws -> WuKongWebhookPayload {
        let query = Self.parseQuery(request.query)
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
        do {
            switch event {
            case "msg.notify":
                return .messages(try decoder.decode([WKMessage].self, from: request.body), event: event)
            case "msg.offline":
                return .messages([try decoder.decode(WKMessage.self, from: request.body)], event: event)
            case "user.onlinestatus":
                return .onlineStatus(try decoder.decode([String].self, from: request.body))
            default:
                throw Self.malformed("unknown event '\(event)'")
            }
        } catch let error as IMError {
            throw error
        } catch {
            throw Self.malformed("\(event) body does not parse: \(error)")
        }
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
