import IMAdapterKit
import IMCore
import IMHTTP

/// Verifies and parses NIM message-copy (消息抄送) callbacks into neutral events
/// (docs/adapters/nim.md).
///
/// Contract:
/// - Verification comes first and uses the exact body bytes: `MD5` must equal md5(body) and `CheckSum`
///   must equal SHA1(AppSecret + MD5 + CurTime) (hex compared case-insensitively); `AppKey` must be
///   ours. A failure throws `authentication_failed` with `details["http_status"] = "403"`; a body that is
///   not a JSON object throws `malformed_payload` with `"400"`. Neither yields an event.
/// - Freshness: off by default (`maxSkewMs` nil) because NIM's retry schedule is undocumented; when set,
///   `CurTime` (milliseconds, or seconds if it has ≤ 10 digits) must be within the skew of the clock.
/// - Poison messages: a verified copy whose content does not convert (a PICTURE without `url`, a
///   registered custom type failing `validate()`) is set aside by `batch(from:)` (format `copy-json`,
///   the body as received; key `nim:<msgidServer>`, else the body's MD5): answered 200 and kept by the
///   sink as an inbound dead letter. Only a body that is not a JSON object is refused (400).
/// - Events: eventType 1 chat messages → `message` (or `expansionChanged` for the adapter's expansion
///   carrier, see `NIMExpansionCarrier`), custom system notifications → `command`, a TEAM notification
///   whose attach `id` is 4 (the team dismissed) → `groupDissolved` (other team notifications are not
///   read: their fields are not confirmed), 7/8/25 → `recalled`;
///   every other eventType is accepted and ignored (empty result, still answered 200).
/// - Event ids derive from NIM's ids only, so a redelivery yields the same `eventID`s.
/// - Fast: pure CPU work, no I/O; NIM waits 5 s for the answer.
public struct NIMInbound: Sendable {
    public let backend: BackendID
    public let appKey: String
    public let appSecret: String
    public let codec: NIMMessageCodec
    public let maxSkewMs: Int64?
    public let clock: any IMClock

    public init(backend: BackendID, appKey: String, appSecret: String, codec: NIMMessageCodec = NIMMessageCodec(),
                maxSkewMs: Int64? = nil, clock: any IMClock = SystemClock()) {
        self.backend = backend
        self.appKey = appKey
        self.appSecret = appSecret
        self.codec = codec
        self.maxSkewMs = maxSkewMs
        self.clock = clock
    }

    /// NIM's answers to a callback. NIM counts HTTP 200 **and 500** as delivered, so nothing that should
    /// be redelivered may answer 500: signature failures answer 401, malformed bodies 400 (a forged or
    /// broken request gains nothing from a retry), anything else 503 so NIM tries again. A delivered copy
    /// is answered HTTP 200 `{"code":200}`.
    public static let answers = CallbackAnswers(success: acknowledgement, refusal: failureResponse, retry: failureResponse)

    /// The answer NIM expects for a delivered copy: HTTP 200 `{"code":200}`.
    public static var acknowledgement: HTTPResponseData { .json(JSONValue.object(["code": 200]).jsonData()) }

    /// The answer to a refused or failed callback (see `answers`).
    @Sendable public static func failureResponse(for error: IMError) -> HTTPResponseData {
        switch error.code {
        case .authenticationFailed: .text("unauthorized: \(error.message)", status: 401)
        case .malformedPayload, .invalidArgument: .text("bad request: \(error.message)", status: 400)
        default: .text("error: \(error.message)", status: 503)
        }
    }

    static func refuse(_ why: String) -> IMError {
        IMError(.authenticationFailed, "NIM callback refused: \(why)", details: ["http_status": "403"])
    }

    /// The largest copy body read: 512 KiB. One copy per request; its `body` and `attach` are each at
    /// most 5000 characters, which JSON escaping (`\uXXXX`) can make 30 KB each, plus `ext`, the
    /// antispam fields and `tMembers` (teams of ≤ 200): well under 128 KiB, with room to spare
    /// (docs/adapters/nim.md, "Callback limits").
    public static let maxBodyBytes = 512 << 10

    /// Checks the signature headers against the raw body (see the type's contract).
    public func verify(_ request: HTTPRequestData) throws {
        try verifyHead(request)
        guard let md5 = request.header("MD5"), NIMSignature.equalHex(md5, NIMSignature.md5Hex(request.body)) else {
            throw Self.refuse("MD5 header does not match the body")
        }
    }

