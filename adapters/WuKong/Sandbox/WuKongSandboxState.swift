import Foundation
import IMCore
import WuKong

/// The in-memory state of the WuKong sandbox: WuKongIM (users, channels, messages, conversations) and
/// the companion business server (extras, reads, reactions) over one backend.
///
/// Storage rules, as WuKongIM v2.2.5 keeps them:
/// - a channel is keyed by (storage id, type); a person channel's storage id is the fake id `a@b`
///   (crc32 rule), a CMD channel's is `<storage id>____cmd`;
/// - `message_seq` is per storage channel from 1; `message_id` is a global, increasing 64-bit id
///   (beyond JavaScript's safe range, like the real snowflake ids);
/// - stored messages keep `from_uid` as sent (the system uid as `____system`) and are rendered per
///   request (`render`).
struct WuKongSandboxState: Codable {
    struct ChannelKey: Hashable, Comparable, Codable {
        var id: String
        var type: UInt8
        static func < (a: ChannelKey, b: ChannelKey) -> Bool { (a.type, a.id) < (b.type, b.id) }
        var isCmd: Bool { id.hasSuffix(WuKongChannel.cmdSuffix) }
    }

    struct Channel: Codable {
        var ban = 0
        var disband = 0
        var sendBan = 0
        var large = 0
        var subscribers: [String] = []
    }

    static let firstMessageID: Int64 = 1_729_183_029_123_457_024

    var devices: [String: [UInt8: String]] = [:]
    var tokenOwners: [String: String] = [:]
    var channels: [ChannelKey: Channel] = [:]
    var messages: [ChannelKey: [WKMessage]] = [:]
    var locations: [Int64: ChannelKey] = [:]
    var nextMessageID = firstMessageID
    /// uid → channel → read-to seq.
    var readTo: [String: [ChannelKey: UInt64]] = [:]
    var extras: [ChannelKey: [Int64: WKMessageExtra]] = [:]
    var extraVersions: [ChannelKey: Int64] = [:]
    var readers: [Int64: Set<String>] = [:]
    var reactions: [ChannelKey: [WKReaction]] = [:]
    var reactionSeqs: [ChannelKey: Int64] = [:]

    // MARK: keys and rendering

    /// The storage key for a channel addressed by `channelID` on behalf of `uid` (person: the fake id).
    static func key(channelID: String, type: UInt8, uid: String) -> ChannelKey {
        if type == WKChannelType.person, !channelID.contains("@") {
            return ChannelKey(id: WuKongChannel.fakeChannelID(uid, channelID), type: type)
        }
        return ChannelKey(id: channelID, type: type)
    }

    /// The message as the server renders it: person channels show the half of the fake id that is not
    /// the sender; the system uid shows as "".
    static func render(_ stored: WKMessage) -> WKMessage {
        var message = stored
        if stored.channelType == WKChannelType.person {
            let base = WuKongChannel.stripCmdSuffix(stored.channelID)
            let suffix = stored.channelID.hasSuffix(WuKongChannel.cmdSuffix) ? WuKongChannel.cmdSuffix : ""
            message.channelID = WuKongChannel.renderedPersonChannel(fakeID: base, fromUID: stored.fromUID) + suffix
        }
        if stored.fromUID == WuKongChannel.systemUID { message.fromUID = "" }
        return message
    }

    func message(_ id: Int64) -> WKMessage? {
        guard let key = locations[id] else { return nil }
        return messages[key]?.first { $0.messageID == id }
    }

    func lastSeq(_ key: ChannelKey) -> UInt64 { messages[key]?.last?.messageSeq ?? 0 }

    /// Users who see a channel: the two halves of a person channel, or the subscribers.
    func members(of key: ChannelKey) -> [String] {
        if key.type == WKChannelType.person {
            return WuKongChannel.stripCmdSuffix(key.id).split(separator: "@").map(String.init)
        }
        return channels[ChannelKey(id: WuKongChannel.stripCmdSuffix(key.id), type: key.type)]?.subscribers ?? []
    }

