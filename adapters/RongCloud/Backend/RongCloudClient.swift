import Foundation
import IMAdapterKit
import IMCore
import IMHTTP

/// The RongCloud Server API over HTTP: signing, hosts, envelopes and error mapping (docs/adapters/rongcloud.md).
///
/// Contract:
/// - Every call is a signed `POST` (`App-Key`, `Nonce`, `Timestamp` in seconds as the official SDKs
///   send it, `Signature`), form-encoded or JSON as the endpoint expects, with an `X-Request-ID`.
/// - `baseURLs` are tried in order: a transport failure or timeout moves to the next host (the
///   vendor's primary/backup pairs); an HTTP answer never does. When all fail, the last transport
///   error is thrown (retryable).
/// - A body `{"code":200,…}` is success. Any other answer maps to `IMError` through
///   `RongCloudErrors.table` (vendor code and text kept; 1008/1000/1050 and 5xx retryable, with
///   `Retry-After` when sent); a non-envelope body maps by HTTP status.
public struct RongCloudClient: Sendable {
    public let baseURLs: [String]
    public let appKey: String
    public let appSecret: String
    public let http: HTTPClientWrapper
    public let clock: any IMClock

    /// The China data centre's primary and backup hosts.
    public static let defaultBaseURLs = ["https://api.rong-api.com", "https://api-b.rong-api.com"]

    public init(baseURLs: [String] = RongCloudClient.defaultBaseURLs, appKey: String, appSecret: String,
                timeoutSeconds: Int64 = 10, clock: any IMClock = SystemClock(), secrets: SecretMask = SecretMask()) {
        precondition(!baseURLs.isEmpty, "RongCloudClient needs at least one base URL")
        self.baseURLs = baseURLs.map { $0.hasSuffix("/") ? String($0.dropLast()) : $0 }
        self.appKey = appKey
        self.appSecret = appSecret
        // What RongCloud (or a proxy) answers is read with the app secret (and `secrets`, every other
        // configured one) masked (`HTTPClientWrapper.secrets`).
        self.http = HTTPClientWrapper(timeoutSeconds: timeoutSeconds, secrets: SecretMask([appSecret]).merging(secrets))
        self.clock = clock
    }

    /// Signs and posts a form; returns the decoded success body.
    public func post<Response: Decodable>(_ path: String, form: FormBody, as type: Response.Type) async throws -> Response {
        try decode(try await send(path) { url, headers in OutboundRequest.form(url, form, headers: headers) }, path, as: type)
    }

    /// Signs and posts a JSON body; returns the decoded success body.
    public func postJSON<Body: Encodable, Response: Decodable>(_ path: String, _ value: Body, as type: Response.Type) async throws -> Response {
        let data = try JSONEncoder().encode(value)
        return try decode(try await send(path) { url, headers in OutboundRequest.json(url, data, headers: headers) }, path, as: type)
    }

    /// Posts a form whose success body carries nothing but `{"code":200}`.
    public func post(_ path: String, form: FormBody) async throws {
        _ = try await post(path, form: form, as: RCErrorEnvelope.self)
    }

    /// The signing headers for one request (fresh nonce and timestamp).
    public func signingHeaders() -> [(name: String, value: String)] {
        let nonce = String(UInt64.random(in: 0..<UInt64(1e17)))
        let timestamp = String(clock.nowMs() / 1000)
        return RongCloudSignature.headers(appKey: appKey, secret: appSecret, nonce: nonce, timestamp: timestamp)
            + [("X-Request-ID", Hashing.randomHexID())]
    }

    private func send(_ path: String, _ build: (String, [(name: String, value: String)]) -> OutboundRequest) async throws -> HTTPResponseData {
        var lastError: (any Error)?
        for base in baseURLs {
            do {
                return try await http.send(build(base + path, signingHeaders()))
            } catch {
                lastError = error
            }
        }
        throw lastError ?? IMError(.unavailable, "no RongCloud host answered \(path)")
    }

    func decode<Response: Decodable>(_ response: HTTPResponseData, _ path: String, as type: Response.Type) throws -> Response {
        let data = Data(response.body)
        // The relay's calls (a publish, a plain `{"code":200}`) read from one parse of the body; any
        // other answer, and any body of another shape, takes the general path below.
        if let parsed = try? JSONValue.parse(data), let envelope = RCErrorEnvelope(parsed: parsed), envelope.code == RongCloudErrors.ok {
            if let answer = envelope as? Response { return answer }
            if Response.self == RCPublishResponse.self, let answer = RCPublishResponse(parsed: parsed) as? Response { return answer }
        }
        guard let envelope = try? JSONDecoder().decode(RCErrorEnvelope.self, from: data) else {
            var error = IMError.http(status: response.status, body: response.bodyString, retryAfterMs: response.retryAfterMs)
            if response.status == 200 {
                error = IMError(.malformedPayload, "\(path) answered a body that is not the RongCloud envelope",
                                vendorMessage: String(response.bodyString.prefix(300)))
            }
            throw error
        }
        guard envelope.code == RongCloudErrors.ok else {
            throw RongCloudErrors.table.error(code: envelope.code, message: envelope.errorMessage, httpStatus: response.status,
                                             retryAfterMs: response.retryAfterMs, details: ["path": path])
        }
        do {
            return try JSONDecoder().decode(Response.self, from: data)
        } catch {
            throw IMError(.malformedPayload, "\(path) answered code 200 with an unexpected body: \(error)",
                          vendorMessage: String(response.bodyString.prefix(300)))
        }
    }
}
