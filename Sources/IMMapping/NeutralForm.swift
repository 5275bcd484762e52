import Foundation
import IMCore

/// The type of a neutral field as mapping files name it.
public enum NeutralType: String, Sendable, Hashable, CaseIterable {
    case string, int, double, bool, json

    /// Coerces a wire value (after its transform) to this type; nil when it cannot be.
    func coerce(_ value: JSONValue) -> JSONValue? {
        switch self {
        case .string: return value.stringValue.map(JSONValue.string)
        case .int: return value.int64Value.map(JSONValue.int)
        case .double:
            if case .int = value { return value }
            return value.doubleValue.map(JSONValue.double)
        case .bool:
            switch value {
            case .bool: return value
            case .int(let number): return .bool(number != 0)
            case .string(let text):
                if ["true", "1"].contains(text) { return .bool(true) }
                if ["false", "0"].contains(text) { return .bool(false) }
                return nil
            default: return nil
            }
        case .json: return value
        }
    }
}

/// What a mapping entry produces on the neutral side: a built-in content kind, or an app custom type.
public enum NeutralTarget: Hashable, Sendable, CustomStringConvertible {
    case builtin(ContentKind)
    case custom(String)

    public var description: String {
        switch self {
        case .builtin(let kind): kind.rawValue
        case .custom(let name): "custom '\(name)'"
        }
    }
}

/// The neutral field names of each built-in kind (what `fields:` in a mapping file may name), and the
/// conversion between a `MessageContent` and those fields.
///
/// Media kinds share `url`, `width`, `height`, `size`, `checksum`, `duration_ms`, `thumbnail`,
/// `file_name`, `mime_type`; video adds `cover_url`, `cover_width`, `cover_height`, `cover_size`; file adds `name`. Durations are milliseconds and
/// sizes bytes on the neutral side: units are the mapping's transforms.
public enum NeutralForm {
    static let media: [String: NeutralType] = [
        "url": .string, "width": .int, "height": .int, "size": .int, "checksum": .string, "duration_ms": .int,
        "thumbnail": .string, "file_name": .string, "mime_type": .string,
    ]

    /// The fields a built-in kind has; nil for kinds a mapping cannot describe (`custom`, `unsupported`).
    public static func vocabulary(_ kind: ContentKind) -> [String: NeutralType]? {
        switch kind {
        case .text: ["text": .string]
        case .image, .gif, .voice: media
        case .video: media.merging(["cover_url": .string, "cover_width": .int, "cover_height": .int, "cover_size": .int]) { a, _ in a }
        case .file: media.merging(["name": .string]) { a, _ in a }
        case .location: ["latitude": .double, "longitude": .double, "title": .string, "address": .string, "thumbnail": .string]
        case .card: ["user_id": .string, "name": .string, "avatar": .string, "phone": .string, "email": .string]
        case .command: ["name": .string, "data": .json]
        case .notice: ["text": .string, "template": .string, "parameters": .json, "notice_type": .string]
        case .custom, .unsupported: nil
        }
    }

    /// The neutral fields of a content (absent values are left out). Custom contents give their JSON
    /// payload's members; nil when the payload is not a JSON object or the content is unsupported.
    public static func fields(of content: MessageContent) -> [String: JSONValue]? {
        switch content {
        case .custom(let custom):
            return custom.json?.objectValue
        case .unsupported:
            return nil
        default:
            var fields: [String: JSONValue] = [:]
            for key in NeutralKey.allCases {
                if let value = value(key, of: content) { fields[key.name] = value }
            }
            return fields
        }
    }

    /// Builds a content from neutral fields. Custom types go through `registry` (typed when registered).
    public static func content(_ target: NeutralTarget, _ f: [String: JSONValue], registry: ContentRegistry) throws -> MessageContent {
        switch target {
        case .custom(let name):
            return .custom(try registry.decodeOrRaw(typeName: name, payload: JSONValue.object(f).jsonString()))
        case .builtin(let kind):
            return try content(kind, NamedFields(fields: f))
        }
    }

