import Foundation
import IMAdapterKit
import IMCore
import IMHTTP

/// The REST calls the adapter makes, with Basic auth and the vendor's error envelope mapped to
/// `IMError` (see `JMessageErrors`). Any 2xx is success (bodies may be empty on 201/204).
public struct JMessageClient: Sendable {
    /// Where and as whom it talks to JMessage.
    public let settings: JMessageSettings
    let http: HTTPClientWrapper
    static let encoder: JSONEncoder = {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return encoder
    }()

    public init(settings: JMessageSettings, secrets: SecretMask = SecretMask()) {
        self.settings = settings
        // What JMessage (or a proxy) answers is read with the master secret, the Basic credentials made of
        // it and the admin's password (and `secrets`, every other configured one) masked
        // (`HTTPClientWrapper.secrets`).
        self.http = HTTPClientWrapper(timeoutSeconds: settings.timeout.secondsRoundedUp,
                                      secrets: SecretMask([settings.adminPassword].compactMap { $0 },
                                                          pairs: [(settings.appKey, settings.masterSecret)]).merging(secrets))
    }

    // MARK: users and groups

    /// `POST /v1/admins/`; true when created, false when it already existed.
    @discardableResult
    public func registerAdmin(username: String, password: String) async throws -> Bool {
        do {
            _ = try await call("POST", api("/v1/admins/"), json: JMUserRegistration(username: username, password: password))
            return true
        } catch let error as IMError where error.vendorCode == String(JMessageErrors.userExists.code) {
            return false
        }
    }

    /// `POST /v1/users/` (≤ 500 per call); per-item errors come back inside the 201.
    public func registerUsers(_ users: [JMUserRegistration]) async throws -> [JMUserRegistrationResult] {
        try decode([JMUserRegistrationResult].self, try await call("POST", api("/v1/users/"), json: users))
    }

    public func createGroup(_ group: JMGroupCreate) async throws -> JMGroupCreated {
        try decode(JMGroupCreated.self, try await call("POST", api("/v1/groups/"), json: group))
    }

    public func updateMembers(gid: String, add: [String] = [], remove: [String] = []) async throws {
        _ = try await call("POST", api("/v1/groups/\(escape(gid))/members"), json: ["add": add, "remove": remove])
    }

    // MARK: messages

    public func send(_ request: JMSendRequest) async throws -> JMSendResult {
        try decode(JMSendResult.self, try await call("POST", api("/v1/messages"), json: request))
    }

    /// `POST /v1/messages/{username}/{msgid}/retract`, no body; `username` is the message's sender.
    public func retract(username: String, msgid: String) async throws {
        _ = try await call("POST", api("/v1/messages/\(escape(username))/\(escape(msgid))/retract"), body: nil)
    }

    // MARK: media

    public func upload(type: String, fileName: String, contentType: String, data: [UInt8]) async throws -> JMUploadResult {
        let form = Multipart.encode(fieldName: "filename", fileName: fileName, contentType: contentType, data: data)
        let response = try await call("POST", api("/v1/resource?type=\(type)"), body: form.body, contentType: form.contentType)
        return try decode(JMUploadResult.self, response)
    }

    /// `GET /v1/resource?mediaId=` → the download URL.
    public func resourceURL(mediaID: String) async throws -> String {
        let response = try await call("GET", api("/v1/resource?mediaId=\(FormBody.escape(mediaID))"), body: nil)
        return try decode(JMDownloadResult.self, response).url
    }

    /// Fetches bytes from a download URL (no auth: these are CDN links).
    public func fetch(_ url: String) async throws -> [UInt8] {
        let response = try await http.send(OutboundRequest(method: "GET", url: url))
        guard (200..<300).contains(response.status) else {
            throw IMError.http(status: response.status, body: response.bodyString, retryAfterMs: response.retryAfterMs)
        }
        return response.body
    }

    // MARK: report v2

    /// The first page of a report query: `path` is `/v2/messages`, `/v2/users/{u}/messages`,
    /// `/v2/groups/{gid}/messages` or `/v2/chatrooms/{id}/messages`; times are milliseconds.
    public func history(path: String, count: Int, beginMs: Int64, endMs: Int64) async throws -> JMHistoryPage {
        let query = "count=\(count)&begin_time=\(FormBody.escape(JMessageTime.format(ms: beginMs)))"
            + "&end_time=\(FormBody.escape(JMessageTime.format(ms: endMs)))"
        return try decode(JMHistoryPage.self, try await call("GET", report(path) + "?" + query, body: nil))
    }

    /// The next page of a report query (the cursor is valid 120 s).
    public func history(path: String, cursor: String) async throws -> JMHistoryPage {
        try decode(JMHistoryPage.self, try await call("GET", report(path) + "?cursor=\(FormBody.escape(cursor))", body: nil))
    }

    // MARK: plumbing

    func api(_ path: String) -> String { settings.apiURL.trimmingTrailingSlash + path }
    func report(_ path: String) -> String { settings.reportURL.trimmingTrailingSlash + path }
    func escape(_ segment: String) -> String { FormBody.escape(segment) }

    func call<T: Encodable>(_ method: String, _ url: String, json: T) async throws -> HTTPResponseData {
        try await call(method, url, body: Array(try Self.encoder.encode(json)), contentType: "application/json; charset=utf-8")
    }

    func call(_ method: String, _ url: String, body: [UInt8]?, contentType: String? = nil) async throws -> HTTPResponseData {
        var headers: [(name: String, value: String)] = [("Authorization", settings.authorization)]
        if let contentType { headers.append(("Content-Type", contentType)) }
        let response = try await http.send(OutboundRequest(method: method, url: url, headers: headers, body: body))
        guard (200..<300).contains(response.status) else { throw Self.error(from: response) }
        return response
    }

    static func error(from response: HTTPResponseData) -> IMError {
        let envelope = try? JSONDecoder().decode(JMErrorEnvelope.self, from: Data(response.body))
        let reset = response.header("X-Rate-Limit-Reset").flatMap { Int64($0) }.map { $0 * 1000 }
        return JMessageErrors.error(status: response.status, code: envelope?.error.code,
                                       message: envelope?.error.message ?? (response.body.isEmpty ? nil : String(response.bodyString.prefix(300))),
                                       retryAfterMs: response.retryAfterMs ?? reset)
    }

    func decode<T: Decodable>(_ type: T.Type, _ response: HTTPResponseData) throws -> T {
        do {
            return try JSONDecoder().decode(T.self, from: Data(response.body))
        } catch {
            throw IMError(.malformedPayload, "jmessage answered \(response.status) with an unexpected body: \(String(response.bodyString.prefix(200)))")
        }
    }
}

extension String {
    var trimmingTrailingSlash: String {
        var text = self
        while text.hasSuffix("/") { text.removeLast() }
        return text
    }
}
