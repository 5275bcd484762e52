import Foundation
import IMCore

/// Pure translation of WuKong payload JSON (`{"type":N,…}`) ⇄ neutral content.
///
/// Rules:
/// - Types 1–8, 99 and 1000–2000 map to the neutral built-ins (seconds → milliseconds for voice and
///   video durations). 11, 12, 13 and the app's `customTypes` become `.custom` through the
///   `ContentRegistry` (payload = the JSON without `type`/`mention`/`reply`, sorted keys). Custom
///   types with no number travel as type 10000 `{"content_type":name,"data":"<payload text>"}`, so
///   their payload text survives byte for byte. Anything else is `.unsupported` keeping the received
///   payload text, written back byte for byte.
/// - Common keys: `mention` ⇄ `Mentions`, `reply` ⇄ `ReplyRef`; `entities` and any key the neutral
///   model has no home for are kept in `vendorExtras` (`entities`, `payload_fields`, `reply`) and
///   written back, so wire → neutral → wire is exact.
public struct WuKongContentCodec: Sendable {
    public let registry: ContentRegistry
    /// WuKong type number → registry content-type name.
    public let customTypes: [Int: String]

    public init(registry: ContentRegistry = ContentRegistry(), customTypes: [Int: String] = [:]) {
        self.registry = registry
        self.customTypes = WKContentType.defaultCustomTypes.merging(customTypes) { _, app in app }
    }

    public struct Decoded: Hashable, Sendable {
        public var content: MessageContent
        public var mentions: Mentions
        public var reply: ReplyRef?
        /// `entities`, `payload_fields`, `reply` (the raw quote, when it holds more than `ReplyRef`).
        public var extras: [String: JSONValue]
    }

    // MARK: decoding

    public func decode(payload: Data) throws -> Decoded {
        guard case .object(let object) = try JSONValue.parse(payload) else {
            throw IMError(.malformedPayload, "WuKong payload is not a JSON object")
        }
        return try decode(object, rawText: String(decoding: payload, as: UTF8.self))
    }

    public func decode(_ object: [String: JSONValue], rawText: String? = nil) throws -> Decoded {
        guard let type = object["type"]?.int64Value.map(Int.init) else {
            throw IMError(.malformedPayload, "WuKong payload has no numeric `type`")
        }
        var rest = object
        rest["type"] = nil
        let mentions = Self.decodeMentions(rest.removeValue(forKey: "mention"))
        let replyJSON = rest.removeValue(forKey: "reply")
        var extras: [String: JSONValue] = [:]
        let reply = try replyJSON.flatMap { try decodeReply($0, extras: &extras) }
        let content: MessageContent
        if type == WKContentType.imbridgeCustom, let name = rest["content_type"]?.stringValue,
           let data = rest["data"]?.stringValue {
            content = .custom(try registry.decode(typeName: name, payload: data))
            rest["content_type"] = nil
            rest["data"] = nil
        } else if let name = customTypes[type] {
            content = .custom(try registry.decode(typeName: name, payload: JSONValue.object(rest).jsonString()))
            rest = [:]
        } else if let builtin = try Self.decodeBuiltin(type, &rest) {
            content = builtin
            if let entities = rest.removeValue(forKey: "entities") { extras["entities"] = entities }
        } else {
            content = .unsupported(UnsupportedContent(vendor: "wukong", vendorType: String(type),
                                                      raw: rawText ?? JSONValue.object(object).jsonString()))
            return Decoded(content: content, mentions: mentions, reply: reply, extras: [:])
        }
        if !rest.isEmpty { extras["payload_fields"] = .object(rest) }
        return Decoded(content: content, mentions: mentions, reply: reply, extras: extras)
    }

    static func decodeMentions(_ value: JSONValue?) -> Mentions {
        guard let value else { return Mentions() }
        let all = (value["all"]?.int64Value ?? 0) != 0
        let uids = (value["uids"]?.arrayValue ?? []).compactMap(\.stringValue).map(UserID.init)
        return Mentions(all: all, users: uids)
    }

