import Foundation
import IMCore

/// One message-extra row of the business server (`messageExtraResp`), from `/v1/message/extra/sync`.
///
/// - `extra_version` is per channel and strictly increasing: the sync cursor.
/// - `content_edit` is the edited content JSON (same schema as a payload, with `type`); `edited_at`
///   seconds, 0/absent = never edited.
/// - `extra` is the remote key/value dictionary (the SDKs' `WKMessageExtra.extra`). It is not in the
///   TangSengDaoDao struct (UNCONFIRMED as a server field); IMBridge's sandbox serves it and maps the
///   neutral expansion onto it. Absent = the message was sent without expansion.
/// Note the id key is `message_id_str` (messages use `message_idstr`).
public struct WKMessageExtra: Codable, Hashable, Sendable {
    public var messageID: Int64
    public var messageIDStr: String
    public var messageSeq: UInt64?
    public var revoke: Int?
    public var revoker: String?
    public var voiceStatus: Int?
    public var readed: Int?
    public var readedCount: Int?
    /// Members who have not read it yet. Read by the SDKs, not in the TSDD struct (UNCONFIRMED);
    /// IMBridge's sandbox sends it.
    public var unreadCount: Int?
    public var readedAt: Int64?
    public var isMutualDeleted: Int?
    public var isPinned: Int?
    public var contentEdit: JSONValue?
    public var editedAt: Int64?
    public var extraVersion: Int64
    public var extra: [String: String]?

    public init(messageID: Int64, messageSeq: UInt64? = nil, extraVersion: Int64) {
        self.messageID = messageID
        self.messageIDStr = String(messageID)
        self.messageSeq = messageSeq
        self.extraVersion = extraVersion
    }

    enum CodingKeys: String, CodingKey {
        case messageID = "message_id", messageIDStr = "message_id_str", messageSeq = "message_seq", revoke, revoker
        case voiceStatus = "voice_status", readed, readedCount = "readed_count", unreadCount = "unread_count", readedAt = "readed_at"
        case isMutualDeleted = "is_mutual_deleted", isPinned = "is_pinned", contentEdit = "content_edit"
        case editedAt = "edited_at", extraVersion = "extra_version", extra
    }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        let idText = try c.lenientString(.messageIDStr)
        guard let id = try c.lenientInt64(.messageID) ?? idText.flatMap({ Int64($0) }) else {
            throw DecodingError.keyNotFound(CodingKeys.messageID, .init(codingPath: c.codingPath, debugDescription: "message_id missing"))
        }
        messageID = id
        messageIDStr = idText ?? String(id)
        messageSeq = (try c.lenientInt64(.messageSeq)).map { UInt64(max(0, $0)) }
        revoke = (try c.lenientInt64(.revoke)).map { Int($0) }
        revoker = try c.lenientString(.revoker)
        voiceStatus = (try c.lenientInt64(.voiceStatus)).map { Int($0) }
        readed = (try c.lenientInt64(.readed)).map { Int($0) }
        readedCount = (try c.lenientInt64(.readedCount)).map { Int($0) }
        unreadCount = (try c.lenientInt64(.unreadCount)).map { Int($0) }
        readedAt = try c.lenientInt64(.readedAt)
        isMutualDeleted = (try c.lenientInt64(.isMutualDeleted)).map { Int($0) }
        isPinned = (try c.lenientInt64(.isPinned)).map { Int($0) }
        // Some clients send `content_edit` as a JSON string; accept both.
        if let text = try? c.decode(String.self, forKey: .contentEdit), let data = text.data(using: .utf8) {
            contentEdit = try? JSONDecoder().decode(JSONValue.self, from: data)
        } else {
            contentEdit = try c.decodeIfPresent(JSONValue.self, forKey: .contentEdit)
        }
        editedAt = try c.lenientInt64(.editedAt)
        extraVersion = try c.lenientInt64(.extraVersion) ?? 0
        extra = Self.stringExtras(try? c.decodeIfPresent(JSONValue.self, forKey: .extra))
    }

    /// The remote `extra` as strings, whatever a client wrote into it: a string stays itself, a number
    /// or boolean becomes its JSON text (`3`, `true`), an object or array its compact JSON text, and a
    /// null value drops the key; the other keys are kept. An `extra` that is not an object is read as
    /// absent. (A single non-string value used to fail the decoding of the whole sync page, so the
    /// extras sync — and the callback that asked for it — failed for ever.)
    public static func stringExtras(_ value: JSONValue?) -> [String: String]? {
        guard case .object(let object)? = value else { return nil }
        var strings: [String: String] = [:]
        for (key, value) in object {
            switch value {
            case .string(let text): strings[key] = text
            case .null: continue
            default: strings[key] = value.jsonString()
            }
        }
        return strings
    }

    /// Go `omitempty` style: zero flags and empty strings are left out.
    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(messageID, forKey: .messageID)
        try c.encode(messageIDStr, forKey: .messageIDStr)
        if let messageSeq, messageSeq > 0 { try c.encode(messageSeq, forKey: .messageSeq) }
        try c.encodeNonZero(revoke.map(Int64.init), forKey: .revoke)
        if let revoker, !revoker.isEmpty { try c.encode(revoker, forKey: .revoker) }
        try c.encodeNonZero(voiceStatus.map(Int64.init), forKey: .voiceStatus)
        try c.encodeNonZero(readed.map(Int64.init), forKey: .readed)
        try c.encodeNonZero(readedCount.map(Int64.init), forKey: .readedCount)
        try c.encodeIfPresent(unreadCount, forKey: .unreadCount)
        try c.encodeNonZero(readedAt, forKey: .readedAt)
        try c.encodeNonZero(isMutualDeleted.map(Int64.init), forKey: .isMutualDeleted)
        try c.encodeNonZero(isPinned.map(Int64.init), forKey: .isPinned)
        try c.encodeIfPresent(contentEdit, forKey: .contentEdit)
        try c.encode(editedAt ?? 0, forKey: .editedAt)
        try c.encode(extraVersion, forKey: .extraVersion)
        try c.encodeIfPresent(extra, forKey: .extra)
    }
}