    /// Builds a built-in kind's content from neutral fields however they are held (a dictionary by
    /// name, or a mapping table's values by rule, `VendorTable`).
    static func content<Fields: NeutralFields>(_ kind: ContentKind, _ f: Fields) throws -> MessageContent {
        func string(_ key: NeutralKey) -> String? { f[key]?.stringValue }
        func int(_ key: NeutralKey) -> Int64? { f[key]?.int64Value }
        func attachment() -> MediaAttachment {
            MediaAttachment(remoteURL: string(.url), mimeType: string(.mimeType), size: int(.size), checksum: string(.checksum),
                            width: int(.width).map { Int($0) }, height: int(.height).map { Int($0) },
                            durationMs: int(.durationMs), thumbnail: string(.thumbnail), fileName: string(.fileName),
                            transferState: .needsDownload)
        }
        switch kind {
        case .text: return .text(string(.text) ?? "")
        case .image: return .image(ImageContent(attachment()))
        case .gif: return .gif(GIFContent(attachment()))
        case .voice: return .voice(VoiceContent(attachment()))
        case .video:
            let cover = string(.coverURL).map { url in
                MediaAttachment(remoteURL: url, size: int(.coverSize), width: int(.coverWidth).map { Int($0) },
                                height: int(.coverHeight).map { Int($0) }, transferState: .needsDownload)
            }
            return .video(VideoContent(attachment(), cover: cover))
        case .file:
            // A file's attachment is named like the file unless the wire says otherwise.
            var media = attachment()
            media.fileName = media.fileName ?? string(.name)
            return .file(FileContent(media, name: string(.name) ?? media.fileName ?? ""))
        case .location:
            guard let latitude = f[.latitude]?.doubleValue, let longitude = f[.longitude]?.doubleValue else {
                throw IMError(.malformedPayload, "a location needs latitude and longitude")
            }
            return .location(LocationContent(latitude: latitude, longitude: longitude, title: string(.title),
                                             address: string(.address), thumbnail: string(.thumbnail)))
        case .card:
            return .card(CardContent(userID: UserID(string(.userID) ?? ""), name: string(.name) ?? "", avatar: string(.avatar),
                                     phone: string(.phone), email: string(.email)))
        case .command: return .command(CommandContent(name: string(.name) ?? "", data: f[.data] ?? .null))
        case .notice:
            let parameters = f[.parameters]?.arrayValue ?? []
            let template = string(.template)
            let text = string(.text) ?? template.map { NoticeContent.render(template: $0, parameters: parameters) } ?? ""
            return .notice(NoticeContent(text: text, template: template, parameters: parameters, noticeType: string(.noticeType)))
        case .custom, .unsupported:
            throw IMError(.invalidArgument, "\(kind.rawValue) has no neutral field form")
        }
    }

