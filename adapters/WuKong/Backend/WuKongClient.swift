import Foundation
import IMCore
import IMHTTP

/// REST client for WuKongIM and its companion business server.
///
/// - WuKongIM calls carry the `token` manager header when `managerToken` is set.
/// - Business-server calls carry `token` = the acting user's session token.
/// - Every non-success answer is an `IMError` (see `WuKongErrors`); transport failures are retryable.
public struct WuKongClient: Sendable {
    public var imURL: String
    public var businessURL: String
    public var managerToken: String?
    public var http: HTTPClientWrapper

    public init(imURL: String, businessURL: String, managerToken: String? = nil, timeoutSeconds: Int64 = 15) {
        self.imURL = Self.trim(imURL)
        self.businessURL = Self.trim(businessURL)
        self.managerToken = managerToken
        // What WuKongIM or the business server (or a proxy) answers is read with the manager token masked
        // (`HTTPClientWrapper.secrets`; the backend adds the session tokens, the token secret and the webhook
        // secret; the puppets' derived tokens are masked as the request's own credentials).
        self.http = HTTPClientWrapper(timeoutSeconds: timeoutSeconds, secrets: SecretMask([managerToken].compactMap { $0 }))
    }

    static func trim(_ url: String) -> String {
        var url = url
        while url.hasSuffix("/") { url.removeLast() }
        return url
    }

    // MARK: raw calls

    /// POSTs JSON to WuKongIM and returns the checked body.
    public func im(_ path: String, _ body: some Encodable) async throws -> Data {
        let headers = managerToken.map { [(name: "token", value: $0)] } ?? []
        return try await call(OutboundRequest.json(imURL + path, try WuKongJSON.encode(body), headers: headers))
    }

    /// POSTs JSON (or only a query) to the business server as the owner of `session`.
    public func business(_ path: String, session: String, query: [(String, String)] = [], _ body: (some Encodable)?) async throws -> Data {
        var url = businessURL + path
        if !query.isEmpty { url += "?" + FormBody(items: query.map { (name: $0.0, value: $0.1) }).encoded }
        let data = try body.map { try WuKongJSON.encode($0) } ?? Data()
        return try await call(OutboundRequest.json(url, data, headers: [("token", session)]))
    }

    func call(_ request: OutboundRequest) async throws -> Data {
        let response = try await http.send(request)
        let body = Data(response.body)
        if let error = WuKongErrors.map(httpStatus: response.status, body: body, retryAfterMs: response.retryAfterMs) {
            throw error
        }
        return body
    }

    static func decode<T: Decodable>(_ type: T.Type, _ data: Data, _ what: String) throws -> T {
        do {
            return try WuKongJSON.decode(type, from: data)
        } catch {
            throw IMError(.malformedPayload, "WuKong \(what) reply does not parse: \(error)",
                          vendorMessage: String(decoding: data.prefix(300), as: UTF8.self))
        }
    }

    // MARK: WuKongIM

    public func updateToken(_ request: WKUserTokenRequest) async throws {
        _ = try await im("/user/token", request)
    }

    public func createChannel(_ request: WKChannelRequest) async throws { _ = try await im("/channel", request) }
    public func addSubscribers(_ request: WKChannelRequest) async throws { _ = try await im("/channel/subscriber_add", request) }
    public func removeSubscribers(_ request: WKChannelRequest) async throws { _ = try await im("/channel/subscriber_remove", request) }

    /// `/message/send`; accepts the `data`-wrapped and the flat reply.
    public func send(_ request: WKSendRequest) async throws -> WKSendResult {
        let data = try await im("/message/send", request)
        guard let result = WKSendResult.parse(data) else {
            throw IMError(.malformedPayload, "WuKong /message/send reply has no message_id",
                          vendorMessage: String(decoding: data.prefix(300), as: UTF8.self))
        }
        return result
    }

    public func sendBatch(_ request: WKSendBatchRequest) async throws -> WKSendBatchResponse {
        try Self.decode(WKSendBatchResponse.self, try await im("/message/sendbatch", request), "/message/sendbatch")
    }

    public func messageSync(_ request: WKMessageSyncRequest) async throws -> WKMessageSyncResponse {
        try Self.decode(WKMessageSyncResponse.self, try await im("/channel/messagesync", request), "/channel/messagesync")
    }

    public func lookup(_ request: WKLookupRequest) async throws -> [WKMessage] {
        try Self.decode(WKMessageSyncResponse.self, try await im("/messages", request), "/messages").messages
    }

    public func conversations(_ request: WKConversationSyncRequest) async throws -> [WKConversation] {
        let data = try await im("/conversation/sync", request)
        if (try? JSONValue.parse(data))?.objectValue != nil { return [] }
        return try Self.decode([WKConversation].self, data, "/conversation/sync")
    }

    public func clearUnread(_ request: WKClearUnreadRequest) async throws { _ = try await im("/conversations/clearUnread", request) }

    /// `GET /cluster/channels/{channel_id}/{channel_type}/subscribers` (the cluster API, mounted on the main
    /// API with the same manager token): the channel's subscribers.
    public func channelSubscribers(channelID: String, type: UInt8) async throws -> [String] {
        let path = "/cluster/channels/\(WKDirectoryPaths.segment(channelID))/\(type)/subscribers"
        let headers = managerToken.map { [(name: "token", value: $0)] } ?? []
        let data = try await call(OutboundRequest(method: "GET", url: imURL + path, headers: headers, body: nil))
        return try Self.decode([String].self, data, path)
    }

    // MARK: business server

    public func extraSync(_ request: WKExtraSyncRequest, session: String) async throws -> [WKMessageExtra] {
        try Self.decode([WKMessageExtra].self, try await business("/v1/message/extra/sync", session: session, request), "extra/sync")
    }

    /// `/v1/message/revoke`, parameters in the query string.
    public func revoke(messageID: String, clientMsgNo: String, channelID: String, channelType: UInt8, session: String) async throws {
        let query = [("message_id", messageID), ("client_msg_no", clientMsgNo), ("channel_id", channelID),
                     ("channel_type", String(channelType))]
        _ = try await business("/v1/message/revoke", session: session, query: query, Optional<WKStatus>.none)
    }

    public func edit(_ request: WKEditRequest, session: String) async throws {
        _ = try await business("/v1/message/edit", session: session, request)
    }

    public func readed(_ request: WKReadedRequest, session: String) async throws {
        _ = try await business("/v1/message/readed", session: session, request)
    }

    public func updateExtra(_ request: WKExtraUpdateRequest, session: String) async throws {
        _ = try await business("/v1/message/extra", session: session, request)
    }

    public func react(_ request: WKReactionRequest, session: String) async throws {
        _ = try await business("/v1/reactions", session: session, request)
    }

    public func reactionSync(_ request: WKReactionSyncRequest, session: String) async throws -> [WKReaction] {
        try Self.decode([WKReaction].self, try await business("/v1/reaction/sync", session: session, request), "reaction/sync")
    }
}