    // MARK: messages

    /// Stores (or, for `no_persist`, only stamps) a message and returns it in stored form.
    mutating func store(_ request: WKSendRequest, key: ChannelKey, nowMs: Int64, setting: UInt8 = 0) -> WKMessage {
        let id = nextMessageID
        nextMessageID += 1
        let persist = request.header.noPersist == 0
        var message = WKMessage(
            header: request.header, setting: setting, messageID: id,
            clientMsgNo: request.clientMsgNo.flatMap { $0.isEmpty ? nil : $0 } ?? UUID().uuidString.replacingOccurrences(of: "-", with: "") + "0",
            messageSeq: persist ? lastSeq(key) + 1 : 0,
            fromUID: request.fromUID.isEmpty ? WuKongChannel.systemUID : request.fromUID,
            channelID: key.id, channelType: key.type, expire: request.expire ?? 0, timestamp: nowMs / 1000,
            payload: request.payload)
        if request.isStream == 1 { message.setting |= WKSetting.stream }
        if persist {
            messages[key, default: []].append(message)
            locations[id] = key
        }
        return message
    }

    /// `/channel/messagesync` selection (see `WKMessageSyncRequest`); results ascending by seq.
    func sync(_ key: ChannelKey, start: UInt64, end: UInt64, limit: Int, pullMode: Int) -> (messages: [WKMessage], more: Int) {
        let limit = min(limit, 10_000)
        let all = messages[key] ?? []
        guard limit > 0, !all.isEmpty else { return ([], 0) }
        var result: [WKMessage]
        var boundaryReached = false
        if start == 0 && end == 0 {
            result = Array(all.suffix(limit))
            boundaryReached = result.first?.messageSeq == all.first?.messageSeq
        } else if pullMode == 1 {
            result = Array(all.filter { $0.messageSeq >= start && (end == 0 || $0.messageSeq < end) }.prefix(limit))
            boundaryReached = end > 0 && result.last.map { $0.messageSeq + 1 >= end } == true
        } else {
            guard end <= start else { return ([], 0) }
            result = Array(all.filter { $0.messageSeq > end && $0.messageSeq <= start }.suffix(limit))
            boundaryReached = result.first.map { $0.messageSeq <= max(end + 1, all.first!.messageSeq) } == true
        }
        let more = result.count < limit || boundaryReached ? 0 : 1
        return (result, more)
    }

    // MARK: extras

    mutating func nextExtraVersion(_ key: ChannelKey) -> Int64 {
        let next = (extraVersions[key] ?? 0) + 1
        extraVersions[key] = next
        return next
    }

    /// Applies `change` to the message's extras row (creating it) under a new channel version.
    mutating func updateExtra(_ id: Int64, in key: ChannelKey, _ change: (inout WKMessageExtra) -> Void) {
        let version = nextExtraVersion(key)
        var row = extras[key]?[id] ?? WKMessageExtra(messageID: id, messageSeq: message(id)?.messageSeq, extraVersion: version)
        change(&row)
        row.extraVersion = version
        extras[key, default: [:]][id] = row
    }

    /// `/v1/message/extra/sync`: cursor 0 → the newest `limit` rows; else rows above the cursor.
    func extraRows(_ key: ChannelKey, after cursor: Int64, limit: Int, viewer: String) -> [WKMessageExtra] {
        let rows = (extras[key] ?? [:]).values.sorted { $0.extraVersion < $1.extraVersion }
        let picked = cursor == 0 ? Array(rows.suffix(limit)) : Array(rows.filter { $0.extraVersion > cursor }.prefix(limit))
        return picked.map { row in
            var row = row
            row.readed = readers[row.messageID]?.contains(viewer) == true ? 1 : nil
            return row
        }
    }
}
