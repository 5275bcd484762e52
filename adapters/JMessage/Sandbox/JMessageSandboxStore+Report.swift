import JMessage
import Foundation
import IMCore
import IMHTTP

/// Report v2 history and media resources.
extension JMessageSandboxStore {
    static let maxSpanMs: Int64 = 7 * 86_400_000
    static let retentionMs: Int64 = 60 * 86_400_000
    static let maxUploadBytes = 8 << 20

    /// `GET /v2/messages`, `/v2/users/{u}/messages`, `/v2/groups/{gid}/messages`, `/v2/chatrooms/{id}/messages`.
    ///
    /// First request: `count` 1…1000, `begin_time`/`end_time` as `yyyy-MM-dd HH:mm:ss` (UTC+8), span ≤ 7
    /// days, compared with `create_time` (seconds): inclusive for `/v2/messages`, exclusive for
    /// `/users/…` as the doc says. Results are ascending by send time, 60 days kept. The matching ids
    /// are fixed at the first request; `cursor` (present only when more remain) pages through them with
    /// the first request's `count` and lives 120 s — an unknown or expired cursor is 400 899003.
    /// A user's feed holds the messages they sent and single messages sent to them.
    func report(_ request: HTTPRequestData, segments: [String]) -> HTTPResponseData {
        let now = clock.nowMs()
        cursors = cursors.filter { now - $0.value.createdAt <= Self.cursorTTLMs }
        if let token = request.queryValue("cursor") {
            guard var cursor = cursors[token] else { return JMessageSandbox.error(JMessageErrors.invalidParameter, "cursor is invalid or expired") }
            cursors.removeValue(forKey: token)
            let page = pageResponse(&cursor, now: now)
            return page
        }
        guard let count = request.queryValue("count").flatMap({ Int($0) }), (1...1000).contains(count) else {
            return JMessageSandbox.error(JMessageErrors.invalidParameter, "count must be 1…1000")
        }
        guard let begin = request.queryValue("begin_time").flatMap(JMessageTime.parse),
              let end = request.queryValue("end_time").flatMap(JMessageTime.parse), begin <= end else {
            return JMessageSandbox.error(JMessageErrors.invalidParameter, "begin_time and end_time must be yyyy-MM-dd HH:mm:ss, begin ≤ end")
        }
        guard end - begin <= Self.maxSpanMs else { return JMessageSandbox.error(JMessageErrors.invalidParameter, "begin_time to end_time spans more than 7 days") }
        let (beginSec, endSec) = (begin / 1000, end / 1000)
        let kept = messages.filter { now - $0.msgCtime <= Self.retentionMs }
        let matched: [JMHistoryMessage]
        switch (segments.count, segments.count > 1 ? segments[1] : "") {
        case (2, "messages"):
            matched = kept.filter { beginSec <= $0.createTime && $0.createTime <= endSec }
        case (4, "users"):
            let user = segments[2]
            guard users[user] != nil else { return JMessageSandbox.error(JMessageErrors.userNotFound, "user \(user) not exist") }
            matched = kept.filter {
                beginSec < $0.createTime && $0.createTime < endSec
                    && ($0.fromID == user || ($0.targetType == "single" && $0.targetID == user))
            }
        case (4, "groups"):
            guard let gid = Int64(segments[2]), groups[gid] != nil else { return JMessageSandbox.error(JMessageErrors.groupNotFound, "group not exist") }
            matched = kept.filter { $0.targetType == "group" && $0.targetID == segments[2] && beginSec <= $0.createTime && $0.createTime <= endSec }
        case (4, "chatrooms"):
            matched = kept.filter { $0.targetType == "chatroom" && $0.targetID == segments[2] && beginSec <= $0.createTime && $0.createTime <= endSec }
        default:
            return JMessageSandbox.error(JMessageErrors.invalidParameter, status: 404, "no such report API")
        }
        let ordered = matched.sorted { ($0.msgCtime, $0.msgid) < ($1.msgCtime, $1.msgid) }
        var cursor = Cursor(ids: ordered.map(\.msgid), offset: 0, count: count, createdAt: now)
        return pageResponse(&cursor, now: now)
    }