/// `POST /v1/message/extra/sync`: cursor 0 → the newest `limit` rows; otherwise rows with
/// `extra_version` > cursor; always ascending by `extra_version`. `limit` default 100, max 10000.
public struct WKExtraSyncRequest: Codable, Hashable, Sendable {
    public var channelID: String
    public var channelType: UInt8
    public var extraVersion: Int64
    public var source: String?
    public var limit: Int?
    public init(channelID: String, channelType: UInt8, extraVersion: Int64, source: String? = nil, limit: Int? = nil) {
        self.channelID = channelID
        self.channelType = channelType
        self.extraVersion = extraVersion
        self.source = source
        self.limit = limit
    }
    enum CodingKeys: String, CodingKey {
        case channelID = "channel_id", channelType = "channel_type", extraVersion = "extra_version", source, limit
    }
}

/// `POST /v1/message/edit`: `content_edit` is the new content JSON **as a string**.
public struct WKEditRequest: Codable, Hashable, Sendable {
    public var messageID: String
    public var messageSeq: UInt64
    public var channelID: String
    public var channelType: UInt8
    public var contentEdit: String
    public init(messageID: String, messageSeq: UInt64, channelID: String, channelType: UInt8, contentEdit: String) {
        self.messageID = messageID
        self.messageSeq = messageSeq
        self.channelID = channelID
        self.channelType = channelType
        self.contentEdit = contentEdit
    }
    enum CodingKeys: String, CodingKey {
        case messageID = "message_id", messageSeq = "message_seq", channelID = "channel_id"
        case channelType = "channel_type", contentEdit = "content_edit"
    }
}

/// `POST /v1/message/readed`: the caller (session token) read these messages.
public struct WKReadedRequest: Codable, Hashable, Sendable {
    public var messageIDs: [String]
    public var channelID: String
    public var channelType: UInt8
    public init(messageIDs: [String], channelID: String, channelType: UInt8) {
        self.messageIDs = messageIDs
        self.channelID = channelID
        self.channelType = channelType
    }
    enum CodingKeys: String, CodingKey { case messageIDs = "message_ids", channelID = "channel_id", channelType = "channel_type" }
}

