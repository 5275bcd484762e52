import Foundation
import IMCore

extension WuKongContentCodec {
    /// The payload JSON object for a content plus the common keys; `extras` are a message's
    /// `vendorExtras` (only `entities`, `payload_fields` and `reply` are read).
    /// Throws `unsupported` for another vendor's unsupported payload.
    public func encode(_ content: MessageContent, mentions: Mentions = Mentions(), reply: ReplyRef? = nil,
                       extras: [String: JSONValue] = [:]) throws -> [String: JSONValue] {
        var object: [String: JSONValue]
        switch content {
        case .unsupported(let unsupported):
            guard unsupported.vendor == "wukong" else {
                throw IMError(.unsupported, "a \(unsupported.vendor) '\(unsupported.vendorType)' payload cannot be written to WuKong")
            }
            guard case .object(let raw) = try JSONValue.parse(unsupported.raw) else {
                throw IMError(.malformedPayload, "stored WuKong payload is not a JSON object")
            }
            return raw
        case .custom(let custom):
            guard let type = customTypes.first(where: { $0.value == custom.typeName })?.key else {
                object = ["type": .int(Int64(WKContentType.imbridgeCustom)), "content_type": .string(custom.typeName),
                          "data": .string(custom.payload)]
                break
            }
            guard case .object(let fields)? = custom.json else {
                throw IMError(.invalidContent, "payload of '\(custom.typeName)' must be a JSON object to travel on WuKong")
            }
            object = fields
            object["type"] = .int(Int64(type))
        default:
            object = extras["payload_fields"]?.objectValue ?? [:]
            for (key, value) in try Self.encodeBuiltin(content) { object[key] = value }
            if let entities = extras["entities"] { object["entities"] = entities }
            if let origin = extras[OutgoingMessage.originKey] { object[OutgoingMessage.originKey] = origin }
        }
        if !mentions.isEmpty {
            var mention: [String: JSONValue] = [:]
            if mentions.all { mention["all"] = 1 }
            if !mentions.users.isEmpty { mention["uids"] = .array(mentions.users.map { .string($0.rawValue) }) }
            object["mention"] = .object(mention)
        }
        if let reply {
            if let raw = extras["reply"], raw["message_id"]?.stringValue == reply.messageID.rawValue {
                object["reply"] = raw
            } else {
                object["reply"] = Self.encodeReply(reply)
            }
        }
        return object
    }

    /// The payload bytes (compact JSON, sorted keys); an unsupported WuKong payload is returned as received.
    public func encodePayload(_ content: MessageContent, mentions: Mentions = Mentions(), reply: ReplyRef? = nil,
                              extras: [String: JSONValue] = [:]) throws -> Data {
        if case .unsupported(let unsupported) = content, unsupported.vendor == "wukong", mentions.isEmpty, reply == nil {
            return Data(unsupported.raw.utf8)
        }
        return JSONValue.object(try encode(content, mentions: mentions, reply: reply, extras: extras)).jsonData()
    }

    /// The quote object IMBridge writes when it has only a `ReplyRef` (the quoted payload is the digest as text).
    static func encodeReply(_ reply: ReplyRef) -> JSONValue {
        var object: [String: JSONValue] = [
            "message_id": .string(reply.messageID.rawValue),
            "payload": ["type": 1, "content": .string(reply.digest)],
        ]
        if let sender = reply.sender { object["from_uid"] = .string(sender.rawValue) }
        return .object(object)
    }

    static func encodeBuiltin(_ content: MessageContent) throws -> [String: JSONValue] {
        func media(_ type: Int, _ a: MediaAttachment) -> [String: JSONValue] {
            var o: [String: JSONValue] = ["type": .int(Int64(type)), "url": .string(a.remoteURL ?? "")]
            if let width = a.width { o["width"] = .int(Int64(width)) }
            if let height = a.height { o["height"] = .int(Int64(height)) }
            return o
        }
        func seconds(_ ms: Int64?) -> JSONValue? { ms.map { .int(($0 + 999) / 1000) } }
        switch content {
        case .text(let text):
            return ["type": 1, "content": .string(text.text)]
        case .image(let image):
            return media(WKContentType.image, image.attachment)
        case .gif(let gif):
            var o = media(WKContentType.gif, gif.attachment)
            o["thumbnail"] = gif.attachment.thumbnail.map { .string($0) }
            if let ms = gif.attachment.durationMs, ms > 0 {
                o["duration"] = ms % 1000 == 0 ? .int(ms / 1000) : .double(Double(ms) / 1000)
            }
            if let size = gif.attachment.size, size > 0 { o["file_size"] = .int(size) }
            return o
        case .voice(let voice):
            var o: [String: JSONValue] = ["type": 4, "url": .string(voice.attachment.remoteURL ?? "")]
            o["timeTrad"] = seconds(voice.attachment.durationMs)
            return o
        case .video(let video):
            var o = media(WKContentType.video, video.attachment)
            o["size"] = video.attachment.size.map { .int($0) }
            o["second"] = seconds(video.attachment.durationMs)
            o["cover"] = video.cover?.remoteURL.map { .string($0) }
            return o
        case .location(let location):
            var o: [String: JSONValue] = ["type": 6, "lat": .double(location.latitude), "lng": .double(location.longitude)]
            o["title"] = location.title.map { .string($0) }
            o["address"] = location.address.map { .string($0) }
            o["img"] = location.thumbnail.map { .string($0) }
            return o
        case .card(let card):
            var o: [String: JSONValue] = ["type": 7, "uid": .string(card.userID.rawValue), "name": .string(card.name)]
            o["avatar"] = card.avatar.map { .string($0) }
            return o
        case .file(let file):
            var o: [String: JSONValue] = ["type": 8, "url": .string(file.attachment.remoteURL ?? ""), "name": .string(file.name)]
            o["size"] = file.attachment.size.map { .int($0) }
            return o
        case .command(let command):
            var o: [String: JSONValue] = ["type": 99, "cmd": .string(command.name)]
            if command.data != .null { o["param"] = command.data }
            return o
        case .notice(let notice):
            let type = notice.noticeType.flatMap(Int.init).flatMap { WKContentType.systemRange.contains($0) ? $0 : nil }
                ?? WKContentType.tip
            var o: [String: JSONValue] = ["type": .int(Int64(type)), "content": .string(notice.template ?? notice.text)]
            if !notice.parameters.isEmpty { o["extra"] = .array(notice.parameters) }
            return o
        case .custom, .unsupported:
            return [:]
        }
    }
}
