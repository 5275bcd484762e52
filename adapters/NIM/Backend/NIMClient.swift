import Foundation
import IMAdapterKit
import IMCore
import IMHTTP

/// The NIM v1 REST calls the adapter uses, signed per call (`AppKey`, `Nonce`, `CurTime` seconds,
/// `CheckSum`), form-encoded, with the `{"code":200,…}` envelope unwrapped.
///
/// Errors: an envelope code other than 200 becomes `NIMErrors.table`'s error (vendor code and `desc`
/// kept, 416 retryable after 10 s, 5xx/431 retryable); a non-200 HTTP status becomes `IMError.http`;
/// a transport failure is a retryable `unavailable`/`timeout`; an answer that is not a JSON object is a
/// retryable `unavailable` (a proxy page, a truncated body).
public struct NIMClient: Sendable {
    /// Where and as whom it calls NIM (`baseURL`, `appKey`, `appSecret`, `timeout`).
    public let settings: NIMSettings
    public let clock: any IMClock
    let http: HTTPClientWrapper

    public init(settings: NIMSettings, clock: any IMClock = SystemClock(), secrets: SecretMask = SecretMask()) {
        self.settings = settings
        self.clock = clock
        // What NIM (or a proxy) answers is read with the app secret (and `secrets`, every other configured
        // one) masked (`HTTPClientWrapper.secrets`).
        self.http = HTTPClientWrapper(timeoutSeconds: settings.timeout.secondsRoundedUp,
                                      secrets: SecretMask([settings.appSecret]).merging(secrets))
    }

    /// POSTs a signed form to `path` and returns the envelope object of a `code` 200 answer.
    public func call(_ path: String, _ fields: [(String, String)],
                     operation: VendorErrorTable.Operation = .generic) async throws -> [String: JSONValue] {
        let headers = NIMSignature.requestHeaders(appKey: settings.appKey, appSecret: settings.appSecret, nowMs: clock.nowMs())
        let request = OutboundRequest.form(settings.baseURL + path, FormBody(items: fields.map { (name: $0.0, value: $0.1) }),
                                           headers: headers.map { (name: $0.0, value: $0.1) })
        let response = try await http.send(request)
        guard response.status == 200 else {
            throw IMError.http(status: response.status, body: response.bodyString, retryAfterMs: response.retryAfterMs)
        }
        guard let envelope = (try? JSONValue.parse(Data(response.body)))?.objectValue, let code = envelope["code"]?.int64Value else {
            throw IMError(.unavailable, "NIM \(path) answered without a JSON envelope: \(response.bodyString.prefix(200))",
                          isRetryable: true)
        }
        guard code == 200 else {
            throw NIMErrors.table.error(code: Int(code), message: NIMLenient.string(envelope["desc"]), operation: operation)
        }
        return envelope
    }

    /// `/user/create.action`; an account that already exists is not an error (returns false).
    @discardableResult
    public func createUser(accid: String, name: String? = nil, icon: String? = nil) async throws -> Bool {
        var fields = [("accid", accid)]
        if let name { fields.append(("name", name)) }
        if let icon { fields.append(("icon", icon)) }
        do {
            _ = try await call("/user/create.action", fields)
            return true
        } catch let error as IMError where error.code == .conflict {
            return false
        }
    }

    /// `/msg/sendMsg.action` → `data{msgid,timetag,antispam}`.
    public func sendMessage(_ form: NIMSendMessageForm) async throws -> NIMSendResult {
        let envelope = try await call("/msg/sendMsg.action", form.fields)
        guard let data = envelope["data"], let msgid = data["msgid"]?.int64Value, let timetag = data["timetag"]?.int64Value else {
            throw IMError(.vendorError, "sendMsg answered 200 without data.msgid/timetag")
        }
        return NIMSendResult(msgid: msgid, timetag: timetag, antispam: data["antispam"].flatMap(NIMLenient.bool) ?? false)
    }

    /// `/msg/sendAttachMsg.action` (custom system notification); `{"code":200}` only.
    public func sendAttachMessage(_ fields: [(String, String)]) async throws {
        _ = try await call("/msg/sendAttachMsg.action", fields)
    }

    /// `/msg/recall.action`; `{"code":200}` only.
    public func recall(_ form: NIMRecallForm) async throws {
        _ = try await call("/msg/recall.action", form.fields, operation: .recall)
    }

    /// One history window (`/history/querySessionMsg.action` for a person, `queryTeamMsg` for a team).
    /// `reverse` 1 ascending, 2 descending; bounds in ms; `limit` 1…100.
    public func queryHistory(_ window: NIMHistoryWindow) async throws -> [NIMHistoryMessage] {
        let envelope = try await call(window.path, window.fields)
        return try (envelope["msgs"]?.arrayValue ?? []).map(NIMHistoryMessage.init(json:))
    }

    /// `/msg/upload.action`: base64 `content` (≤ 15 MB) → the NOS URL.
    public func upload(_ bytes: [UInt8], type: String?) async throws -> String {
        var fields = [("content", Data(bytes).base64EncodedString())]
        if let type { fields.append(("type", type)) }
        let envelope = try await call("/msg/upload.action", fields)
        guard let url = NIMLenient.string(envelope["url"]) else { throw IMError(.vendorError, "upload answered 200 without url") }
        return url
    }
}