    /// What can be checked before the body is read: the headers, the `AppKey`, the `CheckSum` (signed
    /// over the `MD5` header, so a forger without the secret is refused before sending a byte of body)
    /// and the freshness of `CurTime`. `verify` adds the body's MD5.
    public func verifyHead(_ request: HTTPRequestData) throws {
        guard let md5 = request.header("MD5"), let checkSum = request.header("CheckSum"),
              let curTime = request.header("CurTime") else {
            throw Self.refuse("MD5, CheckSum and CurTime headers are required")
        }
        if let key = request.header("AppKey"), key != appKey { throw Self.refuse("AppKey \(key) is not ours") }
        let expected = NIMSignature.callbackCheckSum(appSecret: appSecret, md5: md5.lowercased(), curTime: curTime)
        guard NIMSignature.equalHex(checkSum, expected)
            || NIMSignature.equalHex(checkSum, NIMSignature.callbackCheckSum(appSecret: appSecret, md5: md5, curTime: curTime)) else {
            throw Self.refuse("CheckSum does not match")
        }
        if let maxSkewMs {
            guard let number = Int64(curTime) else { throw Self.refuse("CurTime is not a number") }
            let ms = curTime.count <= 10 ? number * 1000 : number
            guard abs(clock.nowMs() - ms) <= maxSkewMs else { throw Self.refuse("CurTime \(curTime) is stale") }
        }
    }

    /// The format name of a set-aside copy: the callback body as received.
    public static let setAsideFormat = "copy-json"

    /// Verifies, then parses one callback into a batch: its events, or the copy set aside when it does
    /// not convert (see the type's contract).
    public func batch(from request: HTTPRequestData) throws -> InboundBatch {
        try verify(request)
        return try batch(fromBody: request.body)
    }

    /// A verified body (or a set-aside copy replayed) into a batch.
    public func batch(fromBody body: [UInt8]) throws -> InboundBatch {
        let copy: NIMCopyEvent
        do {
            copy = try NIMCopyEvent(json: body)
        } catch {
            throw IMError(.malformedPayload, "NIM callback body is not a JSON object", details: ["http_status": "400"])
        }
        var batch = InboundBatch()
        batch.convert(backend: backend, key: "nim:\(copy.msgidServer ?? NIMSignature.md5Hex(body))", format: Self.setAsideFormat,
                      raw: body) { try events(of: copy, rawBody: body) }
        return batch
    }

    /// The events of one verified copy.
    public func events(of copy: NIMCopyEvent, rawBody: [UInt8]) throws -> [IMEvent] {
        switch copy.eventType {
        case 1:
            if let dissolved = Self.dismissal(copy) { return [dissolved(backend)] }
            if let command = try NIMCommandCodec.command(fromCopy: copy) {
                let id = copy.msgidServer ?? NIMSignature.md5Hex(rawBody)
                return [IMEvent(eventID: EventID("nim:cmd:\(id)"), backend: backend, kind: command)]
            }
            guard let message = try codec.message(fromCopy: copy) else { return [] }
            if let change = NIMExpansionCarrier.event(for: message, backend: backend) { return [change] }
            return [IMEvent(eventID: EventID("nim:msg:\(message.id)"), backend: backend, kind: .message(message))]
        case 7, 8, 25:
            let recall = try NIMMessageCodec.recall(fromCopy: copy)
            return [IMEvent(eventID: EventID("nim:recall:\(recall.id)"), backend: backend,
                            kind: .recalled(messageID: recall.id, conversation: recall.conversation, by: recall.by, at: recall.at))]
        case nil:
            throw IMError(.malformedPayload, "NIM callback has no eventType")
        default:
            return []
        }
    }

    /// The `groupDissolved` of a TEAM notification copy whose attach `id` is 4 (team dismissed, NIM's
    /// team-notification operations); nil for any other copy.
    static func dismissal(_ copy: NIMCopyEvent) -> ((BackendID) -> IMEvent)? {
        guard copy.convType == "TEAM", copy.msgType == "NOTIFICATION", let tid = copy.to, !tid.isEmpty,
              let attach = copy.attach, (try? JSONValue.parse(attach))?["id"]?.int64Value == 4 else { return nil }
        let by = copy.fromAccount.map { UserID($0) }, at = copy.msgTimestamp ?? 0
        let id = copy.msgidServer ?? "\(tid):\(at)"
        return { IMEvent(eventID: EventID("nim:dismiss:\(id)"), backend: $0, kind: .groupDissolved(group: GroupID(tid), by: by, at: at)) }
    }
}