    private func decodeReply(_ value: JSONValue, extras: inout [String: JSONValue]) throws -> ReplyRef? {
        guard let id = value["message_id"]?.stringValue, !id.isEmpty else { return nil }
        var digest = ""
        if case .object(let quoted)? = value["payload"] {
            digest = (try? decode(quoted))?.content.digest ?? ""
        } else if let text = value["payload"]?.stringValue, let data = Data(base64Encoded: text) {
            digest = (try? decode(payload: data))?.content.digest ?? ""
        }
        let sender = value["from_uid"]?.stringValue.flatMap { $0.isEmpty ? nil : UserID($0) }
        let ref = ReplyRef(messageID: MessageID(id), sender: sender, digest: digest)
        if Self.encodeReply(ref) != value { extras["reply"] = value }
        return ref
    }

    /// Built-in types; nil for types the codec does not know. Consumes the keys it uses from `rest`.
    static func decodeBuiltin(_ type: Int, _ rest: inout [String: JSONValue]) throws -> MessageContent? {
        func take(_ key: String) -> JSONValue? { rest.removeValue(forKey: key) }
        func string(_ key: String) -> String? { take(key)?.stringValue }
        func int(_ key: String) -> Int64? { take(key)?.int64Value }
        func media() -> MediaAttachment {
            var attachment = MediaAttachment.remote(string("url") ?? "")
            attachment.width = int("width").map(Int.init)
            attachment.height = int("height").map(Int.init)
            return attachment
        }
        switch type {
        case WKContentType.text:
            return .text(TextContent(string("content") ?? ""))
        case WKContentType.image:
            return .image(ImageContent(media()))
        case WKContentType.gif:
            // Seeds 000/001 (`WKGIFContent`): a missing width/height decodes as 100; the extended
            // form adds `thumbnail`, `duration` (seconds) and `file_size`.
            var attachment = media()
            attachment.width = attachment.width ?? 100
            attachment.height = attachment.height ?? 100
            attachment.thumbnail = string("thumbnail")
            attachment.durationMs = take("duration")?.doubleValue.map { Int64(($0 * 1000).rounded()) }
            attachment.size = int("file_size")
            return .gif(GIFContent(attachment))
        case WKContentType.voice:
            var attachment = MediaAttachment.remote(string("url") ?? "")
            attachment.durationMs = int("timeTrad").map { $0 * 1000 }
            return .voice(VoiceContent(attachment))
        case WKContentType.video:
            var attachment = media()
            attachment.size = int("size")
            attachment.durationMs = int("second").map { $0 * 1000 }
            let cover = string("cover").map { MediaAttachment.remote($0) }
            return .video(VideoContent(attachment, cover: cover))
        case WKContentType.location:
            guard let lat = (take("lat") ?? take("latitude"))?.doubleValue,
                  let lng = (take("lng") ?? take("longitude"))?.doubleValue else {
                throw IMError(.malformedPayload, "WuKong location (type 6) needs lat/lng")
            }
            return .location(LocationContent(latitude: lat, longitude: lng, title: string("title"),
                                             address: string("address"), thumbnail: string("img")))
        case WKContentType.card:
            return .card(CardContent(userID: UserID(string("uid") ?? ""), name: string("name") ?? "", avatar: string("avatar")))
        case WKContentType.file:
            var attachment = MediaAttachment.remote(string("url") ?? "")
            attachment.size = int("size")
            return .file(FileContent(attachment, name: string("name") ?? ""))
        case WKContentType.cmd:
            guard let name = string("cmd") else { throw IMError(.malformedPayload, "WuKong CMD (type 99) has no `cmd`") }
            return .command(CommandContent(name: name, data: take("param") ?? .null))
        case WKContentType.systemRange:
            let template = string("content") ?? ""
            let parameters = take("extra")?.arrayValue ?? []
            return .notice(NoticeContent(text: NoticeContent.render(template: template, parameters: parameters),
                                         template: template, parameters: parameters, noticeType: String(type)))
        default:
            return nil
        }
    }
}
