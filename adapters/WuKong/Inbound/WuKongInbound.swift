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
/// Poison messages: a message of a verified batch that does not decode, or whose content does not
/// convert (a registered custom type failing `validate()`), is set aside (`messageItems`, then
/// `WuKongBackend.batch(from:)`): the batch is answered 200, its other messages relay, and the sink keeps
/// the bad one as an inbound dead letter (format `message-json`).
///
/// Refusals (no events produced): wrong/missing secret → `authentication_failed` (`details["http_status"]`
/// = 401); wrong method, unknown event, or a body that does not parse → `malformed_payload` (400).
/// WuKongIM retries `msg.notify` on anything but 200, so a refused batch comes back.
public struct WuKongInbound: Sendable {
    public static let secretHeader = "X-IMBridge-Secret"
    /// The largest webhook body read: 8 MiB. WuKongIM pushes `msg.notify` in batches of at most 100
    /// messages, up to about 500 after failed attempts; a message's size is not documented, so this
    /// leaves 16 KiB per message of a 500-message batch. A refused batch is lost after five attempts,
    /// hence the headroom; the secret is checked before any of it is read (docs/adapters/wukong.md,
    /// "Callback limits").
    public static let maxBodyBytes = 8 << 20
    public static let secretQueryKey = "secret"

    public let secret: String?

    public init(secret: String?) {
        self.secret = secret?.isEmpty == true ? nil : secret
    }

    /// Verifies and parses one webhook request (pure: no I/O).
    public func parse(_ request: HTTPRequestData) throws -> WuKongWebhookPayload {
        let event = try verifiedEvent(request)
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

    /// One message of a webhook batch: decoded, or the reason it did not decode; `raw` is its own JSON.
    public struct Item: Sendable {
        /// The message's own JSON, kept when it is set aside: the bytes received when it did not decode
        /// or came alone, else the decoded batch element encoded again — on demand, since only a message
        /// that fails to convert needs it (encoding every one was ≈ 1 % of the relay's CPU).
        public var raw: [UInt8] { received ?? (try? message.get()).flatMap { try? Array(WuKongJSON.encode($0)) } ?? [] }
        var received: [UInt8]?
        public var message: Result<WKMessage, IMError>
        /// `msg:<message_id>` when the message names one, else a hash of `raw`: stable across redeliveries.
        public var key: String

        init(raw received: [UInt8]?, message: Result<WKMessage, IMError>, key: String) {
            (self.received, self.message, self.key) = (received, message, key)
        }
    }

    /// The format name of a set-aside message: its own JSON object (one element of the batch).
    public static let setAsideFormat = "message-json"

    /// Verifies one webhook request and splits it into its messages, each decoded on its own, so that
    /// one message of a `msg.notify` batch that does not decode does not refuse the others. Refused
    /// (throws): a failed verification, a wrong method or event, or a body that is not a JSON array
    /// (`msg.notify`) / object (`msg.offline`). `user.onlinestatus` has no messages (empty).
    public func messageItems(_ request: HTTPRequestData) throws -> [Item] {
        let event = try verifiedEvent(request)
        let decoder = WuKongJSON.decoder()
        switch event {
        case "msg.notify":
            // The common case: every message decodes, the batch in one pass — read from its parse when
            // every message has the usual shape (`WKMessage(parsed:)`), else by `JSONDecoder`.
            if case .array(let elements)? = try? JSONValue.parse(Data(request.body)) {
                var messages: [WKMessage] = []
                messages.reserveCapacity(elements.count)
                for element in elements {
                    guard let message = WKMessage(parsed: element) else { break }
                    messages.append(message)
                }
                if messages.count == elements.count {
                    return messages.map { message in
                        Item(raw: nil, message: .success(message), key: "msg:\(message.messageIDStr)")
                    }
                }
            }
            if let messages = try? decoder.decode([WKMessage].self, from: Data(request.body)) {
                return messages.map { message in
                    Item(raw: nil, message: .success(message), key: "msg:\(message.messageIDStr)")
                }
            }
            guard case .array(let elements)? = try? JSONValue.parse(request.bodyString) else {
                throw Self.malformed("msg.notify body is not a JSON array")
            }
            return elements.map { Self.item(Array($0.jsonString().utf8), id: $0["message_id"]) }
        case "msg.offline":
            guard let element = try? JSONValue.parse(request.bodyString), element.objectValue != nil else {
                throw Self.malformed("msg.offline body is not a JSON object")
            }
            return [Self.item(request.body, id: element["message_id"])]
        case "user.onlinestatus":
            _ = try parse(request)
            return []
        default:
            throw Self.malformed("unknown event '\(event)'")
        }
    }

    /// Decodes one message's own JSON (a batch element, or a set-aside message replayed).
    public static func item(_ raw: [UInt8], id: JSONValue? = nil) -> Item {
        let key = (id?.int64Value.map(String.init) ?? id?.stringValue).map { "msg:\($0)" } ?? "raw:\(Hashing.sha1Hex(raw))"
        do {
            return Item(raw: raw, message: .success(try WuKongJSON.decoder().decode(WKMessage.self, from: Data(raw))), key: key)
        } catch {
            return Item(raw: raw, message: .failure(IMError(.malformedPayload, "message does not decode: \(error)")), key: key)
        }
    }

    /// Checks the shared secret, the method and the event name; returns the event name.
    func verifiedEvent(_ request: HTTPRequestData) throws -> String {
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
        return event
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