/// `POST /v1/message/extra` (IMBridge's choice, docs/adapters/wukong.md; WuKong lists no write endpoint for the remote
/// `extra` dictionary, the SDKs leave it to the app's `updateMessageExtraProvider`): replaces the
/// message's whole `extra` dictionary with `extra`, bumps `extra_version`, sends CMD `syncMessageExtra`.
public struct WKExtraUpdateRequest: Codable, Hashable, Sendable {
    public var messageID: String
    public var channelID: String
    public var channelType: UInt8
    public var extra: [String: String]
    public init(messageID: String, channelID: String, channelType: UInt8, extra: [String: String]) {
        self.messageID = messageID
        self.channelID = channelID
        self.channelType = channelType
        self.extra = extra
    }
    enum CodingKeys: String, CodingKey { case messageID = "message_id", channelID = "channel_id", channelType = "channel_type", extra }
}

/// `POST /v1/reactions`: toggles the caller's `emoji` on a message.
public struct WKReactionRequest: Codable, Hashable, Sendable {
    public var messageID: String
    public var channelID: String
    public var channelType: UInt8
    public var emoji: String
    public init(messageID: String, channelID: String, channelType: UInt8, emoji: String) {
        self.messageID = messageID
        self.channelID = channelID
        self.channelType = channelType
        self.emoji = emoji
    }
    enum CodingKeys: String, CodingKey { case messageID = "message_id", channelID = "channel_id", channelType = "channel_type", emoji }
}

/// `POST /v1/reaction/sync`: rows with `seq` > cursor, ascending; `limit` default 100, max 1000.
public struct WKReactionSyncRequest: Codable, Hashable, Sendable {
    public var channelID: String
    public var channelType: UInt8
    public var seq: Int64
    public var limit: Int?
    public init(channelID: String, channelType: UInt8, seq: Int64, limit: Int? = nil) {
        self.channelID = channelID
        self.channelType = channelType
        self.seq = seq
        self.limit = limit
    }
    enum CodingKeys: String, CodingKey { case channelID = "channel_id", channelType = "channel_type", seq, limit }
}

/// One reaction row of `/v1/reaction/sync`. `seq` is the channel's reaction version (the cursor);
/// `is_deleted` 1 = the toggle removed it; `created_at` is a `yyyy-MM-dd HH:mm:ss` string in TSDD
/// (IMBridge's sandbox sends that form; the codec also accepts unix seconds/ms).
public struct WKReaction: Codable, Hashable, Sendable {
    public var messageID: String
    public var channelID: String
    public var channelType: UInt8
    public var seq: Int64
    public var uid: String
    public var name: String
    public var emoji: String
    public var isDeleted: Int
    public var createdAt: String
    public init(messageID: String, channelID: String, channelType: UInt8, seq: Int64, uid: String, name: String = "",
                emoji: String, isDeleted: Int, createdAt: String) {
        self.messageID = messageID
        self.channelID = channelID
        self.channelType = channelType
        self.seq = seq
        self.uid = uid
        self.name = name
        self.emoji = emoji
        self.isDeleted = isDeleted
        self.createdAt = createdAt
    }
    enum CodingKeys: String, CodingKey {
        case messageID = "message_id", channelID = "channel_id", channelType = "channel_type", seq, uid, name, emoji
        case isDeleted = "is_deleted", createdAt = "created_at"
    }
    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        messageID = try c.lenientString(.messageID) ?? ""
        channelID = try c.lenientString(.channelID) ?? ""
        channelType = UInt8(truncatingIfNeeded: try c.lenientInt64(.channelType) ?? 0)
        seq = try c.lenientInt64(.seq) ?? 0
        uid = try c.lenientString(.uid) ?? ""
        name = try c.lenientString(.name) ?? ""
        emoji = try c.lenientString(.emoji) ?? ""
        isDeleted = Int(try c.lenientInt64(.isDeleted) ?? 0)
        createdAt = try c.lenientString(.createdAt) ?? ""
    }
}