    func pageResponse(_ cursor: inout Cursor, now: Int64) -> HTTPResponseData {
        let slice = cursor.ids.dropFirst(cursor.offset).prefix(cursor.count)
        let byID = Dictionary(messages.map { ($0.msgid, $0) }, uniquingKeysWith: { first, _ in first })
        let page = slice.compactMap { byID[$0] }
        cursor.offset += slice.count
        var token: String?
        if cursor.offset < cursor.ids.count {
            counter += 1
            token = Hashing.md5Hex("\(counter):\(now):\(cursor.offset)")
            cursor.createdAt = now
            cursors[token!] = cursor
        }
        return .json(JMHistoryPage(total: cursor.ids.count, cursor: token, count: page.count, messages: page))
    }

    // MARK: media

    /// `POST /v1/resource?type=image|voice|file`, multipart with one file part (any field name), ≤ 8 MB.
    func upload(_ request: HTTPRequestData) -> HTTPResponseData {
        guard let type = request.queryValue("type"), ["image", "voice", "file"].contains(type) else {
            return JMessageSandbox.error(JMessageErrors.invalidParameter, "type must be image, voice or file")
        }
        guard let boundary = Multipart.boundary(of: request.header("Content-Type")),
              let parts = Multipart.parse(request.body, boundary: boundary),
              let part = parts.first(where: { $0.fileName != nil }) ?? parts.first else {
            return JMessageSandbox.error(JMessageErrors.invalidParameter, "expected multipart/form-data with a file part")
        }
        guard part.data.count <= Self.maxUploadBytes else { return JMessageSandbox.error(JMessageErrors.invalidParameter, "file is larger than 8 MB") }
        counter += 1
        let digest = Hashing.md5Hex(part.data + Array("\(counter)".utf8))
        let id = type == "image" ? "qiniu/image/j/\(digest.uppercased())" : "qiniu/\(type)/j/\(digest.uppercased())"
        let fileName = part.fileName ?? "upload"
        let ext = fileName.split(separator: ".").count > 1 ? fileName.split(separator: ".").last!.lowercased() : (type == "voice" ? "m4a" : "jpg")
        media[id] = Media(type: type, contentType: part.contentType ?? "application/octet-stream", fileName: fileName, bytes: Data(part.data))
        let crc = Int64(Hashing.crc32(part.data))
        let hash = Hashing.md5Hex(part.data)
        let size = Int64(part.data.count)
        let result: JMUploadResult
        switch type {
        case "image":
            let (width, height) = Self.pngSize(part.data) ?? (0, 0)
            result = JMUploadResult(mediaID: id, mediaCrc32: crc, width: width, height: height, format: ext, fsize: size)
        case "voice":
            result = JMUploadResult(mediaID: id, mediaCrc32: crc, format: ext, fsize: size, hash: hash)
        default:
            result = JMUploadResult(mediaID: id, mediaCrc32: crc, fsize: size, hash: hash, fname: fileName)
        }
        return .json(result)
    }

    /// `GET /v1/resource?mediaId=` → `{"url"}` on this sandbox's `/_sandbox/media/…`.
    func resource(_ request: HTTPRequestData) -> HTTPResponseData {
        guard let id = request.queryValue("mediaId"), media[id] != nil else {
            return JMessageSandbox.error(JMessageErrors.invalidParameter, "mediaId is invalid")
        }
        let host = request.header("Host") ?? "127.0.0.1"
        return .json(JMDownloadResult(url: "http://\(host)/_sandbox/media/\(FormBody.escape(id))"))
    }

    func mediaBytes(_ id: String) -> HTTPResponseData {
        guard let file = media[id] else { return .text("not found", status: 404) }
        return HTTPResponseData(status: 200, headers: [("Content-Type", file.contentType)], body: Array(file.bytes))
    }

    /// Width and height from a PNG header; nil for anything else (the sandbox then reports 0×0).
    static func pngSize(_ bytes: [UInt8]) -> (Int, Int)? {
        guard bytes.count >= 24, bytes.prefix(8).elementsEqual([0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]) else { return nil }
        let value = { (offset: Int) in bytes[offset..<offset + 4].reduce(0) { $0 << 8 | Int($1) } }
        return (value(16), value(20))
    }
}
