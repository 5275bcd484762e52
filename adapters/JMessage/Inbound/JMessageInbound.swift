import Foundation
import IMAdapterKit
import IMCore
import IMHTTP

/// The paid routing push ("实时消息路由", docs/adapters/jmessage.md): JMessage POSTs
/// `{"total": N, "messages": [<report message>…]}` with `Authorization: Basic base64(appKey:masterSecret)`
/// and expects HTTP 200 (`answers`: 200 with an empty body).
///
/// Verification: the Basic credentials must be exactly our appKey (case-insensitive, as appKeys are)
/// and master secret; anything else is `authentication_failed` (answered 401) and yields no event.
/// A body that is not the documented shape is `malformed_payload` (answered 400); one pushed message
/// that does not decode or convert is set aside (`batch(from:)`, format `message-json`, key
/// `jmessage:msg:<msgid>`): the push is answered 200, the others relay. Event ids are the
/// poller's (`jmessage:msg:<msgid>`), so a redelivered push, or a message seen by both paths, keeps
/// one id.
public struct JMessageInbound: Sendable {
    public let appKey: String
    public let masterSecret: String
    public let codec: JMessageCodec
    public let backend: BackendID

    public init(appKey: String, masterSecret: String, codec: JMessageCodec, backend: BackendID) {
        self.appKey = appKey
        self.masterSecret = masterSecret
        self.codec = codec
        self.backend = backend
    }

    /// The largest routing push read: 256 KiB. The push carries one message (`"total": 1` in the
    /// vendor's example) whose `msg_body` is at most 4096 bytes; 256 KiB holds dozens of them
    /// (docs/adapters/jmessage.md, "Callback limits").
    public static let maxBodyBytes = 256 << 10

    /// Checks the Basic credentials (the `Authorization` header alone: it can run before the body is read).
    public func verify(_ request: HTTPRequestData) throws {
        guard let header = request.header("Authorization") else {
            throw IMError(.authenticationFailed, "routing push without Authorization")
        }
        let parts = header.split(separator: " ", maxSplits: 1)
        guard parts.count == 2, parts[0].lowercased() == "basic", let decoded = Data(base64Encoded: String(parts[1]).trimmingCharacters(in: .whitespaces)),
              let credentials = String(data: decoded, encoding: .utf8), let colon = credentials.firstIndex(of: ":") else {
            throw IMError(.authenticationFailed, "routing push Authorization is not Basic credentials")
        }
        let key = String(credentials[..<colon])
        let secret = String(credentials[credentials.index(after: colon)...])
        guard key.caseInsensitiveCompare(appKey) == .orderedSame, Hashing.constantTimeEquals(secret, masterSecret) else {
            throw IMError(.authenticationFailed, "routing push credentials do not match this app")
        }
    }

    /// What JMessage expects back: 200 with an empty body once the events were taken; 401 / 400 for a
    /// forged / malformed push, 503 (redelivered) when they could not be taken.
    public static let answers = CallbackAnswers(success: HTTPResponseData(status: 200))

    /// The format name of a set-aside message: its own report-message JSON object.
    public static let setAsideFormat = "message-json"

    /// Verifies and parses one push into a batch: `message` events in the pushed order, and the messages
    /// that do not decode or convert set aside (pure: no I/O).
    public func batch(from request: HTTPRequestData) throws -> InboundBatch {
        try verify(request)
        if let push = try? JSONDecoder().decode(JMRoutingPush.self, from: Data(request.body)) {
            var batch = InboundBatch()
            for wire in push.messages { convert(wire, into: &batch) }
            return batch
        }
        guard let object = (try? JSONValue.parse(request.bodyString))?.objectValue, case .array(let elements)? = object["messages"] else {
            throw IMError(.malformedPayload, "routing push body is not {\"total\",\"messages\":[…]}")
        }
        var batch = InboundBatch()
        for element in elements { convert(Array(element.jsonString().utf8), id: element["msgid"], into: &batch) }
        return batch
    }

    /// One report message's own JSON (a push element, a poller's message, a set-aside one replayed).
    public func convert(_ raw: [UInt8], id: JSONValue? = nil, into batch: inout InboundBatch) {
        let key = id?.int64Value.map { JMessageCodec.messageEventID($0).rawValue } ?? "raw:\(Hashing.sha1Hex(raw))"
        batch.convert(backend: backend, key: key, format: Self.setAsideFormat, raw: raw) {
            let wire: JMHistoryMessage
            do {
                wire = try JSONDecoder().decode(JMHistoryMessage.self, from: Data(raw))
            } catch {
                throw IMError(.malformedPayload, "report message does not decode: \(error)")
            }
            return [IMEvent(eventID: JMessageCodec.messageEventID(wire.msgid), backend: backend, kind: .message(try codec.decode(wire)))]
        }
    }

    /// A decoded report message: its event, or set aside (raw: the message re-encoded).
    public func convert(_ wire: JMHistoryMessage, into batch: inout InboundBatch) {
        batch.convert(backend: backend, key: JMessageCodec.messageEventID(wire.msgid).rawValue, format: Self.setAsideFormat,
                      raw: (try? Array(JSONEncoder().encode(wire))) ?? []) {
            [IMEvent(eventID: JMessageCodec.messageEventID(wire.msgid), backend: backend, kind: .message(try codec.decode(wire)))]
        }
    }
}
