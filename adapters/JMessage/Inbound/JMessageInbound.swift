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
/// A body that is not the documented shape is `malformed_payload` (answered 400). Event ids are the
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

    /// Verifies and parses one push into `message` events, in the pushed order (pure: no I/O).
    public func events(from request: HTTPRequestData) throws -> [IMEvent] {
        try verify(request)
        let push: JMRoutingPush
        do {
            push = try JSONDecoder().decode(JMRoutingPush.self, from: Data(request.body))
        } catch {
            throw IMError(.malformedPayload, "routing push body is not {\"total\",\"messages\":[…]}: \(error)")
        }
        return try push.messages.map { wire in
            IMEvent(eventID: JMessageCodec.messageEventID(wire.msgid), backend: backend, kind: .message(try codec.decode(wire)))
        }
    }
}