    /// A built-in content's neutral field `key`, read from the content without building a dictionary
    /// (nil when absent; custom and unsupported contents have none here). `fields(of:)` is made of these.
    static func value(_ key: NeutralKey, of content: MessageContent) -> JSONValue? {
        func string(_ value: String?) -> JSONValue? { value.map(JSONValue.string) }
        func media(_ a: MediaAttachment) -> JSONValue? {
            switch key {
            case .url: string(a.remoteURL)
            case .width: a.width.map { .int(Int64($0)) }
            case .height: a.height.map { .int(Int64($0)) }
            case .size: a.size.map(JSONValue.int)
            case .checksum: string(a.checksum)
            case .durationMs: a.durationMs.map(JSONValue.int)
            case .thumbnail: string(a.thumbnail)
            case .fileName: string(a.fileName)
            case .mimeType: string(a.mimeType)
            default: nil
            }
        }
        switch content {
        case .text(let text):
            guard key == .text else { return nil }
            return .string(text.text)
        case .image(let image): return media(image.attachment)
        case .gif(let gif): return media(gif.attachment)
        case .voice(let voice): return media(voice.attachment)
        case .video(let video):
            switch key {
            case .coverURL: return string(video.cover?.remoteURL)
            case .coverWidth: return video.cover?.width.map { .int(Int64($0)) }
            case .coverHeight: return video.cover?.height.map { .int(Int64($0)) }
            case .coverSize: return video.cover?.size.map(JSONValue.int)
            default: return media(video.attachment)
            }
        case .file(let file):
            guard key == .name else { return media(file.attachment) }
            return .string(file.name)
        case .location(let location):
            switch key {
            case .latitude: return .double(location.latitude)
            case .longitude: return .double(location.longitude)
            case .title: return string(location.title)
            case .address: return string(location.address)
            case .thumbnail: return string(location.thumbnail)
            default: return nil
            }
        case .card(let card):
            switch key {
            case .userID: return .string(card.userID.rawValue)
            case .name: return .string(card.name)
            case .avatar: return string(card.avatar)
            case .phone: return string(card.phone)
            case .email: return string(card.email)
            default: return nil
            }
        case .command(let command):
            switch key {
            case .name: return .string(command.name)
            case .data:
                // (Not a `? :` with `nil`: JSONValue takes a nil literal as `.null`.)
                guard command.data != .null else { return nil }
                return command.data
            default: return nil
            }
        case .notice(let notice):
            switch key {
            case .text: return .string(notice.text)
            // A notice from elsewhere has no template: its text is the template (WuKong writes `content`).
            case .template: return .string(notice.template ?? notice.text)
            case .parameters:
                guard !notice.parameters.isEmpty else { return nil }
                return .array(notice.parameters)
            case .noticeType: return string(notice.noticeType)
            default: return nil
            }
        case .custom, .unsupported:
            return nil
        }
    }

    /// The target a content is encoded as.
    public static func target(of content: MessageContent) -> NeutralTarget {
        if case .custom(let custom) = content { return .custom(custom.typeName) }
        return .builtin(content.kind)
    }
}

/// A built-in kind's neutral field by number (every name `NeutralForm.vocabulary` has): a mapping
/// table compiles its rules' names to these once, so that a message's neutral fields need neither a
/// dictionary nor a hash of their names (docs/performance.md, "Codec round trips").
enum NeutralKey: Int, CaseIterable, Sendable {
    case text, url, width, height, size, checksum, durationMs, thumbnail, fileName, mimeType
    case coverURL, coverWidth, coverHeight, coverSize, name, latitude, longitude, title, address
    case userID, avatar, phone, email, data, template, parameters, noticeType

    /// The name mapping files use.
    var name: String {
        switch self {
        case .text: "text"
        case .url: "url"
        case .width: "width"
        case .height: "height"
        case .size: "size"
        case .checksum: "checksum"
        case .durationMs: "duration_ms"
        case .thumbnail: "thumbnail"
        case .fileName: "file_name"
        case .mimeType: "mime_type"
        case .coverURL: "cover_url"
        case .coverWidth: "cover_width"
        case .coverHeight: "cover_height"
        case .coverSize: "cover_size"
        case .name: "name"
        case .latitude: "latitude"
        case .longitude: "longitude"
        case .title: "title"
        case .address: "address"
        case .userID: "user_id"
        case .avatar: "avatar"
        case .phone: "phone"
        case .email: "email"
        case .data: "data"
        case .template: "template"
        case .parameters: "parameters"
        case .noticeType: "notice_type"
        }
    }

    private static let byName: [String: NeutralKey] = Dictionary(uniqueKeysWithValues: allCases.map { ($0.name, $0) })

    init?(name: String) {
        guard let key = Self.byName[name] else { return nil }
        self = key
    }
}

/// Neutral fields as `NeutralForm.content` reads them: a value per key, nil when absent.
protocol NeutralFields {
    subscript(key: NeutralKey) -> JSONValue? { get }
}

/// Neutral fields in a dictionary by name (`NeutralForm.fields(of:)`'s form).
struct NamedFields: NeutralFields {
    let fields: [String: JSONValue]
    subscript(key: NeutralKey) -> JSONValue? { fields[key.name] }
}
