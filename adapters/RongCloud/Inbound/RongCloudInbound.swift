import IMAdapterKit
import IMCore
import IMHTTP

/// The receiving side of RongCloud's 全量消息路由 (message routing) callback (docs/adapters/rongcloud.md).
///
/// Contract:
/// - Verification: `signature` = hex SHA1(appSecret + nonce + timestamp) with `nonce`, `timestamp`,
///   `signature` from the query string (SealTalk's receiver also accepts them as `RC-Nonce`,
///   `RC-Timestamp`, `RC-Signature` headers: so does this). An `appKey` in the query (or `RC-App-Key`
///   header), when present, must be ours; its absence is accepted (UNCONFIRMED whether it is always
///   sent). A timestamp further than `maxSkewMs` from now is stale. Every refusal throws
///   `authentication_failed` (HTTP 401) before the body is read, so no event exists.
/// - Replays: the signature covers no byte of the body, so once the body is read each signature is
///   taken for one body only (`mark(_:)`, `CallbackMarks`): the same body again is a redelivery (200,
///   relayed once), another body is refused 401.
/// - Parsing: the form body is one routed message. A body that is not a routed message (a missing
///   field) throws `malformed_payload` (HTTP 400) and yields no event. A routed message whose content
///   does not convert (`RC:ImgMsg` without `imageUri`, a registered custom type failing `validate()`,
///   a signal whose content does not parse) is set aside by `batch(from:)`: acknowledged, and kept by the
///   sink as an inbound dead letter (format `routed-form`, key `msg:<msgUID>`) so the messages after it
///   are not held up.
/// - Events, with ids stable across redelivery (derived from vendor ids only):
///   - `RC:RcCmd` → `recalled` (`recall:<original msgUID>`), by the routed sender, at `msgTimestamp`; with
///     `isDelete` 1 → `deleted` for everyone (`delete:<original msgUID>`);
///   - `RC:MsgExMsg` → `expansionChanged` on `mid` (`exp:<signal msgUID>`), version = `msgTimestamp`;
///   - `RC:CmdMsg` → `command` (`cmd:<msgUID>`);
///   - `RC:ReadNtf` with a `messageUId` → `read` (`read:<msgUID>`);
///   - `RC:GrpNtf` in a group whose `operation` is `Dismiss` (what an app sends when it dismisses one) →
///     `groupDissolved` (`dismiss:<msgUID>`), by `operatorUserId` (else the sender);
///   - typing/receipt/call signalling the neutral model has no event for → no event (acknowledged);
///   - anything else → `message` (`msg:<msgUID>`).
public struct RongCloudInbound: Sendable {
    public let backend: BackendID
    public let appKey: String
    public let appSecret: String
    public let codec: RongCloudCodec
    public let clock: any IMClock
    /// Largest accepted distance between the signed timestamp and now; nil disables the check.
    /// Default five minutes (the vendor's freshness rule and retry timing are UNCONFIRMED; a retry is
    /// signed afresh, docs/adapters/rongcloud.md).
    public let maxSkewMs: Int64?

    public init(backend: BackendID, appKey: String, appSecret: String, codec: RongCloudCodec = RongCloudCodec(),
                clock: any IMClock = SystemClock(), maxSkewMs: Int64? = 300_000) {
        self.backend = backend
        self.appKey = appKey
        self.appSecret = appSecret
        self.codec = codec
        self.clock = clock
        self.maxSkewMs = maxSkewMs
    }

    /// What RongCloud expects from the receiver: 200 `ok` once the events were taken; 401
    /// `unauthorized: …` for a forged or stale request, 400 `bad request: …` for a malformed one (both
    /// not redelivered); 503 when the events could not be taken, which the vendor retries.
    public static let answers = CallbackAnswers(
        success: .text("ok"),
        refusal: { error in
            switch error.code {
            case .authenticationFailed: .text("unauthorized: \(error.message)", status: 401)
            default: .text("bad request: \(error.message)", status: 400)
            }
        },
        retry: CallbackAnswers.plainRetry)

    /// The largest routing body read: 1 MiB. One routed message per request; its `content` is at most
    /// 128 KB, which form encoding can triple (every non-ASCII byte and most JSON punctuation becomes
    /// `%XX`), plus `groupUserIds` for a directed group message (a few thousand ids of ≤ 64 bytes)
    /// (docs/adapters/rongcloud.md, "Callback limits").
    public static let maxBodyBytes = 1 << 20

    /// What can be checked before the body is read: the method and the signature (see the type's
    /// contract; the signature covers no byte of the body).
    public func verifyHead(_ request: HTTPRequestData) throws {
        guard request.method == "POST" else { throw IMError(.malformedPayload, "the routing callback is a POST, not \(request.method)") }
        try verify(request)
    }

    /// Signalling types that produce no event.
    public static let ignoredSignals: Set<String> = ["RC:TypSts", "RC:SRSMsg", "RC:RRReqMsg", "RC:RRRspMsg", "RC:chrmKVNotiMsg"]

    /// Checks the callback's signature (see the type's contract).
    public func verify(_ request: HTTPRequestData) throws { _ = try signed(request) }

    /// How long a callback's signature is remembered when no freshness window is set (`maxSkewMs` nil).
    public static let unboundedMarkMs: Int64 = 24 * 3_600_000

    /// The verified callback's mark (`CallbackMarks`): its signature, its body's digest, and when its
    /// timestamp leaves the window — the signature covers no byte of the body, so a signature is taken
    /// for one body only (docs/adapters/rongcloud.md, "Callback limits").
    public func mark(_ request: HTTPRequestData) throws -> CallbackMark {
        let (signature, signedAt) = try signed(request)
        return mark(signature: signature, signedAt: signedAt, body: request.body)
    }

    func mark(signature: String, signedAt: Int64?, body: [UInt8]) -> CallbackMark {
        let now = clock.nowMs()
        let expiresAt = maxSkewMs.map { max(now, (signedAt ?? now) + $0) } ?? now + Self.unboundedMarkMs
        return CallbackMarks.mark(backend: backend, signature: signature, body: body, expiresAt: expiresAt)
    }

    /// `batch(from:)` and `mark(_:)` of one callback with its signature verified once: the same refusals,
    /// in the same order (docs/performance.md, "Bytes, not text, on every request": each verification parsed the query again and
    /// hashed the signature).
    public func batchAndMark(from request: HTTPRequestData) throws -> (batch: InboundBatch, mark: CallbackMark) {
        guard request.method == "POST" else { throw IMError(.malformedPayload, "the routing callback is a POST, not \(request.method)") }
        let (signature, signedAt) = try signed(request)
        let batch = try batch(fromBody: request.body)
        return (batch, mark(signature: signature, signedAt: signedAt, body: request.body))
    }

    /// Verifies the signature (and freshness); returns it and its timestamp in ms.
    func signed(_ request: HTTPRequestData) throws -> (signature: String, signedAt: Int64?) {
        let query = FormBody(items: request.query)
        func value(_ name: String, header: String) -> String? { query[name] ?? request.header(header) }
        guard let nonce = value("nonce", header: "RC-Nonce"),
              let timestamp = value("timestamp", header: "RC-Timestamp") ?? query["signTimestamp"],
              let signature = value("signature", header: "RC-Signature") else {
            throw refusal("the callback carries no nonce/timestamp/signature")
        }
        if let key = value("appKey", header: "RC-App-Key"), key != appKey {
            throw refusal("the callback is for app key '\(key)', not ours")
        }
        guard RongCloudSignature.isValid(signature, secret: appSecret, nonce: nonce, timestamp: timestamp) else {
            throw refusal("the callback signature does not verify")
        }
        if let maxSkewMs {
            guard let signedAt = RongCloudSignature.timestampMs(timestamp), abs(clock.nowMs() - signedAt) <= maxSkewMs else {
                throw refusal("the callback timestamp '\(timestamp)' is not within \(maxSkewMs / 1000) s of now")
            }
        }
        return (signature, RongCloudSignature.timestampMs(timestamp))
    }

    /// The format name of a set-aside routed message: its form body, as received.
    public static let setAsideFormat = "routed-form"

    /// Verifies and parses one callback into a batch: its event, or the routed message set aside when
    /// its content does not convert (see the type's contract).
    public func batch(from request: HTTPRequestData) throws -> InboundBatch {
        guard request.method == "POST" else { throw IMError(.malformedPayload, "the routing callback is a POST, not \(request.method)") }
        try verify(request)
        return try batch(fromBody: request.body)
    }

    /// Parses an already verified form body into a batch (a replay of a set-aside message comes here too).
    public func batch(fromBody body: [UInt8]) throws -> InboundBatch {
        let routed = try routedMessage(FormBody(items: FormBody.parse(String(decoding: body, as: UTF8.self))))
        var batch = InboundBatch()
        batch.convert(backend: backend, key: "msg:\(routed.msgUID)", format: Self.setAsideFormat, raw: body) {
            try events(from: routed)
        }
        return batch
    }

    func routedMessage(_ body: FormBody) throws -> RCRoutedMessage {
        do {
            return try RCRoutedMessage(form: body)
        } catch {
            throw IMError(.malformedPayload, "routed message: \(error)", details: ["field": error.field])
        }
    }

    public func events(from routed: RCRoutedMessage) throws -> [IMEvent] {
        let conversation = RongCloudCodec.conversation(channelType: routed.channelType, from: routed.fromUserId, to: routed.toUserId)
        let sender = UserID(routed.fromUserId)
        let kind: IMEvent.Kind
        let eventID: String
        switch routed.objectName {
        case RCObjectName.recallCommand:
            guard let command = RCRecallCommand(json: routed.content) else {
                throw IMError(.malformedPayload, "RC:RcCmd content has no messageUId")
            }
            if command.isDelete == true {
                // A recall without the "recalled" notice: gone for everyone (docs/adapters/rongcloud.md, "Deletion").
                eventID = "delete:\(command.messageUId)"
                kind = .deleted(messageID: MessageID(command.messageUId), conversation: conversation, by: sender, forUser: nil,
                                at: routed.msgTimestamp)
            } else {
                eventID = "recall:\(command.messageUId)"
                kind = .recalled(messageID: MessageID(command.messageUId), conversation: conversation, by: sender, at: routed.msgTimestamp)
            }
        case RCObjectName.expansionSignal:
            guard let signal = RCExpansionSignal(json: routed.content) else {
                throw IMError(.malformedPayload, "RC:MsgExMsg content is not {mid, put, del, clear}")
            }
            eventID = "exp:\(routed.msgUID)"
            let target = routed.originalMsgUID ?? signal.mid
            kind = .expansionChanged(messageID: MessageID(target), conversation: conversation, by: sender,
                                     delta: RongCloudExpansionCodec.delta(from: signal, version: routed.msgTimestamp))
        case "RC:ReadNtf":
            guard let uid = (try? JSONValue.parse(routed.content))?["messageUId"]?.stringValue, !uid.isEmpty else { return [] }
            eventID = "read:\(routed.msgUID)"
            kind = .read(conversation: conversation, user: sender, upTo: MessageID(uid), at: routed.msgTimestamp)
        case let name where Self.ignoredSignals.contains(name) || name.hasPrefix("RC:VC"):
            return []
        case RCObjectName.groupNotification where conversation.kind == .group && Self.isDismissal(routed.content):
            // The group notification an app sends when it dismisses a group (`operation` "Dismiss").
            eventID = "dismiss:\(routed.msgUID)"
            let operatorID = (try? JSONValue.parse(routed.content))?["operatorUserId"]?.stringValue.flatMap { $0.isEmpty ? nil : UserID($0) }
            kind = .groupDissolved(group: GroupID(conversation.id), by: operatorID ?? sender, at: routed.msgTimestamp)
        default:
            let message = try codec.message(from: routed)
            if case .command(let command) = message.content {
                eventID = "cmd:\(routed.msgUID)"
                kind = .command(conversation: conversation, sender: sender, content: command, at: routed.msgTimestamp)
            } else {
                eventID = "msg:\(routed.msgUID)"
                kind = .message(message)
            }
        }
        return [IMEvent(eventID: EventID(eventID), backend: backend, kind: kind)]
    }

    private func refusal(_ text: String) -> IMError {
        IMError(.authenticationFailed, "RongCloud routing callback refused: \(text)")
    }

    /// Whether an `RC:GrpNtf` content says the group was dismissed (`"operation":"Dismiss"`).
    static func isDismissal(_ content: String) -> Bool {
        (try? JSONValue.parse(content))?["operation"]?.stringValue == "Dismiss"
    }
}
